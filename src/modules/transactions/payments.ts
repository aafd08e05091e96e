import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import { enqueueJob, RetryJobAt, type Job, type JobCheckpoint } from '../../platform/jobs.js';
import { recordEvents, type DomainEvent } from '../../platform/outbox.js';
import { customerTypeOf } from '../customers/index.js';
import type { DestinationNetwork, PaymentRail } from '../external-accounts/index.js';
import { findLedgerTransaction, LedgerError, type LedgerAccountRef, type Posting } from '../ledger/index.js';
import { platformEnvironment } from '../platforms/index.js';
import type { Payout, Pull, RailProvider } from './rail-provider.js';
import { BOOK_TRANSFER, FUNDING_RAIL, isPaymentRail, isRoute, pullRailOf, railCarries, settlementSecondsOf, UMA_RAIL, type RailName } from './rails.js';
import {
  findTransaction,
  insertTransaction,
  statusesByQuote,
  updateTransaction,
  reconciliationReferenceOf,
  type TransactionRecord,
  type TransactionChanges,
  type TransactionRow,
} from './repo.js';
import { INCOMING_PAYMENT_EVENTS, type OutgoingFailureReason, type Transaction } from './schemas.js';
import { assertTransition, type TransactionStatus } from './status.js';
import { RealtimeFunding, type FundingDeps, type RefundReason } from './realtime-funding.js';
import { toTransaction } from './views.js';

/** What a quote's execution hands over (MONEY-CONTRACT.md). Ids are the API's `<Type>:<uuid>`, platformId a uuid. */
export interface OutgoingPaymentInput {
  transactionId: string;
  platformId: string;
  /** The sending customer; absent on the platform's own transfers (a platform account, or REALTIME_FUNDING without customerId). */
  customerId?: string;
  /** That customer as the caller has just read it in this transaction (so it is not read twice); read here when absent. */
  sender?: { uuid: string; platformCustomerId: string };
  quoteId: string;
  source: { sourceType: 'ACCOUNT'; accountId: string } | { sourceType: 'REALTIME_FUNDING'; currency: string; cryptoNetwork?: string };
  /**
   * `paymentRail`: the route the quote priced — a PaymentRail for bank accounts, the network
   * (SOLANA, LIGHTNING, …) for a crypto wallet, BOOK for another internal account.
   */
  destination: { destinationType: 'ACCOUNT'; accountId: string; paymentRail: PaymentRail | DestinationNetwork | 'BOOK' } | { destinationType: 'UMA_ADDRESS'; umaAddress: string };
  sendingCurrency: string;
  receivingCurrency: string;
  sentAmount: bigint;
  totalSendingAmount: bigint;
  receivedAmount: bigint;
  fees: bigint;
  platformFees: bigint;
  exchangeRate: string;
  rateDetails?: Record<string, unknown>;
  description?: string;
  remittanceInformation?: string;
  purposeOfPayment?: string;
  paymentInstructions?: unknown;
  expectedSettlementAt?: Date;
  /**
   * `INCOMING`: money entering an internal account from the customer's own external account (the
   * deprecated transfer-in): recorded and announced as an incoming payment (INCOMING_PAYMENT.*);
   * the money moves exactly as for an outgoing one.
   */
  recordAs?: 'INCOMING';
  /** REALTIME_FUNDING: the platform's time by which the money must arrive (the quote's expiresAt); unfunded then, the payment EXPIRES. */
  fundingDeadline?: Date;
  /** `TRANSFER`: started by POST /transfer-out; the rail is told (Payout.requestedAs). */
  requestedAs?: 'TRANSFER';
}

export type TransactionView = Transaction;

export const SUBMIT_JOB = 'payments.submit';
/** The submit job's payload; `requestedAs` rides along to the settlement job (Payout.requestedAs). */
interface SubmitPayload {
  transactionId: string;
  requestedAs?: 'TRANSFER';
  /** Money pulled from an external account: the rail collects it (or refuses) before anything is credited. */
  pull?: true;
  /** The rail ACCEPTED the pull: what is left is to ask how it stands (`collectionStatus`). */
  collecting?: true;
}
/** The settlement job's progress: whether the payout was handed to the rail. */
interface SettlePayload extends SubmitPayload {
  submitted: boolean;
}
export const SETTLE_JOB = 'payments.settle';
/**
 * A settlement job waits (RetryJobAt) for its due time and for a slow provider: it must not run
 * out of attempts doing so. A pull's submit job waits for the collection the same way, and has as many.
 */
