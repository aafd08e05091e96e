import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import { enqueueJob, RetryJobAt, type Job } from '../../platform/jobs/index.js';
import { externalOwnerDeleted } from '../external-accounts/index.js';
import { creditableAccount, findInternalAccount } from '../internal-accounts/index.js';
import type { LedgerAccountRef } from '../ledger/index.js';
import { ref, RETURN_DEPOSIT_JOB, type PaymentsDeps, type SharedPaymentSteps } from './payment-steps.js';
import type { ExpectedDeposit } from './rail-provider.js';
import { COLLECTION_RAIL, FUNDING_RAIL, settlementSecondsOf, type RailName } from './rails.js';
import { findTransaction, findTransactionByQuote, updateTransaction, type TransactionRow } from './repo.js';
import type { Transaction } from './schemas.js';
import type { Settlement } from './settlement.js';
import { toTransaction } from './views.js';

/**
 * REALTIME_FUNDING payments: the platform pays a quote's instructions in before its deadline (in
 * sandbox through POST /sandbox/send; in production the rail provider reports the deposit). The
 * money arrives on SETTLEMENT(REALTIME_FUNDING); the expected amount funds the payment, which is
 * then held and handed to its rail like an account payment (settlement.ts), any other amount goes
 * straight back. Unfunded at the deadline, the payment EXPIRES. A production deposit sent back is
 * returned through the provider by a durable job; so is production money received at or after the
 * deadline, or for a payment cancelled before its money was known.
 */

/** A REALTIME_FUNDING payment's wait for its money: asks the provider (production), expires it at the quote's deadline. */
export const FUNDING_JOB = 'payments.await-funding';
/** How often a production provider is asked whether a REALTIME_FUNDING deposit arrived. */
const DEPOSIT_POLL_MS = 10_000;
/** The wait for funds retries (RetryJobAt) until the deadline, like a settlement: it must not run out of attempts doing so. */
const FUNDING_MAX_ATTEMPTS = 1_000;

/**
 * A production REALTIME_FUNDING payment cancelled before its money was known (FAILED by
 * `Payments.cancel`, nothing paid in recorded): money the provider still reports for it, until the
 * deadline, is recorded and returned (`returnArrived`). Cancel is the only way such a payment
 * fails without `funding_id`: a wrong amount is recorded first, and a failure after the
 * hand-over has been funded.
 */
function cancelledUnpaid(row: TransactionRow): boolean {
  return row.environment === 'production' && row.status === 'FAILED' && row.funding_id === null && row.refund_status === null && (row.source as { sourceType?: string }).sourceType === 'REALTIME_FUNDING';
}

export class RealtimeFunding {
  constructor(
    private readonly deps: PaymentsDeps,
    /** The status machine, hold, events and refund record every payment shares (payment-steps.ts). */
    private readonly steps: SharedPaymentSteps,
    /** Where a funded payment goes on, as an account payment does. */
    private readonly settlement: Settlement,
  ) {
    deps.jobs.register(FUNDING_JOB, (job) => this.onAwaitFunding(job));
    deps.jobs.register(RETURN_DEPOSIT_JOB, (job) => this.onReturnDeposit(job));
  }

  /**
   * POST /sandbox/send: the platform pays a REALTIME_FUNDING quote's instructions before the
   * payment's funding deadline (the quote's expiresAt, the platform's clock). The money arrives
   * from the sandbox's outside world (SANDBOX_FUNDING); `fund` does the rest.
   */
  async fromSandbox(trx: Tx, platformId: string, quoteId: string, currencyCode: string, amount: bigint | undefined): Promise<Transaction> {
    const quoteUuid = parseId('Quote', quoteId);
    const row = quoteUuid ? await findTransactionByQuote(trx, platformId, quoteUuid, { forUpdate: true }) : undefined;
    if (!row) throw new AppError('QUOTE_NOT_FOUND', `No payment of quote ${quoteId} waits for funds.`);
    const source = row.source as { sourceType: string };
    if (source.sourceType !== 'REALTIME_FUNDING') throw new AppError('CONFLICT', `Quote ${quoteId} is not funded in real time: its source is ${source.sourceType}.`);
    // Past the deadline the payment is as good as EXPIRED, before the expiry job has recorded it
    // and after: the same answer either way.
    const deadline = row.funding_deadline;
    const expired = row.status === 'EXPIRED' || (row.status === 'PENDING' && !row.funding_id && deadline && (await this.deps.platformClock.now(platformId, trx)) >= deadline);
    if (expired) {
      throw new AppError('CONFLICT', `Quote ${quoteId} expired${deadline ? ` at ${deadline.toISOString()}` : ''}: its payment takes no more funds.`, {
        details: { reason: 'QUOTE_EXPIRED', quoteId, transactionId: formatId('Transaction', row.id) },
      });
    }
    if (row.status !== 'PENDING' || row.funding_id) throw new AppError('CONFLICT', `The payment of quote ${quoteId} is ${row.status} and takes no more funds.`);
    if (currencyCode !== row.sending_currency) {
      throw invalidInput([{ field: 'currencyCode', message: `the quote is paid in ${row.sending_currency}` }]);
    }
    return toTransaction(await this.fund(trx, row, { kind: 'SANDBOX_FUNDING', currency: currencyCode }, amount ?? BigInt(row.total_sending_amount)));
  }

