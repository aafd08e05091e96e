import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { claimKey, storeAnswer, type IdempotencyScope } from '../../platform/idempotency.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob, type Job, type JobWorker } from '../../platform/jobs/index.js';
import { recordEvents } from '../../platform/outbox.js';
import { customerTypeOf } from '../customers/index.js';
import { findCustomerAccountIn } from '../internal-accounts/index.js';
import { findLedgerTransaction, LedgerError, type Ledger } from '../ledger/index.js';
import { platformEnvironment } from '../platforms/index.js';
import type { DecidedApproval, IncomingPaymentApprovals, RequestedField } from '../webhooks/index.js';
import { UMA_RAIL } from './rails.js';
import { findTransaction, insertTransaction, reconciliationReferenceOf, updateTransaction, type TransactionChanges, type TransactionRow } from './repo.js';
import type { IncomingTransaction } from './schemas.js';
import { assertTransition, type TransactionStatus } from './status.js';
import { toTransaction } from './views.js';

export const INCOMING_APPROVAL_CONSUMER = 'incoming-payments';
export const INCOMING_REFUND_JOB = 'payments.refund-incoming';

type IncomingFailureReason = NonNullable<IncomingTransaction['failureReason']>;

/** A payment arriving for a customer (UMA: a pay request, or the sandbox's simulated sender). */
export interface IncomingPaymentInput {
  platformId: string;
  /** `Customer:<uuid>` */
  customerId: string;
  senderUmaAddress: string;
  receiverUmaAddress: string;
  currency: string;
  amount: bigint;
  /** What the payer told about itself (UMA payer data), shown as `counterpartyInformation`. */
  counterpartyInformation?: Record<string, unknown>;
  /** Whether the money has already arrived (the sandbox's sender), or arrives later (UMA: once the invoice is paid). */
  arrived: boolean;
}

export interface IncomingPaymentsDeps {
  db: Db;
  clock: Clock;
  platformClock: PlatformClock;
  ledger: Ledger;
  jobs: JobWorker;
  approvals: IncomingPaymentApprovals;
}

/**
 * Where the payment opened under a request's key is recorded: a key of its own, beside the
 * request's, which the request's gives up when it fails; the space keeps it apart from every key
 * a client can send (visible ASCII only).
 */
const openedUnder = (sentAs: IdempotencyScope): IdempotencyScope => ({ ...sentAs, key: `incoming payment opened under ${sentAs.key}` });

const ref = (uuid: string, step: string) => `transaction:${uuid}:${step}`;

/** Where the money of an incoming payment comes from in the ledger: the Lightning leg's settlement account. */
const arrivalAccount = (currency: string) => ({ kind: 'SETTLEMENT' as const, rail: UMA_RAIL, currency });

/**
 * Incoming payments (UPSTREAM §5.4, type INCOMING): opened PENDING when a payment announces
 * itself, decided by the platform through the webhooks' approval round trip, credited to the
 * receiver's internal account through the ledger when approved and its money has arrived
 * (`funded_amount`), and refundable once COMPLETED. Every status change records its
 * INCOMING_PAYMENT.* event in the same database transaction as the change and its ledger move.
 */
export class IncomingPayments {
  constructor(private readonly deps: IncomingPaymentsDeps) {
    deps.approvals.registerConsumer(INCOMING_APPROVAL_CONSUMER, (trx, decided) => this.applyDecision(trx, decided));
    deps.jobs.register(INCOMING_REFUND_JOB, (job) => this.onRefund(job));
  }

  private async emit(trx: DbOrTx, row: TransactionRow, types: string[]): Promise<void> {
    const view = toTransaction(row);
    await recordEvents(
      trx,
      this.deps.clock,
      types.map((type) => ({ platformId: row.platform_id, type, resourceId: view.id, data: view })),
    );
  }