const SETTLE_MAX_ATTEMPTS = 1_000;
/** How soon a provider that still answers PENDING (a payout, a collection) is asked again. */
const PROVIDER_POLL_MS = 60_000;

export interface PaymentsDeps extends FundingDeps {
  /** Simulated rails for sandbox platforms; the configured provider (if any) for production ones. */
  rails: { sandbox: RailProvider; production?: RailProvider };
  /**
   * Runs in the payment's database transaction when it ends before any money left the sender
   * (expired unpaid, cancelled while PENDING, paid in with the wrong amount): app.ts gives the
   * quote's daily volume back (modules/quotes README).
   */
  endedUnspent?: (trx: DbOrTx, platformId: string, quoteUuid: string) => Promise<void>;
}

const ref = (uuid: string, step: string) => `transaction:${uuid}:${step}`;

function idOrFail(type: string, id: string): string {
  const uuid = parseId(type, id);
  if (!uuid) throw new Error(`${id} is not a ${type} id`);
  return uuid;
}

/** The external account a payment pulls its money from (transfer-in), or undefined when it is paid from an internal account or funded in real time. */
function pulledFrom(row: TransactionRow): string | undefined {
  const source = row.source as { sourceType: string; accountId?: string };
  return !row.source_account_id && source.sourceType === 'ACCOUNT' ? source.accountId : undefined;
}

/** Whether a payment's money comes from an external account (a pull), judged before its row exists: `pulledFrom`'s rule. */
function isPull(input: OutgoingPaymentInput): boolean {
  return input.source.sourceType === 'ACCOUNT' && !parseId('InternalAccount', input.source.accountId);
}

/**
 * Seconds a pull's collection takes before the payment goes on: a production pull's debit rail
 * settlement time (rails.ts PULL_RAILS); 0 for the sandbox's simulated pulls, which answer at once,
 * and for every other payment.
 */
function collectionSeconds(environment: 'sandbox' | 'production', pull: boolean, sendingCurrency: string): number {
  const rail = environment === 'production' && pull ? pullRailOf(sendingCurrency) : undefined;
  return rail ? settlementSecondsOf(rail) : 0;
}

/**
 * Money movement after a quote's execution: the hold, the hand-over to the rail (the debit),
 * settlement, failure and refund, each a ledger transaction in the same database transaction as
 * the status change it causes (status.ts) and its webhook event. Settlement runs as durable
 * jobs: a restart resumes them, and the conditional status update and the ledger's unique
 * references make a repeated step a no-op.
 */
export class Payments {
  /** REALTIME_FUNDING payments' money in (realtime-funding.ts), on this class's steps. */
  private readonly funding: RealtimeFunding;

  constructor(private readonly deps: PaymentsDeps) {
    deps.jobs.register(SUBMIT_JOB, (job, checkpoint) => this.onSubmit(job, checkpoint));
    deps.jobs.register(SETTLE_JOB, (job, checkpoint) => this.onSettle(job, checkpoint));
    this.funding = new RealtimeFunding(deps, {
      reference: ref,
      hold: (trx, row) => this.hold(trx, row),
      submit: async (trx, row) => {
        await enqueueJob(trx, deps.clock, { kind: SUBMIT_JOB, platformId: row.platform_id, payload: { transactionId: row.id } });
      },
      transition: (trx, row, to, changes) => this.transition(trx, row, to, changes),
      emit: (trx, row, types) => this.emit(trx, row, types),
      unspent: (trx, row) => this.unspent(trx, row),
      refundOf: (trx, row, reference, reason) => this.refundOf(trx, row, reference, reason),
      railsOf: (environment) => this.railsOf(environment),
    });
  }