  /**
   * Money paid in for a REALTIME_FUNDING payment (locked PENDING row, not yet funded) arrives
   * from `origin` on `SETTLEMENT(REALTIME_FUNDING)`. The expected amount funds the payment (held
   * and handed to the rail like an account payment); any other amount fails it
   * FUNDING_AMOUNT_MISMATCH and goes straight back. So does the money for an account whose owner
   * was deleted while the payment waited (ACCOUNT_CANNOT_RECEIVE): an internal account's, who can
   * send nothing on and whose DELETE saw no hold towards it, or a customer's external account,
   * which nothing pays once its customer is gone (the owner is read FOR SHARE here, so a DELETE
   * running now either waits for this payment or is seen by it).
   */
  private async fund(trx: Tx, row: TransactionRow, origin: LedgerAccountRef, paid: bigint): Promise<TransactionRow> {
    const { platform_id: platformId } = row;
    const refusal = paid !== BigInt(row.total_sending_amount) ? 'FUNDING_AMOUNT_MISMATCH' : (await this.destinationTakesNothing(trx, row)) ? 'ACCOUNT_CANNOT_RECEIVE' : undefined;
    const funded = await this.arrive(trx, row, origin, paid);
    if (refusal) {
      await this.steps.returnFunds(trx, funded, funded.funding_id!);
      const failed = await this.steps.failRefunded(trx, funded, refusal, ref(row.id, 'funding-return'));
      await this.steps.unspent(trx, failed);
      return failed;
    }
    const holdId = await this.steps.hold(trx, funded);
    // The rail's time runs from the money's arrival, not from the execution that waited for it.
    // The payment shows it from the hand-over on, with OUTGOING_PAYMENT.PROCESSING: the arrival
    // changes nothing GET shows (the hold is not shown), so it sends no event and keeps `updatedAt`.
    const arrived = await this.deps.platformClock.now(platformId, trx);
    const settlesAt = new Date(arrived.getTime() + settlementSecondsOf(row.payment_rail as RailName) * 1000);
    const held = (await updateTransaction(trx, platformId, row.id, 'PENDING', { hold_id: holdId }, funded.updated_at))!;
    await this.settlement.queueSubmit(trx, held, { settlesAt });
    return held;
  }

  /** Whether the payment goes to an account (internal, or a customer's external one) whose owner has been deleted since it was quoted. */
  private async destinationTakesNothing(trx: Tx, row: TransactionRow): Promise<boolean> {
    if (!row.destination_account_id) return false;
    const account = await findInternalAccount(trx, row.platform_id, formatId('InternalAccount', row.destination_account_id));
    if (account) return !(await creditableAccount(trx, row.platform_id, account));
    return externalOwnerDeleted(trx, row.platform_id, row.destination_account_id);
  }

  /**
   * Records money paid in for the payment (locked, `funding_id` not yet set): from `origin` onto
   * `SETTLEMENT(REALTIME_FUNDING)` (`:funding`), its id and amount kept on the row.
   */
  private async arrive(trx: Tx, row: TransactionRow, origin: LedgerAccountRef, paid: bigint): Promise<TransactionRow> {
    const currency = row.sending_currency;
    const arrival = await this.deps.ledger.transfer(trx, {
      platformId: row.platform_id,
      reference: ref(row.id, 'funding'),
      postings: [{ from: origin, to: { kind: 'SETTLEMENT', rail: FUNDING_RAIL, currency }, amount: paid, currency }],
      metadata: { transactionId: formatId('Transaction', row.id) },
    });
    // Not shown by the API: `updatedAt` stays, as it moves only with what GET shows (each such change with its event).
    return (await updateTransaction(trx, row.platform_id, row.id, row.status, { funding_id: arrival.id, funded_amount: paid }, row.updated_at))!;
  }

