import { withTx } from '../../platform/db/tx.js';
import { formatId } from '../../platform/ids.js';
import { RetryJobAt, type JobCheckpoint } from '../../platform/jobs/index.js';
import { collectionSeconds, pulledFrom } from './payment-rows.js';
import { providerPollMs, type PaymentsDeps, type SharedPaymentSteps } from './payment-steps.js';
import type { Pull } from './rail-provider.js';
import { pullRailOf, settlementSecondsOf, type RailName } from './rails.js';
import { findTransaction, type TransactionRow } from './repo.js';

/**
 * Pulls (POST /transfer-in, or a quote whose source is an external account): before anything is
 * credited, the payment's submit job has the rail collect the money from the external account.
 * Collected, the job posts the hold as for any payment (settlement.ts); refused, the payment
 * fails with nothing credited.
 */

/** The part of the submit job's payload that is the collection's (settlement.ts SubmitPayload). */
export interface CollectionProgress {
  /** The rail ACCEPTED the pull: what is left is to ask how it stands (`collectionStatus`). */
  collecting?: true;
}

export class Collections {
  constructor(
    private readonly deps: PaymentsDeps,
    private readonly steps: SharedPaymentSteps,
  ) {}

  /** What the rail is asked to collect: the payment's totalSendingAmount from `accountId`, on the currency's debit rail. */
  private pull(row: TransactionRow, accountId: string): Pull {
    // startOutgoingPayment refuses a pull in a currency without a debit rail: none is written.
    const rail = pullRailOf(row.sending_currency);
    if (!rail) throw new Error(`payment ${row.id} pulls ${row.sending_currency}, which no debit rail carries`);
    return {
      transactionId: formatId('Transaction', row.id),
      platformId: row.platform_id,
      accountId,
      rail,
      currency: row.sending_currency,
      amount: BigInt(row.total_sending_amount),
      reference: row.reconciliation_reference,
    };
  }

  /**
   * The collection of a pull from an external account, before anything is credited: true once the
   * money is in. Otherwise the payment has failed (`failPull`: nothing credited, the hold voided)
   * and the answer is false, or the job is to run again (RetryJobAt) to ask later. `payload` is the
   * submit job's, recorded again with `collecting` once the rail accepted the pull.
   *
   * The rail's answer to the hand-over (`collect`, idempotent by transaction id): COLLECTED (the
   * sandbox's simulated pulls), FAILED — on the platform's clock `afterSeconds` after the
   * execution —, or ACCEPTED (the production provider). An accepted pull is asked about
   * (`collectionStatus`) once the debit rail's time has passed (`collectionDue`), then every
   * `providerPollMs` while PENDING (by the job's `attempts`); the `collecting` checkpoint means it
   * is never handed over twice.
   */
  async collected(row: TransactionRow, payload: CollectionProgress, checkpoint: JobCheckpoint, attempts: number): Promise<boolean> {
    const platformId = row.platform_id;
    const accountId = pulledFrom(row)!;
    const rails = this.steps.railsOf(row.environment);
    // Refused at execution (startOutgoingPayment); a provider removed since leaves the job to retry, crediting nothing.
    if (!rails?.collect) throw new Error(`no rail provider that pulls for the ${row.environment} payment ${row.id}`);
    const pull = this.pull(row, accountId);
    if (!payload.collecting) {
      const outcome = await rails.collect(pull);
      if (outcome.status === 'COLLECTED') return true;
      if (outcome.status === 'FAILED') {
        const failAt = new Date(this.executedAt(row).getTime() + outcome.afterSeconds * 1000);
        const platformNow = await this.deps.platformClock.now(platformId);
        if (platformNow < failAt) throw new RetryJobAt(failAt, 'the bank has not answered the pull yet', { platformTime: true });
        await this.failPull(platformId, row.id);
        return false;
      }
      const progress: CollectionProgress = { ...payload, collecting: true };
      const due = this.collectionDue(row);
      const platformNow = await this.deps.platformClock.now(platformId);
      // The checkpoint rides on the retry: one conditional UPDATE records both.
      if (platformNow < due) throw new RetryJobAt(due, 'the rail is collecting', { payload: progress, platformTime: true });
      await checkpoint(this.deps.db, progress);
    }
    if (!rails.collectionStatus) throw new Error(`the ${row.environment} rail provider accepted the pull of ${row.id} but cannot tell how it stands`);
    const status = await rails.collectionStatus(pull);
    if (status.status === 'PENDING') throw new RetryJobAt(new Date(this.deps.clock.now().getTime() + providerPollMs(attempts)), 'the rail has not collected yet');
    if (status.status === 'FAILED') {
      await this.failPull(platformId, row.id);
      return false;
    }
    return true;
  }

  /** The platform's time a pull was executed: its expected settlement time less the collection's and the route's (newPaymentRow). */
  private executedAt(row: TransactionRow): Date {
    const expected = row.expected_settlement_at ?? row.created_at;
    const seconds = collectionSeconds(row.environment, true, row.sending_currency) + settlementSecondsOf(row.payment_rail as RailName);
    return new Date(expected.getTime() - seconds * 1000);
  }

  /** When an accepted pull's collection is expected to be over: the execution plus the debit rail's settlement time. */
  private collectionDue(row: TransactionRow): Date {
    return new Date(this.executedAt(row).getTime() + collectionSeconds(row.environment, true, row.sending_currency) * 1000);
  }

  /**
   * A refused pull (transfer-in): FAILED before anything was credited, the hold voided, nothing to
   * refund. An incoming transaction's reason is COLLECTION_FAILED, the collection that did not
   * credit (IncomingTransactionFailureReason).
   */
  private async failPull(platformId: string, transactionId: string): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!row || row.status !== 'PENDING') return;
      await this.steps.refundDebit(trx, row);
      const failed = await this.steps.transition(trx, row, 'FAILED', { failure_reason: row.type === 'INCOMING' ? 'COLLECTION_FAILED' : 'QUOTE_EXECUTION_FAILED' });
      await this.steps.emit(trx, failed, ['OUTGOING_PAYMENT.FAILED']);
      await this.steps.unspent(trx, failed);
    });
  }
}
