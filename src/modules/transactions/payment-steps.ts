import type { Logger } from 'pino';
import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { enqueueJob, type JobWorker } from '../../platform/jobs/index.js';
import { MAX_WIRE_AMOUNT } from '../../platform/money.js';
import { recordEvents, type DomainEvent } from '../../platform/outbox.js';
import { findLedgerTransaction, LedgerError, type Ledger, type LedgerAccountRef, type Posting } from '../ledger/index.js';
import type { RailProvider } from './rail-provider.js';
import { BOOK_TRANSFER, FUNDING_RAIL } from './rails.js';
import { updateTransaction, type TransactionChanges, type TransactionRecord, type TransactionRow } from './repo.js';
import { INCOMING_PAYMENT_EVENTS, type OutgoingFailureReason } from './schemas.js';
import { assertTransition, type TransactionStatus } from './status.js';
import { toTransaction } from './views.js';

/**
 * The steps every flow of a payment takes (execution, pull, settlement, cancel, REALTIME_FUNDING):
 * the hold and its reversal in the ledger, the status machine (status.ts), the webhook events and
 * the refund's record. One status machine and one set of ledger references for all of them.
 */

export interface PaymentsDeps {
  db: Db;
  clock: Clock;
  platformClock: PlatformClock;
  ledger: Ledger;
  jobs: JobWorker;
  logger: Logger;
  /** Simulated rails for sandbox platforms; the configured provider (if any) for production ones. */
  rails: { sandbox: RailProvider; production?: RailProvider };
  /**
   * Runs in the payment's database transaction when it ends before any money left the sender
   * (expired unpaid, cancelled while PENDING, paid in with the wrong amount): app.ts gives the
   * quote's daily volume back (modules/quotes README).
   */
  endedUnspent?: (trx: DbOrTx, platformId: string, quoteUuid: string) => Promise<void>;
}

/** How soon a provider that still answers PENDING (a payout, a collection) is first asked again. */
const PROVIDER_POLL_MS = 60_000;
/** Asks a minute apart (the job's attempts), about the first hour; then each wait doubles. */
const PROVIDER_POLLS_EACH_MINUTE = 60;
const PROVIDER_POLL_MAX_MS = 3_600_000;

/**
 * How long after its `attempts`-th run a job whose provider still answers PENDING waits before
 * asking again: a minute for the first hour, then twice as long each time, at most an hour. A
 * job has SETTLE_MAX_ATTEMPTS runs: asked every minute, a collection the bank takes days over
 * (an ACH debit across a weekend) ran out of them after 1,000 minutes and its job ended dead,
 * the payment PENDING and its hold open with nothing asking again; so they last about 40 days.
 */
export function providerPollMs(attempts: number): number {
  const doublings = Math.min(Math.max(0, attempts - PROVIDER_POLLS_EACH_MINUTE), 10);
  return Math.min(PROVIDER_POLL_MAX_MS, PROVIDER_POLL_MS * 2 ** doublings);
}

/** The ledger reference of a payment's step (`transaction:<uuid>:<step>`): unique, so a repeated step is a no-op. */
export const ref = (uuid: string, step: string) => `transaction:${uuid}:${step}`;

/** Why money is returned: the payment failed (a wrong amount), was cancelled, or the money came at or after the deadline. */
export type RefundReason = 'TRANSACTION_FAILED' | 'USER_CANCELLATION' | 'TIMEOUT';

/** Tells the rail provider to send a production deposit back to the payer (run by realtime-funding.ts). */
export const RETURN_DEPOSIT_JOB = 'payments.return-deposit';
/** A deposit return is retried with backoff (capped at an hour) for about two days, then REFUND_FAILED. */
const RETURN_MAX_ATTEMPTS = 48;

export class SharedPaymentSteps {
  constructor(private readonly deps: PaymentsDeps) {}

  railsOf(environment: 'sandbox' | 'production'): RailProvider | undefined {
    return environment === 'sandbox' ? this.deps.rails.sandbox : this.deps.rails.production;
  }