  private railsOf(environment: 'sandbox' | 'production'): RailProvider | undefined {
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
  private async hold(trx: DbOrTx, row: TransactionRow | TransactionRecord): Promise<string> {
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
      throw error;
    }
  }

  private async rowFor(trx: DbOrTx, input: OutgoingPaymentInput, status: TransactionStatus, failureReason: OutgoingFailureReason | null): Promise<TransactionRow> {
    return this.insertRow(trx, input, await this.newRow(trx, input, status, failureReason));
  }

  /** The row of a new payment, not yet written. */
  private async newRow(trx: DbOrTx, input: OutgoingPaymentInput, status: TransactionStatus, failureReason: OutgoingFailureReason | null): Promise<TransactionRecord> {
    const uuid = idOrFail('Transaction', input.transactionId);
    const customer = input.sender ?? (input.customerId ? await customerTypeOf(trx, input.platformId, input.customerId) : null);
    const environment = await platformEnvironment(trx, input.platformId);
    const platformNow = await this.deps.platformClock.now(input.platformId, trx);
    const now = this.deps.clock.now();
    if (input.totalSendingAmount !== input.sentAmount + input.fees + input.platformFees) {
      throw new Error(`payment ${input.transactionId}: totalSendingAmount ${input.totalSendingAmount} ≠ sentAmount + fees + platformFees`);
    }
    let rail: RailName = UMA_RAIL;
    let destinationAccountId: string | null = null;
    if (input.destination.destinationType === 'ACCOUNT') {
      const route = input.destination.paymentRail;
      if (!isRoute(route) || (isPaymentRail(route) && !railCarries(route, input.receivingCurrency))) {
        throw invalidInput([{ field: 'destination.paymentRail', message: `${route} does not carry ${input.receivingCurrency}` }]);
      }
      rail = route;
      destinationAccountId = parseId('ExternalAccount', input.destination.accountId) ?? parseId('InternalAccount', input.destination.accountId) ?? null;
      if (rail === BOOK_TRANSFER && !parseId('InternalAccount', input.destination.accountId)) {
        throw invalidInput([{ field: 'destination.accountId', message: 'a book transfer pays an internal account' }]);
      }
    }
    const sourceAccountId = input.source.sourceType === 'ACCOUNT' ? (parseId('InternalAccount', input.source.accountId) ?? null) : null;
    // A production pull is collected on its debit rail first, then travels its route (`collectionDue`).
    const seconds = collectionSeconds(environment, isPull(input), input.sendingCurrency) + settlementSecondsOf(rail);
    const expected = input.expectedSettlementAt ?? new Date(platformNow.getTime() + seconds * 1000);
    const source =
      input.source.sourceType === 'ACCOUNT'
        ? { sourceType: 'ACCOUNT', accountId: input.source.accountId, currency: input.sendingCurrency }
        : { sourceType: 'REALTIME_FUNDING', currency: input.source.currency, ...(input.customerId ? { customerId: input.customerId } : {}) };
    const destination =
      input.destination.destinationType === 'ACCOUNT'
        ? { destinationType: 'ACCOUNT', accountId: input.destination.accountId, currency: input.receivingCurrency }
        : { destinationType: 'UMA_ADDRESS', umaAddress: input.destination.umaAddress, currency: input.receivingCurrency };
    const type = input.recordAs ?? 'OUTGOING';
    assertTransition(type, null, status);
    return {
        platform_id: input.platformId,
        id: uuid,
        quote_id: idOrFail('Quote', input.quoteId),
        type,
        status,
        failure_reason: failureReason,
        environment,
        customer_id: customer?.uuid ?? null,
        platform_customer_id: customer?.platformCustomerId ?? null,
        source,
        destination,
        source_account_id: sourceAccountId,
        destination_account_id: destinationAccountId,
        sending_currency: input.sendingCurrency,
        receiving_currency: input.receivingCurrency,
        sent_amount: input.sentAmount,
        total_sending_amount: input.totalSendingAmount,
        received_amount: input.receivedAmount,
        fees: input.fees,
        platform_fees: input.platformFees,
        exchange_rate: input.exchangeRate,
        rate_details: input.rateDetails ?? null,
        description: input.description ?? null,
        remittance_information: input.remittanceInformation ?? null,
        purpose_of_payment: input.purposeOfPayment ?? null,
        payment_instructions: input.paymentInstructions ?? null,
        payment_rail: rail,
        reconciliation_reference: reconciliationReferenceOf(uuid),
        funding_deadline: input.fundingDeadline ?? null,
        expected_settlement_at: status === 'EXPIRED' ? null : expected,
        created_at: now,
        updated_at: now,
    };
  }