  /**
   * Production money the payment (locked, `funding_id` not set) can no longer use: it arrived at or
   * after the deadline (the payment, still PENDING, ends EXPIRED with QUOTE_EXPIRED; refund reason
   * TIMEOUT), or for a payment cancelled meanwhile (it stays FAILED; refund reason
   * USER_CANCELLATION). The money is recorded as paid in and reversed at once, as for a wrong
   * amount — nothing is held or credited — and the provider is told to send it back
   * (`payments.return-deposit`): refund PENDING until it has. `funding_id` set under the row lock
   * makes it happen once, whoever asks again.
   */
  private async returnArrived(trx: Tx, row: TransactionRow, origin: LedgerAccountRef, paid: bigint): Promise<void> {
    const late = row.status === 'PENDING';
    const funded = await this.arrive(trx, row, origin, paid);
    await this.steps.returnFunds(trx, funded, funded.funding_id!);
    const refund = await this.steps.refundOf(trx, funded, ref(row.id, 'funding-return'), late ? 'TIMEOUT' : 'USER_CANCELLATION');
    if (late) {
      const expired = await this.steps.transition(trx, funded, 'EXPIRED', { failure_reason: 'QUOTE_EXPIRED', ...refund.changes });
      await this.steps.emit(trx, expired, ['OUTGOING_PAYMENT.EXPIRED', refund.event]);
      await this.steps.unspent(trx, expired);
      return;
    }
    // Cancelled: its status and daily volume were settled by the cancel; only the refund is new.
    const refunded = (await updateTransaction(trx, row.platform_id, row.id, funded.status, refund.changes, this.deps.clock.now()))!;
    await this.steps.emit(trx, refunded, [refund.event]);
  }

  /**
   * Queues the wait for a REALTIME_FUNDING payment's money, due at once on production (the
   * provider is asked every DEPOSIT_POLL_MS) and at the deadline on sandbox (its money comes
   * through POST /sandbox/send). Run times are real time; the test clock moves them.
   */
  async awaitFunds(trx: DbOrTx, row: TransactionRow, deadline: Date): Promise<void> {
    const now = this.deps.clock.now();
    const platformNow = await this.deps.platformClock.now(row.platform_id, trx);
    const untilDeadline = Math.max(0, deadline.getTime() - platformNow.getTime());
    await enqueueJob(trx, this.deps.clock, {
      kind: FUNDING_JOB,
      platformId: row.platform_id,
      payload: { transactionId: row.id, deadline: deadline.toISOString() },
      runAt: new Date(now.getTime() + (row.environment === 'production' ? 0 : untilDeadline)),
      maxAttempts: FUNDING_MAX_ATTEMPTS,
    });
  }

  private expectedDeposit(row: TransactionRow): ExpectedDeposit {
    const instructions = (row.payment_instructions ?? []) as Array<{ accountOrWalletInfo?: Record<string, unknown> }>;
    const info = instructions[0]?.accountOrWalletInfo ?? {};
    const reference = [info.reference, info.address, info.invoice].find((v): v is string => typeof v === 'string') ?? null;
    return {
      transactionId: formatId('Transaction', row.id),
      platformId: row.platform_id,
      quoteId: formatId('Quote', row.quote_id!),
      currency: row.sending_currency,
      amount: BigInt(row.total_sending_amount),
      reference,
      paymentInstructions: row.payment_instructions,
      expiresAt: (row.funding_deadline ?? row.created_at).toISOString(),
    };
  }