  /** Postings of a payment's hold: the sender's total to the payout (through FX across currencies) and to the fee accounts. */
  private postings(row: TransactionRow | TransactionRecord, from: LedgerAccountRef): Posting[] {
    const send = row.sending_currency;
    const receive = row.receiving_currency;
    const rail = row.payment_rail!;
    // A book transfer pays the destination internal account itself; every other route its settlement account.
    const payee: (currency: string) => LedgerAccountRef = (currency) =>
      rail === BOOK_TRANSFER ? { kind: 'INTERNAL_ACCOUNT', id: row.destination_account_id! } : { kind: 'SETTLEMENT', rail, currency };
    const sent = BigInt(row.sent_amount);
    const received = BigInt(row.received_amount);
    const postings: Posting[] = [];
    if (send === receive) {
      if (sent !== received) throw new Error(`same-currency payment ${row.id} sends ${sent} but receives ${received}`);
      postings.push({ from, to: payee(send), amount: sent, currency: send });
    } else {
      // Each currency balances on its own: the sender pays the FX position in one, the FX position pays the rail in the other.
      postings.push({ from, to: { kind: 'FX', currency: send }, amount: sent, currency: send });
      postings.push({ from: { kind: 'FX', currency: receive }, to: payee(receive), amount: received, currency: receive });
    }
    const fees = BigInt(row.fees);
    const platformFees = BigInt(row.platform_fees);
    if (fees > 0n) postings.push({ from, to: { kind: 'SERVICE_FEES', currency: send }, amount: fees, currency: send });
    if (platformFees > 0n) postings.push({ from, to: { kind: 'PLATFORM_FEES', currency: send }, amount: platformFees, currency: send });
    return postings;
  }

  private sourceAccount(row: TransactionRow | TransactionRecord): LedgerAccountRef {
    if (row.source_account_id) return { kind: 'INTERNAL_ACCOUNT', id: row.source_account_id };
    const source = row.source as { sourceType: string };
    // A pull from the customer's external account, or money the platform paid in (REALTIME_FUNDING).
    return { kind: 'SETTLEMENT', rail: source.sourceType === 'REALTIME_FUNDING' ? FUNDING_RAIL : 'PULL', currency: row.sending_currency };
  }

  /** Places the hold; an internal account without the available balance is refused (and the caller's transaction aborted). */
  async hold(trx: DbOrTx, row: TransactionRow | TransactionRecord): Promise<string> {
    try {
      const held = await this.deps.ledger.hold(trx, {
        platformId: row.platform_id,
        reference: ref(row.id, 'hold'),
        postings: this.postings(row, this.sourceAccount(row)),
        metadata: { transactionId: formatId('Transaction', row.id) },
      });
      return held.id;
    } catch (error) {
      if (error instanceof LedgerError && error.reason === 'INSUFFICIENT_FUNDS') {
        const source = row.source as { accountId?: string };
        throw new AppError('AMOUNT_OUT_OF_RANGE', `The available balance of ${source.accountId ?? 'the source account'} is less than the total sending amount.`, {
          details: { reason: 'INSUFFICIENT_BALANCE', accountId: source.accountId, totalSendingAmount: Number(row.total_sending_amount) },
        });
      }
      // A credit to an internal account counts as pending in its total balance at once; past
      // 2^53 − 1 minor units (what an account holds and the API carries exactly) it is refused as
      // sandbox funding refuses it. Without an account subject it is a system account's lifetime
      // sums (2^63), not the caller's to fix.
      if (error instanceof LedgerError && error.reason === 'BALANCE_LIMIT' && row.destination_account_id && error.subject === row.destination_account_id) {
        const accountId = formatId('InternalAccount', row.destination_account_id);
        throw new AppError('AMOUNT_OUT_OF_RANGE', `The credit of ${row.received_amount} would take ${accountId} past the ${MAX_WIRE_AMOUNT} minor units an account can hold.`, {
          details: { reason: 'BALANCE_LIMIT', accountId, totalReceivingAmount: Number(row.received_amount) },
        });
      }
      throw error;
    }
  }

  /** Records the change's OUTGOING_PAYMENT.* events; an incoming payment's are their INCOMING_PAYMENT.* twins, where upstream has one. */
  async emit(trx: DbOrTx, row: TransactionRow, types: string[]): Promise<void> {
    const view = toTransaction(row);
    const names = row.type === 'INCOMING' ? types.map((t) => t.replace('OUTGOING_PAYMENT.', 'INCOMING_PAYMENT.')).filter((t) => Object.hasOwn(INCOMING_PAYMENT_EVENTS.types, t)) : types;
    const events: DomainEvent[] = names.map((type) => ({ platformId: row.platform_id, type, resourceId: view.id, data: view }));
    await recordEvents(trx, this.deps.clock, events);
  }