  /** Writes a new payment's row: one per quote. */
  private async insertRow(trx: DbOrTx, input: OutgoingPaymentInput, row: TransactionRecord): Promise<TransactionRow> {
    try {
      return await insertTransaction(trx, row);
    } catch (error) {
      const e = error as { code?: string; constraint?: string; message?: string };
      if (e.code === '23505') throw new AppError('CONFLICT', `Quote ${input.quoteId} has already been executed.`);
      throw error;
    }
  }

  /** Records the change's OUTGOING_PAYMENT.* events; an incoming payment's are their INCOMING_PAYMENT.* twins, where upstream has one. */
  private async emit(trx: DbOrTx, row: TransactionRow, types: string[]): Promise<void> {
    const view = toTransaction(row);
    const names = row.type === 'INCOMING' ? types.map((t) => t.replace('OUTGOING_PAYMENT.', 'INCOMING_PAYMENT.')).filter((t) => Object.hasOwn(INCOMING_PAYMENT_EVENTS.types, t)) : types;
    const events: DomainEvent[] = names.map((type) => ({ platformId: row.platform_id, type, resourceId: view.id, data: view }));
    await recordEvents(trx, this.deps.clock, events);
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
    const rails = this.railsOf(environment);
    if (!book && !rails) {
      throw new AppError('NOT_IMPLEMENTED', 'No payment rail provider is configured for production payments (CORRIDOR_RAILS_URL); nothing was moved.');
    }
    if (pull && !rails?.collect) {
      throw new AppError('NOT_IMPLEMENTED', 'The configured payment rail provider cannot pull from external accounts (collect); nothing was moved.');
    }
    if (pull && !pullRailOf(input.sendingCurrency)) {
      throw invalidInput([{ field: 'source.accountId', message: `money cannot be pulled from an external account in ${input.sendingCurrency} (ACH debit for USD, SEPA Direct Debit for EUR)` }]);
    }
    const fresh = await this.newRow(trx, input, 'PENDING', null);
    // From an account the hold comes first, so the row is written once, with it.
    if (input.source.sourceType === 'ACCOUNT') fresh.hold_id = await this.hold(trx, fresh);
    const row = await this.insertRow(trx, input, fresh);
    if (row.hold_id) {
      const payload: SubmitPayload = {
        transactionId: row.id,
        ...(input.requestedAs ? { requestedAs: input.requestedAs } : {}),
        ...(pull ? { pull: true } : {}),
      };
      // A pull's submit job waits for the collection (a day on a debit rail): the settlement job's attempts.
      await enqueueJob(trx, this.deps.clock, { kind: SUBMIT_JOB, platformId: row.platform_id, payload, ...(pull ? { maxAttempts: SETTLE_MAX_ATTEMPTS } : {}) });
    }
    else if (input.fundingDeadline) await this.funding.awaitFunds(trx, row, input.fundingDeadline);
    await this.emit(trx, row, ['OUTGOING_PAYMENT.PENDING']);
    return toTransaction(row);
  }

  /** Execution of an expired quote: the transaction is recorded EXPIRED (QUOTE_EXPIRED) and nothing moves. */
  async recordExpiredPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView> {
    const row = await this.rowFor(trx, input, 'EXPIRED', 'QUOTE_EXPIRED');
    await this.emit(trx, row, ['OUTGOING_PAYMENT.EXPIRED']);
    return toTransaction(row);
  }

