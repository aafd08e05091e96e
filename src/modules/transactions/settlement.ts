import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { formatId } from '../../platform/ids.js';
import { enqueueJob, RetryJobAt, type Job, type JobCheckpoint } from '../../platform/jobs/index.js';
import { externalOwnerDeleted } from '../external-accounts/index.js';
import type { Collections, CollectionProgress } from './collections.js';
import { providerPollMs, ref, type PaymentsDeps, type SharedPaymentSteps } from './payment-steps.js';
import type { Payout } from './rail-provider.js';
import { BOOK_TRANSFER } from './rails.js';
import { findTransaction, updateTransaction, type TransactionRow } from './repo.js';
import type { OutgoingFailureReason } from './schemas.js';

/**
 * A held payment's way to its end, as durable jobs: the submit job posts the hold (the point of no
 * return; a pull's waits for the collection first, collections.ts) and hands itself on as the
 * settlement job, which hands the payout to the rail, waits for its settlement time, and completes
 * the payment or fails it with the debit refunded. A restart resumes them, and the conditional
 * status update and the ledger's unique references make a repeated step a no-op.
 */

export const SUBMIT_JOB = 'payments.submit';
/** The submit job's payload; `requestedAs` rides along to the settlement job (Payout.requestedAs). */
interface SubmitPayload extends CollectionProgress {
  transactionId: string;
  requestedAs?: 'TRANSFER';
  /** Money pulled from an external account: the rail collects it (or refuses) before anything is credited. */
  pull?: true;
  /** REALTIME_FUNDING: the settlement time counted from the money's arrival, shown from the hand-over on (ISO). */
  settlesAt?: string;
}
/** The settlement job's progress: whether the payout was handed to the rail. */
interface SettlePayload extends SubmitPayload {
  submitted: boolean;
  /**
   * The payment's expected settlement time is the rail's estimate (`settlesAt`): shown, but the
   * rail is still asked at the usual poll, not trusted to keep it.
   */
  estimated?: true;
}
export const SETTLE_JOB = 'payments.settle';
/**
 * A settlement job waits (RetryJobAt) for its due time and for a slow provider: it must not run
 * out of attempts doing so. A pull's submit job waits for the collection the same way, and has as many.
 */
const SETTLE_MAX_ATTEMPTS = 1_000;

export class Settlement {
  constructor(
    private readonly deps: PaymentsDeps,
    private readonly steps: SharedPaymentSteps,
    private readonly collections: Collections,
  ) {
    deps.jobs.register(SUBMIT_JOB, (job, checkpoint) => this.onSubmit(job, checkpoint));
    deps.jobs.register(SETTLE_JOB, (job, checkpoint) => this.onSettle(job, checkpoint));
  }

  /** Queues the hand-over of a held payment to its rail; a pull's first waits for the collection. */
  async queueSubmit(trx: DbOrTx, row: TransactionRow, options: { requestedAs?: 'TRANSFER'; pull?: boolean; settlesAt?: Date } = {}): Promise<void> {
    const { requestedAs, pull, settlesAt } = options;
    const payload: SubmitPayload = {
      transactionId: row.id,
      ...(requestedAs ? { requestedAs } : {}),
      ...(pull ? { pull: true } : {}),
      ...(settlesAt ? { settlesAt: settlesAt.toISOString() } : {}),
    };
    // A pull's submit job waits for the collection (a day on a debit rail): the settlement job's attempts.
    await enqueueJob(trx, this.deps.clock, { kind: SUBMIT_JOB, platformId: row.platform_id, payload, ...(pull ? { maxAttempts: SETTLE_MAX_ATTEMPTS } : {}) });
  }