  /** The payment ended before any money left the sender (PaymentsDeps.endedUnspent). */
  async unspent(trx: DbOrTx, row: TransactionRow): Promise<void> {
    if (row.quote_id && this.deps.endedUnspent) await this.deps.endedUnspent(trx, row.platform_id, row.quote_id);
  }

  /** Moves a locked row through the status machine, conditional on the status it was read in. */
  async transition(trx: DbOrTx, row: TransactionRow, to: TransactionStatus, changes: TransactionChanges = {}): Promise<TransactionRow> {
    assertTransition(row.type, row.status, to);
    const updated = await updateTransaction(trx, row.platform_id, row.id, row.status, { ...changes, status: to }, this.deps.clock.now());
    if (!updated) throw new Error(`transaction ${row.id} left ${row.status} while locked`);
    return updated;
  }

  /** Returns money that left the sender: the posted hold reversed, and money the platform paid in sent back. */
  async refundDebit(trx: Tx, row: TransactionRow): Promise<void> {
    const posted = await findLedgerTransaction(trx, row.platform_id, { reference: ref(row.id, 'post') });
    if (posted) await this.deps.ledger.reverse(trx, { platformId: row.platform_id, transactionId: posted.id, reference: ref(row.id, 'refund') });
    else if (row.hold_id) await this.deps.ledger.voidHold(trx, { platformId: row.platform_id, holdId: row.hold_id, reference: ref(row.id, 'void') });
    if (row.funding_id) await this.returnFunds(trx, row, row.funding_id);
  }

  /** Reverses money the platform paid in (REALTIME_FUNDING); a production deposit is also sent back to the payer by the provider (a durable job). */
  async returnFunds(trx: DbOrTx, row: TransactionRow, fundingId: string): Promise<void> {
    await this.deps.ledger.reverse(trx, { platformId: row.platform_id, transactionId: fundingId, reference: ref(row.id, 'funding-return') });
    if (row.environment === 'production') {
      await enqueueJob(trx, this.deps.clock, { kind: RETURN_DEPOSIT_JOB, platformId: row.platform_id, payload: { transactionId: row.id }, maxAttempts: RETURN_MAX_ATTEMPTS });
    }
  }

  /**
   * The payment FAILED with `reason`, the money that left the sender on its way back (already
   * returned by the caller; `refundReference` names the return), its events written: in the
   * caller's transaction, on the locked row.
   */
  async failRefunded(trx: DbOrTx, row: TransactionRow, reason: OutgoingFailureReason, refundReference: string): Promise<TransactionRow> {
    const refund = await this.refundOf(trx, row, refundReference, 'TRANSACTION_FAILED');
    const failed = await this.transition(trx, row, 'FAILED', { failure_reason: reason, ...refund.changes });
    await this.emit(trx, failed, ['OUTGOING_PAYMENT.FAILED', refund.event]);
    return failed;
  }

  /**
   * The refund of money that left the sender, as the transaction records it. The ledger returns it
   * at once, so it is COMPLETED, except a production deposit: that money is back with the payer only
   * when the provider has sent it (`payments.return-deposit`), so it stays PENDING until then.
   */
  async refundOf(
    trx: DbOrTx,
    row: TransactionRow,
    reference: string,
    reason: RefundReason,
  ): Promise<{ changes: TransactionChanges; event: 'OUTGOING_PAYMENT.REFUND_PENDING' | 'OUTGOING_PAYMENT.REFUND_COMPLETED' }> {
    const at = await this.deps.platformClock.now(row.platform_id, trx);
    const viaProvider = row.environment === 'production' && row.funding_id !== null;
    return {
      changes: { refund_reference: reference, refund_status: viaProvider ? 'PENDING' : 'COMPLETED', refund_reason: reason, refund_initiated_at: at, refund_settled_at: viaProvider ? null : at },
      event: viaProvider ? 'OUTGOING_PAYMENT.REFUND_PENDING' : 'OUTGOING_PAYMENT.REFUND_COMPLETED',
    };
  }
}