  /** Statuses of the transactions of some quotes (`Quote:<uuid>` → status); quotes without one are absent. */
  async transactionStatusesByQuote(db: DbOrTx, platformId: string, quoteIds: string[]): Promise<Map<string, TransactionStatus>> {
    const uuids = quoteIds.map((id) => parseId('Quote', id)).filter((u): u is string => Boolean(u));
    const rows = await statusesByQuote(db, platformId, uuids);
    return new Map(rows.map((r) => [formatId('Quote', r.quote_id!), r.status]));
  }

  /** The payment ended before any money left the sender (PaymentsDeps.endedUnspent). */
  private async unspent(trx: DbOrTx, row: TransactionRow): Promise<void> {
    if (row.quote_id && this.deps.endedUnspent) await this.deps.endedUnspent(trx, row.platform_id, row.quote_id);
  }

  /** Moves a locked row through the status machine, conditional on the status it was read in. */
  private async transition(trx: DbOrTx, row: TransactionRow, to: TransactionStatus, changes: TransactionChanges = {}): Promise<TransactionRow> {
    assertTransition(row.type, row.status, to);
    const updated = await updateTransaction(trx, row.platform_id, row.id, row.status, { ...changes, status: to }, this.deps.clock.now());
    if (!updated) throw new Error(`transaction ${row.id} left ${row.status} while locked`);
    return updated;
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
   * and the answer is false, or the job is to run again (RetryJobAt) to ask later.
   *
   * The rail's answer to the hand-over (`collect`, idempotent by transaction id): COLLECTED (the
   * sandbox's simulated pulls), FAILED — on the platform's clock `afterSeconds` after the
   * execution —, or ACCEPTED (the production provider). An accepted pull is asked about
   * (`collectionStatus`) once the debit rail's time has passed (`collectionDue`), then every
   * PROVIDER_POLL_MS while PENDING; the `collecting` checkpoint means it is never handed over twice.
   */
  private async collected(row: TransactionRow, payload: SubmitPayload, checkpoint: JobCheckpoint): Promise<boolean> {
    const platformId = row.platform_id;
    const accountId = pulledFrom(row)!;
    const rails = this.railsOf(row.environment);
    // Refused at execution (startOutgoingPayment); a provider removed since leaves the job to retry, crediting nothing.
    if (!rails?.collect) throw new Error(`no rail provider that pulls for the ${row.environment} payment ${row.id}`);
    const pull = this.pull(row, accountId);
    if (!payload.collecting) {
      const outcome = await rails.collect(pull);
      if (outcome.status === 'COLLECTED') return true;
      if (outcome.status === 'FAILED') {
        const failAt = new Date(this.executedAt(row).getTime() + outcome.afterSeconds * 1000);
        const platformNow = await this.deps.platformClock.now(platformId);
        if (platformNow < failAt) throw new RetryJobAt(new Date(this.deps.clock.now().getTime() + (failAt.getTime() - platformNow.getTime())), 'the bank has not answered the pull yet');
        await this.failPull(platformId, row.id);
        return false;
      }
      const progress: SubmitPayload = { ...payload, collecting: true };
      const due = this.collectionDue(row);
      const platformNow = await this.deps.platformClock.now(platformId);
      // The checkpoint rides on the retry: one conditional UPDATE records both.
      if (platformNow < due) throw new RetryJobAt(new Date(this.deps.clock.now().getTime() + (due.getTime() - platformNow.getTime())), 'the rail is collecting', { payload: progress });
      await checkpoint(this.deps.db, progress);
    }
    if (!rails.collectionStatus) throw new Error(`the ${row.environment} rail provider accepted the pull of ${row.id} but cannot tell how it stands`);
    const status = await rails.collectionStatus(pull);
    if (status.status === 'PENDING') throw new RetryJobAt(new Date(this.deps.clock.now().getTime() + PROVIDER_POLL_MS), 'the rail has not collected yet');
    if (status.status === 'FAILED') {
      await this.failPull(platformId, row.id);
      return false;
    }
    return true;
  }

  /** The platform's time a pull was executed: its expected settlement time less the collection's and the route's (newRow). */
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
   * The point of no return: the hold is posted (the sender is debited; a pull's destination
   * credited, once the rail collected the money) and the payment is PROCESSING. In the same
   * transaction the job is handed on as the payment's settlement job (`payments.settle`,
   * SETTLE_MAX_ATTEMPTS), which it then runs at once with the row it holds: one job row, one
   * claim and no re-read per payment instead of a second job. Runs once: a repeat finds the
   * transaction no longer PENDING (a committed hand-over is a settlement job).
   */
  private async onSubmit(job: Job, checkpoint: JobCheckpoint): Promise<void> {
    const payload = job.payload as SubmitPayload;
    const { transactionId, requestedAs, pull } = payload;
    const settlement: SettlePayload = { transactionId, ...(requestedAs ? { requestedAs } : {}), submitted: false };
    if (pull) {
      // Only a pull is read first: every other payment goes straight to its hand-over.
      const pending = await findTransaction(this.deps.db, job.platform_id!, transactionId);
      if (!pending || pending.status !== 'PENDING' || !(await this.collected(pending, payload, checkpoint))) return;
    }
    const processing = await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, job.platform_id!, transactionId, { forUpdate: true });
      if (!row || row.status !== 'PENDING' || !row.hold_id) return undefined;
      await this.deps.ledger.postHold(trx, { platformId: row.platform_id, holdId: row.hold_id, reference: ref(row.id, 'post') });
      const processing = await this.transition(trx, row, 'PROCESSING');
      await checkpoint(trx, settlement, { kind: SETTLE_JOB, maxAttempts: SETTLE_MAX_ATTEMPTS });
      await this.emit(trx, processing, ['OUTGOING_PAYMENT.PROCESSING']);
      return processing;
    });
    if (processing) await this.settle(processing, settlement, checkpoint);
  }

  /**
   * Hands the payout to the rail (idempotent by transaction id), waits until the platform's
   * clock reaches the expected settlement time, and asks the rail how it ended: COMPLETED, or
   * FAILED with the debit refunded.
   */
  private async onSettle(job: Job, checkpoint: JobCheckpoint): Promise<void> {
    const payload = job.payload as SettlePayload;
    const row = await findTransaction(this.deps.db, job.platform_id!, payload.transactionId);
    if (row) await this.settle(row, payload, checkpoint);
  }

  /** The settlement job's work on the payment as last read (`row`). */
  private async settle(row: TransactionRow, payload: SettlePayload, checkpoint: JobCheckpoint): Promise<void> {
    const platformId = row.platform_id;
    if (row.status !== 'PROCESSING') return;
    // To an internal account the payment was complete when its hold was posted: no rail to ask.
    // (A pull's hold is posted only once the rail collected the money: `collected`.)
    if (row.payment_rail === BOOK_TRANSFER) return this.complete(platformId, row.id);
    const rails = this.railsOf(row.environment);
    if (!rails) throw new Error(`no rail provider for the ${row.environment} payment ${row.id}`);
    const payout = this.payout(row, payload.requestedAs);
    let handedToRail = false;
    let due = row.expected_settlement_at;
    if (!payload.submitted) {
      const submitted = await rails.submit(payout);
      if (submitted.status === 'REJECTED') return this.fail(platformId, row.id, submitted.failureReason);
      handedToRail = true;
      if (submitted.settlesInSeconds !== undefined) {
        // The rail named its own settlement time: the payment shows it, and the job waits for it.
        due = new Date((await this.deps.platformClock.now(platformId)).getTime() + submitted.settlesInSeconds * 1000);
        await updateTransaction(this.deps.db, platformId, row.id, 'PROCESSING', { expected_settlement_at: due }, this.deps.clock.now());
      }
    }
    const progress: SettlePayload = { ...payload, submitted: true };
    const platformNow = await this.deps.platformClock.now(platformId);
    due ??= platformNow;
    if (platformNow < due) {
      // The checkpoint rides on the retry: one conditional UPDATE records both.
      throw new RetryJobAt(new Date(this.deps.clock.now().getTime() + (due.getTime() - platformNow.getTime())), 'settles later', handedToRail ? { payload: progress } : {});
    }
    // One conditional UPDATE on its own: nothing else commits with it, so no BEGIN/COMMIT around it.
    if (handedToRail) await checkpoint(this.deps.db, progress);
    const status = await rails.status(payout);
    if (status.status === 'PENDING') throw new RetryJobAt(new Date(this.deps.clock.now().getTime() + PROVIDER_POLL_MS), 'the rail has not settled yet');
    if (status.status === 'FAILED') return this.fail(platformId, row.id, status.failureReason);
    return this.complete(platformId, row.id);
  }

  private async complete(platformId: string, transactionId: string): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      const locked = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!locked || locked.status !== 'PROCESSING') return;
      const completed = await this.transition(trx, locked, 'COMPLETED', { settled_at: await this.deps.platformClock.now(platformId, trx) });
      await this.emit(trx, completed, ['OUTGOING_PAYMENT.COMPLETED']);
    });
  }

  /** Returns money that left the sender: the posted hold reversed, and money the platform paid in sent back. */
  private async refundDebit(trx: Tx, row: TransactionRow): Promise<void> {
    const posted = await findLedgerTransaction(trx, row.platform_id, { reference: ref(row.id, 'post') });
    if (posted) await this.deps.ledger.reverse(trx, { platformId: row.platform_id, transactionId: posted.id, reference: ref(row.id, 'refund') });
    else if (row.hold_id) await this.deps.ledger.voidHold(trx, { platformId: row.platform_id, holdId: row.hold_id, reference: ref(row.id, 'void') });
    if (row.funding_id) await this.funding.returnFunds(trx, row, row.funding_id);
  }

  /**
   * The refund of money that left the sender, as the transaction records it. The ledger returns it
   * at once, so it is COMPLETED, except a production deposit: that money is back with the payer only
   * when the provider has sent it (`payments.return-deposit`), so it stays PENDING until then.
   */
  private async refundOf(
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

  /** A payment in PROCESSING that the rail refused or returned: FAILED, its debit refunded, in one transaction. */
  private async fail(platformId: string, transactionId: string, reason: OutgoingFailureReason): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      const row = await findTransaction(trx, platformId, transactionId, { forUpdate: true });
      if (!row || row.status !== 'PROCESSING') return;
      await this.refundDebit(trx, row);
      const refund = await this.refundOf(trx, row, ref(row.id, 'refund'), 'TRANSACTION_FAILED');
      const failed = await this.transition(trx, row, 'FAILED', { failure_reason: reason, ...refund.changes });
      await this.emit(trx, failed, ['OUTGOING_PAYMENT.FAILED', refund.event]);
    });
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
      await this.refundDebit(trx, row);
      const failed = await this.transition(trx, row, 'FAILED', { failure_reason: row.type === 'INCOMING' ? 'COLLECTION_FAILED' : 'QUOTE_EXECUTION_FAILED' });
      await this.emit(trx, failed, ['OUTGOING_PAYMENT.FAILED']);
      await this.unspent(trx, failed);
    });
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
    if (row.type !== 'OUTGOING' || (row.status !== 'PENDING' && row.status !== 'PENDING_AUTHORIZATION')) {
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
    await this.refundDebit(trx, row);
    const refund = moved ? await this.refundOf(trx, row, ref(row.id, 'cancel'), 'USER_CANCELLATION') : undefined;
    const cancelled = await this.transition(trx, row, 'FAILED', { failure_reason: 'QUOTE_EXECUTION_FAILED', ...refund?.changes });
    await this.emit(trx, cancelled, refund ? ['OUTGOING_PAYMENT.FAILED', refund.event] : ['OUTGOING_PAYMENT.FAILED']);
    await this.unspent(trx, cancelled);
    return toTransaction(cancelled);
  }

  /**
   * POST /transactions/{id}/confirm: the platform delivered the receipt, at `confirmedAt` (default
   * now). As upstream, a repeat records its time in place of the earlier one: a platform that
   * sent the receipt again, or first confirmed with the wrong time, corrects the record.
   */
  async confirmReceipt(trx: Tx, platformId: string, transactionId: string, confirmedAt: Date | undefined): Promise<TransactionView> {
    const row = await this.load(trx, platformId, transactionId, { forUpdate: true });
    const at = confirmedAt ?? (await this.deps.platformClock.now(platformId, trx));
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