  private async transition(trx: DbOrTx, row: TransactionRow, to: TransactionStatus, changes: TransactionChanges = {}): Promise<TransactionRow> {
    assertTransition('INCOMING', row.status, to);
    const updated = await updateTransaction(trx, row.platform_id, row.id, row.status, { ...changes, status: to }, this.deps.clock.now());
    if (!updated) throw new Error(`transaction ${row.id} left ${row.status} while locked`);
    return updated;
  }

  /**
   * Records the payment PENDING for its receiver, in the caller's transaction. The receiver
   * must have an ACTIVE account in the currency (else 400 INVALID_CURRENCY): refusing now is
   * cheaper than returning money later.
   */
  async open(trx: Tx, input: IncomingPaymentInput): Promise<TransactionRow> {
    const customer = await customerTypeOf(trx, input.platformId, input.customerId);
    const account = await findCustomerAccountIn(trx, input.platformId, customer.uuid, input.currency);
    if (!account) {
      throw new AppError('INVALID_CURRENCY', `${input.customerId} has no active ${input.currency} account to receive into.`, {
        details: { currency: input.currency, customerId: input.customerId },
      });
    }
    const now = this.deps.clock.now();
    const id = uuidv7(now.getTime());
    assertTransition('INCOMING', null, 'PENDING');
    const row = await insertTransaction(trx, {
      platform_id: input.platformId,
      id,
      quote_id: null,
      type: 'INCOMING',
      status: 'PENDING',
      failure_reason: null,
      environment: await platformEnvironment(trx, input.platformId),
      customer_id: customer.uuid,
      platform_customer_id: customer.platformCustomerId,
      source: { sourceType: 'UMA_ADDRESS', umaAddress: input.senderUmaAddress, currency: input.currency },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: input.receiverUmaAddress, currency: input.currency },
      source_account_id: null,
      destination_account_id: account.uuid,
      // The receiver's view: what arrives, in its currency (the payer's own currency stays with the payer).
      sending_currency: input.currency,
      receiving_currency: input.currency,
      sent_amount: input.amount,
      total_sending_amount: input.amount,
      received_amount: input.amount,
      fees: 0n,
      platform_fees: 0n,
      exchange_rate: '1',
      rate_details: input.counterpartyInformation ? { counterpartyInformation: input.counterpartyInformation } : null,
      description: null,
      remittance_information: null,
      purpose_of_payment: null,
      payment_instructions: null,
      payment_rail: UMA_RAIL,
      reconciliation_reference: reconciliationReferenceOf(id),
      funded_amount: input.arrived ? input.amount : null,
      created_at: now,
      updated_at: now,
    });
    return row;
  }

  /**
   * Asks the platform (INCOMING_PAYMENT.PENDING, synchronously) and resolves with the decision,
   * applied by `applyDecision` in the deciding transaction: an approved payment whose money has
   * arrived is credited then; one that waits for its money stays PENDING until `arrive`.
   */
  async askPlatform(row: TransactionRow, requested: RequestedField[] = []): Promise<DecidedApproval> {
    return this.deps.approvals.request({
      platformId: row.platform_id,
      transactionId: formatId('Transaction', row.id),
      consumer: INCOMING_APPROVAL_CONSUMER,
      type: 'INCOMING_PAYMENT.PENDING',
      data: { ...toTransaction(row), ...(requested.length ? { requestedReceiverCustomerInfoFields: requested } : {}) },
    });
  }

  /** Whether the payment is still PENDING: an approval leaves it so unless its receiver could no longer take it. */
  async isPending(platformId: string, transactionUuid: string): Promise<boolean> {
    return (await findTransaction(this.deps.db, platformId, transactionUuid))?.status === 'PENDING';
  }

  /**
   * The whole round for money that has already arrived (the sandbox's sender): open, ask, credit
   * or fail. With `sentAs` (the request's Idempotency-Key) the payment is opened once per key: the
   * payment it opened is recorded under the key in the transaction that opens it, so a retry
   * after a failure anywhere later (the decision's transaction, the answer's, the process) finds
   * that payment — answered as it stands once decided, asked about if it never was, 409
   * (retryable) while its question is open — instead of opening and crediting a second one.
   */
  async receive(input: Omit<IncomingPaymentInput, 'arrived'>, requested: RequestedField[] = [], sentAs?: IdempotencyScope): Promise<TransactionRow> {
    const { row, next } = await withTx(this.deps.db, async (trx): Promise<{ row: TransactionRow; next: 'ask' | 'answer' | 'wait' }> => {
      if (!sentAs) return { row: await this.open(trx, { ...input, arrived: true }), next: 'ask' };
      const scope = openedUnder(sentAs);
      const claim = await claimKey(trx, this.deps.clock, scope).catch((error: unknown) => {
        // The key opened a payment for another request (its answer was never stored): the key's own conflict.
        if (error instanceof AppError && error.code === 'CONFLICT') throw new AppError('CONFLICT', error.message, { details: { idempotencyKey: sentAs.key } });
        throw error;
      });
      if (claim.claimed) {
        const opened = await this.open(trx, { ...input, arrived: true });
        await storeAnswer(trx, scope, claim, { statusCode: 201, body: { transactionId: opened.id } });
        return { row: opened, next: 'ask' };
      }
      const { transactionId } = claim.stored.body as { transactionId: string };
      const found = (await findTransaction(trx, input.platformId, transactionId))!;
      if (found.status !== 'PENDING') return { row: found, next: 'answer' };
      // A decision moves a payment whose money has arrived out of PENDING in the deciding
      // transaction: one still PENDING has its question open (decided by the platform, or at its
      // deadline by the job), or was never asked about (the question was not recorded).
      const open = await this.deps.approvals.pendingApproval(trx, input.platformId, formatId('Transaction', found.id));
      return { row: found, next: open ? 'wait' : 'ask' };
    });
    if (next === 'answer') return row;
    if (next === 'wait') {
      throw new AppError('CONFLICT', `The payment opened with this Idempotency-Key (${formatId('Transaction', row.id)}) is waiting for the platform's decision.`, {
        details: { idempotencyKey: sentAs!.key, transactionId: formatId('Transaction', row.id) },
        retryable: true,
      });
    }
    await this.askPlatform(row, requested);
    return (await findTransaction(this.deps.db, row.platform_id, row.id))!;
  }

  /**
   * The approval hook (runs once per question, in the deciding transaction). Approved: credited
   * if the money is there; rejected: REJECTED (COMPLIANCE_REJECTED); more information asked for:
   * FAILED (PAY_REQUEST_FAILED: the payer must send again with it); no answer in time or an
   * unusable one: FAILED with PAYMENT_APPROVAL_TIMED_OUT / PAYMENT_APPROVAL_WEBHOOK_ERROR.
   */
  private async applyDecision(trx: Tx, decided: DecidedApproval): Promise<void> {
    const uuid = parseId('Transaction', decided.transactionId);
    const row = uuid ? await findTransaction(trx, decided.platformId, uuid, { forUpdate: true }) : undefined;
    if (!row || row.type !== 'INCOMING' || row.status !== 'PENDING') return;
    const decision = decided.decision;
    if (decision.status === 'APPROVED') {
      // The platform may delete the receiver, or close its account, while it decides (after a
      // 202): approved then, the payment has nobody to credit and fails as the Lightning leg's does.
      if (!(await this.receiverCanTake(trx, row))) {
        await this.failLocked(trx, row, 'OFFRAMP_FAILED');
        return;
      }
      if (row.funded_amount !== null) await this.credit(trx, row);
      return;
    }
    if (decision.status === 'REJECTED') {
      const rejected = await this.transition(trx, row, 'REJECTED', { failure_reason: 'COMPLIANCE_REJECTED' });
      await this.emit(trx, rejected, ['INCOMING_PAYMENT.FAILED']);
      return;
    }
    const reason: IncomingFailureReason =
      decision.status === 'INFO_REQUIRED' ? 'PAY_REQUEST_FAILED' : decision.status === 'TIMED_OUT' ? 'PAYMENT_APPROVAL_TIMED_OUT' : 'PAYMENT_APPROVAL_WEBHOOK_ERROR';
    await this.failLocked(trx, row, reason);
  }

  /**
   * Whether the payment's receiver is still a live customer, and the account the payment was
   * opened for still its ACTIVE one in the currency. The customer's row stays locked until the
   * decision commits, so a deletion waits for the credit (and then finds money on the account).
   */
  private async receiverCanTake(trx: Tx, row: TransactionRow): Promise<boolean> {
    try {
      await customerTypeOf(trx, row.platform_id, formatId('Customer', row.customer_id!), { forUpdate: true });
    } catch (error) {
      if (error instanceof AppError) return false;
      throw error;
    }
    const account = await findCustomerAccountIn(trx, row.platform_id, row.customer_id!, row.receiving_currency);
    return account !== undefined && account.uuid === row.destination_account_id;
  }

  private async failLocked(trx: Tx, row: TransactionRow, reason: IncomingFailureReason): Promise<TransactionRow> {
    const failed = await this.transition(trx, row, 'FAILED', { failure_reason: reason });
    await this.emit(trx, failed, ['INCOMING_PAYMENT.FAILED']);
    return failed;
  }

  /** Fails a PENDING incoming payment (e.g. its invoice expired unpaid); a no-op once it has moved on. */
  async fail(trx: Tx, platformId: string, transactionUuid: string, reason: IncomingFailureReason): Promise<void> {
    const row = await findTransaction(trx, platformId, transactionUuid, { forUpdate: true });
    if (row && row.type === 'INCOMING' && row.status === 'PENDING') await this.failLocked(trx, row, reason);
  }

  /** The credit: the arrived amount from the Lightning leg's settlement account to the receiver's account, COMPLETED. */
  private async credit(trx: Tx, row: TransactionRow): Promise<TransactionRow> {
    const amount = BigInt(row.received_amount);
    const applied = await this.deps.ledger.transfer(trx, {
      platformId: row.platform_id,
      reference: ref(row.id, 'credit'),
      postings: [{ from: arrivalAccount(row.receiving_currency), to: { kind: 'INTERNAL_ACCOUNT', id: row.destination_account_id! }, amount, currency: row.receiving_currency }],
      metadata: { transactionId: formatId('Transaction', row.id) },
    });
    const completed = await this.transition(trx, row, 'COMPLETED', {
      funding_id: applied.id,
      settled_at: await this.deps.platformClock.now(row.platform_id, trx),
    });
    await this.emit(trx, completed, ['INCOMING_PAYMENT.COMPLETED']);
    return completed;
  }

  /**
   * The money of an approved payment arrived (UMA: its invoice was paid): credited, in the
   * caller's transaction. False when the payment is no longer PENDING (already credited, or
   * failed meanwhile): the caller must not release the proof of payment then.
   */
  async arrive(trx: Tx, platformId: string, transactionUuid: string): Promise<boolean> {
    const row = await findTransaction(trx, platformId, transactionUuid, { forUpdate: true });
    if (!row || row.type !== 'INCOMING' || row.status !== 'PENDING') return false;
    const funded = (await updateTransaction(trx, platformId, row.id, 'PENDING', { funded_amount: BigInt(row.received_amount) }, this.deps.clock.now()))!;
    await this.credit(trx, funded);
    return true;
  }

  /**
   * The ledger transaction that credited a COMPLETED incoming payment: `funding_id` (UMA, deposits
   * to funding instructions), or for a transfer-in — a pull, whose credit is its posted hold — the
   * `:post` transaction. Undefined when there is none to reverse.
   */
  private async creditOf(db: DbOrTx, row: TransactionRow): Promise<string | undefined> {
    if (row.funding_id) return row.funding_id;
    if (!row.hold_id) return undefined;
    return (await findLedgerTransaction(db, row.platform_id, { reference: ref(row.id, 'post') }))?.id;
  }

  /**
   * Starts returning a COMPLETED incoming payment to its sender: refund PENDING
   * (INCOMING_PAYMENT.REFUND_PENDING) now, and a job that reverses the credit — REFUNDED with
   * REFUND_COMPLETED, or, when the receiver's available balance no longer covers it, the
   * payment stays COMPLETED with REFUND_FAILED. A transfer-in's credit (the pull's posted hold)
   * is reversed the same way: the money goes back to the external account it was pulled from.
   * 409 CONFLICT for any other payment, and for one with no credit to reverse.
   */
  async startRefund(trx: Tx, platformId: string, transactionId: string): Promise<IncomingTransaction> {
    const uuid = parseId('Transaction', transactionId);
    const row = uuid ? await findTransaction(trx, platformId, uuid, { forUpdate: true }) : undefined;
    if (!row) throw new AppError('TRANSACTION_NOT_FOUND', `Transaction ${transactionId} was not found.`);
    if (row.type !== 'INCOMING' || row.status !== 'COMPLETED' || (row.refund_status !== null && row.refund_status !== 'FAILED')) {
      throw new AppError('CONFLICT', `Transaction ${transactionId} is not a completed incoming payment without a refund under way.`, {
        details: { type: row.type, status: row.status, refundStatus: row.refund_status },
      });
    }
    if (!(await this.creditOf(trx, row))) {
      throw new AppError('CONFLICT', `Transaction ${transactionId} has no credit in the ledger to reverse.`, { details: { type: row.type, status: row.status } });
    }
    const at = await this.deps.platformClock.now(platformId, trx);
    const pending = (await updateTransaction(
      trx,
      platformId,
      row.id,
      'COMPLETED',
      { refund_reference: ref(row.id, 'refund'), refund_status: 'PENDING', refund_reason: 'TRANSACTION_FAILED', refund_initiated_at: at, refund_settled_at: null },
      this.deps.clock.now(),
    ))!;
    await enqueueJob(trx, this.deps.clock, { kind: INCOMING_REFUND_JOB, platformId, payload: { transactionId: row.id } });
    await this.emit(trx, pending, ['INCOMING_PAYMENT.REFUND_PENDING']);
    return toTransaction(pending) as IncomingTransaction;
  }

  private async onRefund(job: Job): Promise<void> {
    const { transactionId } = job.payload as { transactionId: string };
    const platformId = job.platform_id!;
    const reversed = await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!row || row.status !== 'COMPLETED' || row.refund_status !== 'PENDING') return true;
      // startRefund found it: a refund under way always has a credit to reverse.
      const credit = await this.creditOf(trx, row);
      if (!credit) throw new Error(`incoming payment ${row.id} has a refund under way and no credit to reverse`);
      try {
        await this.deps.ledger.reverse(trx, { platformId, transactionId: credit, reference: ref(row.id, 'refund') });
      } catch (error) {
        if (error instanceof LedgerError && error.reason === 'INSUFFICIENT_FUNDS') return false;
        throw error;
      }
      const at = await this.deps.platformClock.now(platformId, trx);
      const refunded = await this.transition(trx, row, 'REFUNDED', { refund_status: 'COMPLETED', refund_settled_at: at });
      await this.emit(trx, refunded, ['INCOMING_PAYMENT.REFUND_COMPLETED']);
      return true;
    });
    if (reversed) return;
    // The receiver spent the money: nothing moves, and the refund is recorded as failed.
    await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!row || row.status !== 'COMPLETED' || row.refund_status !== 'PENDING') return;
      const failed = (await updateTransaction(trx, platformId, row.id, 'COMPLETED', { refund_status: 'FAILED' }, this.deps.clock.now()))!;
      await this.emit(trx, failed, ['INCOMING_PAYMENT.REFUND_FAILED']);
    });
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Incoming payments: for the UMA wiring, embedders and tests. */
    incomingPayments: IncomingPayments;
  }
}
