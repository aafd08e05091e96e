import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import { platformEnvironment } from '../platforms/index.js';
import { Collections } from './collections.js';
import { insertPaymentRow, isPull, newPaymentRow, pulledFrom, type OutgoingPaymentInput } from './payment-rows.js';
import { ref, SharedPaymentSteps, type PaymentsDeps } from './payment-steps.js';
import { BOOK_TRANSFER, pullRailOf } from './rails.js';
import { RealtimeFunding } from './realtime-funding.js';
import { findTransaction, statusesByQuote, updateTransaction, type TransactionRow } from './repo.js';
import type { Transaction } from './schemas.js';
import type { TransactionStatus } from './status.js';
import { Settlement } from './settlement.js';
import { toTransaction } from './views.js';

export type TransactionView = Transaction;

/**
 * Money movement after a quote's execution, the module's public face: execution (the row,
 * payment-rows.ts; the hold), cancel and the receipt here; the steps every flow shares
 * (payment-steps.ts); pulls' collection (collections.ts); the hand-over to the rail and settlement
 * as durable jobs (settlement.ts); REALTIME_FUNDING's money in (realtime-funding.ts). Each ledger
 * transaction commits with the status change it causes (status.ts) and its webhook event.
 */
/** How far ahead of the platform's clock a confirmed receipt time may be: the platform's clock may run a little ahead of ours. */
const RECEIPT_CLOCK_SKEW_MS = 5 * 60_000;

export class Payments {
  private readonly steps: SharedPaymentSteps;
  private readonly settlement: Settlement;
  /** REALTIME_FUNDING payments' money in (realtime-funding.ts), on the shared steps. */
  private readonly funding: RealtimeFunding;

  constructor(private readonly deps: PaymentsDeps) {
    this.steps = new SharedPaymentSteps(deps);
    this.settlement = new Settlement(deps, this.steps, new Collections(deps, this.steps));
    this.funding = new RealtimeFunding(deps, this.steps, this.settlement);
  }

  /**
   * Executes a quote's payment, in the caller's transaction: records it (one per quote), holds
   * `totalSendingAmount` on an internal-account source (too little available: 400
   * AMOUNT_OUT_OF_RANGE, and the caller's transaction must roll back), records
   * OUTGOING_PAYMENT.PENDING and queues the hand-over to the rail. A REALTIME_FUNDING payment
   * waits for the platform's money (POST /sandbox/send) before anything is held; a pull from an
   * external account for the rail's collection before anything is credited. A production platform
   * without a rail provider (or with one that cannot pull, for a pull) is refused (501) before
   * anything is written: only a book transfer, internal account to internal account, needs none.
   */
  async startOutgoingPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView> {
    const environment = await platformEnvironment(trx, input.platformId);
    const pull = isPull(input);
    // A book transfer moves money already inside: from an internal account (or embedded wallet) to an internal account. A pull never is one.
    const book = !pull && input.source.sourceType === 'ACCOUNT' && input.destination.destinationType === 'ACCOUNT' && input.destination.paymentRail === BOOK_TRANSFER;
    const rails = this.steps.railsOf(environment);
    if (!book && !rails) {
      throw new AppError('NOT_IMPLEMENTED', 'No payment rail provider is configured for production payments (CORRIDOR_RAILS_URL); nothing was moved.');
    }
    if (pull && !rails?.collect) {
      throw new AppError('NOT_IMPLEMENTED', 'The configured payment rail provider cannot pull from external accounts (collect); nothing was moved.');
    }
    if (pull && !pullRailOf(input.sendingCurrency)) {
      throw invalidInput([{ field: 'source.accountId', message: `money cannot be pulled from an external account in ${input.sendingCurrency} (ACH debit for USD, SEPA Direct Debit for EUR)` }]);
    }
    const fresh = await newPaymentRow(trx, this.deps, input, 'PENDING', null);
    // From an account the hold comes first, so the row is written once, with it.
    if (input.source.sourceType === 'ACCOUNT') fresh.hold_id = await this.steps.hold(trx, fresh);
    const row = await insertPaymentRow(trx, input, fresh);
    if (row.hold_id) await this.settlement.queueSubmit(trx, row, { requestedAs: input.requestedAs, pull });
    else if (input.fundingDeadline) await this.funding.awaitFunds(trx, row, input.fundingDeadline);
    await this.steps.emit(trx, row, ['OUTGOING_PAYMENT.PENDING']);
    return toTransaction(row);
  }

  /** Execution of an expired quote: the transaction is recorded EXPIRED (QUOTE_EXPIRED) and nothing moves. */
  async recordExpiredPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView> {
    const row = await insertPaymentRow(trx, input, await newPaymentRow(trx, this.deps, input, 'EXPIRED', 'QUOTE_EXPIRED'));
    await this.steps.emit(trx, row, ['OUTGOING_PAYMENT.EXPIRED']);
    return toTransaction(row);
  }