  /**
   * The point of no return: the hold is posted (the sender is debited; a pull's destination
   * credited, once the rail collected the money) and the payment is PROCESSING. In the same
   * transaction the job is handed on as the payment's settlement job (`payments.settle`,
   * SETTLE_MAX_ATTEMPTS), which it then runs at once with the row it holds: one job row, one
   * claim and no re-read per payment instead of a second job. Runs once: a repeat finds the
   * transaction no longer PENDING (a committed hand-over is a settlement job).
   */
  private async onSubmit(job: Job, checkpoint: JobCheckpoint): Promise<void> {
    const payload = job.payload as SubmitPayload;
    const { transactionId, requestedAs, pull, settlesAt } = payload;
    const settlement: SettlePayload = { transactionId, ...(requestedAs ? { requestedAs } : {}), submitted: false };
    if (pull) {
      // Only a pull is read first: every other payment goes straight to its hand-over.
      const pending = await findTransaction(this.deps.db, job.platform_id!, transactionId);
      if (!pending || pending.status !== 'PENDING' || !(await this.collections.collected(pending, payload, checkpoint, job.attempts))) return;
    }
    const processing = await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, job.platform_id!, transactionId, { forUpdate: true });
      if (!row || row.status !== 'PENDING' || !row.hold_id) return undefined;
      if (await this.payeeDeleted(trx, row)) {
        await this.failUnpaid(trx, row, 'ACCOUNT_CANNOT_RECEIVE');
        return undefined;
      }
      await this.deps.ledger.postHold(trx, { platformId: row.platform_id, holdId: row.hold_id, reference: ref(row.id, 'post') });
      // A REALTIME_FUNDING payment's settlement time, counted from its money's arrival, shows from here, with the event.
      const processing = await this.steps.transition(trx, row, 'PROCESSING', settlesAt ? { expected_settlement_at: new Date(settlesAt) } : {});
      await checkpoint(trx, settlement, { kind: SETTLE_JOB, maxAttempts: SETTLE_MAX_ATTEMPTS });
      await this.steps.emit(trx, processing, ['OUTGOING_PAYMENT.PROCESSING']);
      return processing;
    });
    // Handed on: the settlement job's first run.
    if (processing) await this.settle(processing, settlement, checkpoint, 1);
  }

  /**
   * Hands the payout to the rail (idempotent by transaction id), waits until the platform's
   * clock reaches the expected settlement time, and asks the rail how it ended: COMPLETED, or
   * FAILED with the debit refunded.
   */
  private async onSettle(job: Job, checkpoint: JobCheckpoint): Promise<void> {
    const payload = job.payload as SettlePayload;
    const row = await findTransaction(this.deps.db, job.platform_id!, payload.transactionId);
    if (row) await this.settle(row, payload, checkpoint, job.attempts);
  }

  /** The settlement job's work on the payment as last read (`row`), in the job's `attempts`-th run. */
  private async settle(row: TransactionRow, payload: SettlePayload, checkpoint: JobCheckpoint, attempts: number): Promise<void> {
    const platformId = row.platform_id;
    if (row.status !== 'PROCESSING') return;
    // To an internal account the payment was complete when its hold was posted: no rail to ask.
    // (A pull's hold is posted only once the rail collected the money: `collected`.)
    if (row.payment_rail === BOOK_TRANSFER) return this.complete(platformId, row.id);
    const rails = this.steps.railsOf(row.environment);
    if (!rails) throw new Error(`no rail provider for the ${row.environment} payment ${row.id}`);
    const payout = this.payout(row, payload.requestedAs);
    let handedToRail = false;
    let due = row.expected_settlement_at;
    let estimated = payload.estimated === true;
    if (!payload.submitted) {
      const submitted = await rails.submit(payout);
      if (submitted.status === 'REJECTED') return this.fail(platformId, row.id, submitted.failureReason);
      handedToRail = true;
      if (submitted.settlesInSeconds !== undefined) {
        // The rail named its own settlement time: the payment shows it, and the job waits for it.
        due = new Date((await this.deps.platformClock.now(platformId)).getTime() + submitted.settlesInSeconds * 1000);
        await updateTransaction(this.deps.db, platformId, row.id, 'PROCESSING', { expected_settlement_at: due }, this.deps.clock.now());
      } else if (submitted.settlesAt !== undefined) {
        // The rail's estimate (a UMA receiver's node): the payment shows it; the job does not wait for it alone (below).
        due = submitted.settlesAt;
        estimated = true;
        await updateTransaction(this.deps.db, platformId, row.id, 'PROCESSING', { expected_settlement_at: due }, this.deps.clock.now());
      }
    }
    const progress: SettlePayload = { ...payload, submitted: true, ...(estimated ? { estimated: true as const } : {}) };
    const platformNow = await this.deps.platformClock.now(platformId);
    due ??= platformNow;
    // An estimate is not waited out: after the hand-over the job comes back within the usual poll,
    // and on later runs asks the rail at once.
    if (platformNow < due && (!estimated || handedToRail)) {
      const waitMs = due.getTime() - platformNow.getTime();
      // The checkpoint rides on the retry: one conditional UPDATE records both. Its time is the
      // platform's: a test clock advanced since it was read still counts (RetryJobAt).
      throw new RetryJobAt(new Date(platformNow.getTime() + (estimated ? Math.min(waitMs, providerPollMs(attempts)) : waitMs)), 'settles later', {
        platformTime: true,
        ...(handedToRail ? { payload: progress } : {}),
      });
    }
    // One conditional UPDATE on its own: nothing else commits with it, so no BEGIN/COMMIT around it.
    if (handedToRail) await checkpoint(this.deps.db, progress);
    const status = await rails.status(payout);
    if (status.status === 'PENDING') {
      const pollMs = providerPollMs(attempts);
      const settlesAt = status.settlesAt;
      if (settlesAt === undefined || settlesAt <= platformNow) throw new RetryJobAt(new Date(platformNow.getTime() + pollMs), 'the rail has not settled yet', { platformTime: true });
      // The rail's new estimate: shown (the time the payment showed has passed), and asked again
      // by then, or sooner at the usual poll, since a counterparty's estimate is not a promise.
      if (settlesAt.getTime() !== due.getTime()) await updateTransaction(this.deps.db, platformId, row.id, 'PROCESSING', { expected_settlement_at: settlesAt }, this.deps.clock.now());
      const waitMs = Math.min(settlesAt.getTime() - platformNow.getTime(), pollMs);
      throw new RetryJobAt(new Date(platformNow.getTime() + waitMs), 'the rail settles later', { payload: { ...progress, estimated: true }, platformTime: true });
    }
    if (status.status === 'FAILED') return this.fail(platformId, row.id, status.failureReason);
    return this.complete(platformId, row.id);
  }

  private async complete(platformId: string, transactionId: string): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      const locked = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!locked || locked.status !== 'PROCESSING') return;
      const completed = await this.steps.transition(trx, locked, 'COMPLETED', { settled_at: await this.deps.platformClock.now(platformId, trx) });
      await this.steps.emit(trx, completed, ['OUTGOING_PAYMENT.COMPLETED']);
    });
  }

  /**
   * Whether the platform's own payout goes to an external account whose customer was deleted
   * after the execution: that DELETE waited for the execution's owner read (FOR SHARE) and then
   * found no money of the customer's in flight, since the money is the platform's. Read FOR SHARE
   * here too, so a DELETE running now waits for the hand-over or is seen by it. A payment a
   * customer sent goes to its own accounts or the platform's, and its sender's DELETE is refused
   * while it is in flight (PAYMENT_IN_FLIGHT): nothing to read.
   */
  private async payeeDeleted(trx: Tx, row: TransactionRow): Promise<boolean> {
    return row.customer_id === null && row.destination_account_id !== null && (await externalOwnerDeleted(trx, row.platform_id, row.destination_account_id));
  }

  /** A held payment that will not be handed over (locked, PENDING): FAILED, its hold released and refunded, in the caller's transaction. */
  private async failUnpaid(trx: Tx, row: TransactionRow, reason: OutgoingFailureReason): Promise<void> {
    await this.steps.refundDebit(trx, row);
    await this.steps.unspent(trx, await this.steps.failRefunded(trx, row, reason, ref(row.id, 'refund')));
  }

  /** A payment in PROCESSING that the rail refused or returned: FAILED, its debit refunded, in one transaction. */
  private async fail(platformId: string, transactionId: string, reason: OutgoingFailureReason): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!row || row.status !== 'PROCESSING') return;
      await this.steps.refundDebit(trx, row);
      await this.steps.failRefunded(trx, row, reason, ref(row.id, 'refund'));
    });
  }

  private payout(row: TransactionRow, requestedAs: SubmitPayload['requestedAs']): Payout {
    return {
      transactionId: formatId('Transaction', row.id),
      platformId: row.platform_id,
      rail: row.payment_rail!,
      currency: row.receiving_currency,
      amount: BigInt(row.received_amount),
      sentAmount: BigInt(row.sent_amount),
      sendingCurrency: row.sending_currency,
      destination: row.destination,
      reference: row.reconciliation_reference,
      ...(row.remittance_information ? { remittanceInformation: row.remittance_information } : {}),
      ...(requestedAs ? { requestedAs } : {}),
    };
  }
}