  /**
   * A REALTIME_FUNDING payment waiting for its money: on production, the provider is asked
   * whether the deposit arrived, and when. Received before the deadline: funded (or failed on a
   * wrong amount), even when the answer comes later; received at or after it: EXPIRED and sent
   * back. A payment cancelled before its money was known is asked about all the same until the
   * deadline (the last ask at or after it): money that reached the provider for it is sent back.
   * Past the quote's deadline (the platform's clock) an unfunded payment ends EXPIRED
   * (QUOTE_EXPIRED). An unreachable or off-contract provider throws: the job retries, and the
   * payment does not expire before the provider has answered for the deadline.
   */
  private async onAwaitFunding(job: Job): Promise<void> {
    const { transactionId, deadline: due } = job.payload as { transactionId: string; deadline: string };
    const platformId = job.platform_id!;
    const row = await findTransaction(this.deps.db, platformId, transactionId);
    if (!row || row.funding_id || (row.status !== 'PENDING' && !cancelledUnpaid(row))) return;
    const deadline = row.funding_deadline ?? new Date(due);
    const production = row.environment === 'production';
    const rails = production ? this.steps.railsOf('production') : undefined;
    if (rails) {
      const deposit = await rails.deposit(this.expectedDeposit(row));
      if (deposit.status === 'RECEIVED') {
        await withTx(this.deps.db, async (trx) => {
          const locked = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
          if (!locked || locked.funding_id) return;
          const origin: LedgerAccountRef = { kind: 'SETTLEMENT', rail: COLLECTION_RAIL, currency: locked.sending_currency };
          // Cancelled meanwhile (even between the provider's answer and this lock), or too late: back to the payer.
          if (cancelledUnpaid(locked) || (locked.status === 'PENDING' && deposit.receivedAt >= deadline)) await this.returnArrived(trx, locked, origin, deposit.amount);
          else if (locked.status === 'PENDING') await this.fund(trx, locked, origin, deposit.amount);
        });
        return;
      }
    } else if (row.status !== 'PENDING') return;
    const platformNow = await this.deps.platformClock.now(platformId);
    const left = deadline.getTime() - platformNow.getTime();
    if (left > 0) {
      throw new RetryJobAt(new Date(platformNow.getTime() + (rails ? Math.min(left, DEPOSIT_POLL_MS) : left)), 'waiting for the platform’s money', { platformTime: true });
    }
    // Asked for the deadline and nothing came: a cancelled payment has nothing left to return.
    if (row.status !== 'PENDING') return;
    await withTx(this.deps.db, async (trx) => {
      const locked = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!locked || locked.status !== 'PENDING' || locked.funding_id) return;
      const expired = await this.steps.transition(trx, locked, 'EXPIRED', { failure_reason: 'QUOTE_EXPIRED' });
      await this.steps.emit(trx, expired, ['OUTGOING_PAYMENT.EXPIRED']);
      await this.steps.unspent(trx, expired);
    });
  }

  /**
   * Sends a returned production deposit back through the provider, retried with backoff; its
   * answer settles the refund (REFUND_COMPLETED). When the last attempt fails too, the refund is
   * FAILED (REFUND_FAILED): the money sits on the rail's settlement account for the operator.
   */
  private async onReturnDeposit(job: Job): Promise<void> {
    const { transactionId } = job.payload as { transactionId: string };
    const row = await findTransaction(this.deps.db, job.platform_id!, transactionId);
    if (!row || row.funded_amount === null || row.refund_status !== 'PENDING') return;
    try {
      const rails = this.steps.railsOf('production');
      if (!rails) throw new Error(`no rail provider to return the deposit of ${row.id}`);
      await rails.returnDeposit(this.expectedDeposit(row), BigInt(row.funded_amount));
    } catch (error) {
      if (job.attempts < job.max_attempts) throw error;
      this.deps.logger.error({ transactionId: formatId('Transaction', row.id), err: error }, 'deposit return failed for good');
      await this.settleRefund(row, 'FAILED');
      return;
    }
    await this.settleRefund(row, 'COMPLETED');
  }

  private async settleRefund(row: TransactionRow, outcome: 'COMPLETED' | 'FAILED'): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      const locked = await findTransaction(trx, row.platform_id, row.id, { forUpdate: true });
      if (!locked || locked.refund_status !== 'PENDING') return;
      const at = await this.deps.platformClock.now(row.platform_id, trx);
      const settled = (await updateTransaction(trx, row.platform_id, row.id, locked.status, { refund_status: outcome, refund_settled_at: at }, this.deps.clock.now()))!;
      await this.steps.emit(trx, settled, [outcome === 'COMPLETED' ? 'OUTGOING_PAYMENT.REFUND_COMPLETED' : 'OUTGOING_PAYMENT.REFUND_FAILED']);
    });
  }
}