  /** Statuses of the transactions of some quotes (`Quote:<uuid>` → status); quotes without one are absent. */
  async transactionStatusesByQuote(db: DbOrTx, platformId: string, quoteIds: string[]): Promise<Map<string, TransactionStatus>> {
    const uuids = quoteIds.map((id) => parseId('Quote', id)).filter((u): u is string => Boolean(u));
    const rows = await statusesByQuote(db, platformId, uuids);
    return new Map(rows.map((r) => [formatId('Quote', r.quote_id!), r.status]));
  }

  /** The transaction a caller names; another platform's or unknown: 404 TRANSACTION_NOT_FOUND. */
  async load(db: DbOrTx, platformId: string, transactionId: string, options: { forUpdate?: boolean } = {}): Promise<TransactionRow> {
    const uuid = parseId('Transaction', transactionId);
    const row = uuid ? await findTransaction(db, platformId, uuid, options) : undefined;
    if (!row) throw new AppError('TRANSACTION_NOT_FOUND', `Transaction ${transactionId} was not found.`);
    return row;
  }

  /**
   * POST /transactions/{id}/cancel: possible while the payment waits (PENDING, PENDING_AUTHORIZATION),
   * before it was handed to the rail; the hold is released and money paid in is returned. Past
   * that point: 409 TRANSACTION_NOT_CANCELLABLE. A production REALTIME_FUNDING payment whose money
   * was not yet known keeps its funding job: money the provider reports for it until the deadline
   * is sent back then (realtime-funding.ts, `returnArrived`).
   */
  async cancel(trx: Tx, platformId: string, transactionId: string): Promise<TransactionView> {
    const row = await this.load(trx, platformId, transactionId, { forUpdate: true });
    // Money coming in is not the platform's to call back (a pull still collecting, a deposit): whatever its status.
    if (row.type !== 'OUTGOING') {
      throw new AppError('TRANSACTION_NOT_CANCELLABLE', `Transaction ${transactionId} is an incoming payment: only outgoing payments are cancelled.`, {
        details: { status: row.status },
      });
    }
    if (row.status !== 'PENDING' && row.status !== 'PENDING_AUTHORIZATION') {
      throw new AppError('TRANSACTION_NOT_CANCELLABLE', `Transaction ${transactionId} is ${row.status} and can no longer be cancelled.`, {
        details: { status: row.status },
      });
    }
    // A production pull goes to the rail provider right after execution, and the contract has no call to stop a collection.
    if (row.environment === 'production' && pulledFrom(row)) {
      throw new AppError('TRANSACTION_NOT_CANCELLABLE', `Transaction ${transactionId} pulls from an external account: the rail provider is collecting it, and a collection cannot be called back.`, {
        details: { status: row.status },
      });
    }
    const moved = Boolean(row.hold_id || row.funding_id);
    await this.steps.refundDebit(trx, row);
    const refund = moved ? await this.steps.refundOf(trx, row, ref(row.id, 'cancel'), 'USER_CANCELLATION') : undefined;
    const cancelled = await this.steps.transition(trx, row, 'FAILED', { failure_reason: 'QUOTE_EXECUTION_FAILED', ...refund?.changes });
    await this.steps.emit(trx, cancelled, refund ? ['OUTGOING_PAYMENT.FAILED', refund.event] : ['OUTGOING_PAYMENT.FAILED']);
    await this.steps.unspent(trx, cancelled);
    return toTransaction(cancelled);
  }

  /**
   * POST /transactions/{id}/confirm: the platform delivered the receipt, at `confirmedAt` (default
   * now). As upstream, a repeat records its time in place of the earlier one: a platform that
   * sent the receipt again, or first confirmed with the wrong time, corrects the record. A time
   * before the transaction existed, or ahead of the platform's clock by more than a clock's skew,
   * is a mistake (400), not a record.
   */
  async confirmReceipt(trx: Tx, platformId: string, transactionId: string, confirmedAt: Date | undefined): Promise<TransactionView> {
    const row = await this.load(trx, platformId, transactionId, { forUpdate: true });
    const now = await this.deps.platformClock.now(platformId, trx);
    if (confirmedAt && (confirmedAt < row.created_at || confirmedAt.getTime() > now.getTime() + RECEIPT_CLOCK_SKEW_MS)) {
      throw invalidInput([
        { field: 'receiptDeliveryConfirmedAt', message: `must lie between the transaction's creation (${row.created_at.toISOString()}) and now (${now.toISOString()})` },
      ]);
    }
    const at = confirmedAt ?? now;
    const updated = await updateTransaction(trx, platformId, row.id, row.status, { receipt_delivery_confirmed_at: at }, this.deps.clock.now());
    return toTransaction(updated!);
  }

  /**
   * POST /sandbox/send: the platform pays a REALTIME_FUNDING quote's instructions before the
   * payment's funding deadline (realtime-funding.ts).
   */
  fundFromSandbox(trx: Tx, platformId: string, quoteId: string, currencyCode: string, amount: bigint | undefined): Promise<TransactionView> {
    return this.funding.fromSandbox(trx, platformId, quoteId, currencyCode, amount);
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Money movement after execution: for the quotes wiring, embedders and tests. */
    payments: Payments;
  }
}
