import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { parseId } from '../../platform/ids.js';
import { customerTypeOf } from '../customers/index.js';
import type { DestinationNetwork, PaymentRail } from '../external-accounts/index.js';
import { platformEnvironment } from '../platforms/index.js';
import { BOOK_TRANSFER, isPaymentRail, isRoute, pullRailOf, railCarries, settlementSecondsOf, UMA_RAIL, type RailName } from './rails.js';
import { insertTransaction, reconciliationReferenceOf, type TransactionRecord, type TransactionRow } from './repo.js';
import type { OutgoingFailureReason } from './schemas.js';
import { assertTransition, type TransactionStatus } from './status.js';

/**
 * A new payment's row, built from what a quote's execution hands over and written once per quote,
 * and what a row tells of where its money comes from (a pull from an external account).
 */

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

function idOrFail(type: string, id: string): string {
  const uuid = parseId(type, id);
  if (!uuid) throw new Error(`${id} is not a ${type} id`);
  return uuid;
}

/** The external account a payment pulls its money from (transfer-in), or undefined when it is paid from an internal account or funded in real time. */
export function pulledFrom(row: TransactionRow): string | undefined {
  const source = row.source as { sourceType: string; accountId?: string };
  return !row.source_account_id && source.sourceType === 'ACCOUNT' ? source.accountId : undefined;
}

/** Whether a payment's money comes from an external account (a pull), judged before its row exists: `pulledFrom`'s rule. */
export function isPull(input: OutgoingPaymentInput): boolean {
  return input.source.sourceType === 'ACCOUNT' && !parseId('InternalAccount', input.source.accountId);
}

/**
 * Seconds a pull's collection takes before the payment goes on: a production pull's debit rail
 * settlement time (rails.ts PULL_RAILS); 0 for the sandbox's simulated pulls, which answer at once,
 * and for every other payment.
 */
export function collectionSeconds(environment: 'sandbox' | 'production', pull: boolean, sendingCurrency: string): number {
  const rail = environment === 'production' && pull ? pullRailOf(sendingCurrency) : undefined;
  return rail ? settlementSecondsOf(rail) : 0;
}

/** The row of a new payment, not yet written. */
export async function newPaymentRow(
  trx: DbOrTx,
  clocks: { clock: Clock; platformClock: PlatformClock },
  input: OutgoingPaymentInput,
  status: TransactionStatus,
  failureReason: OutgoingFailureReason | null,
): Promise<TransactionRecord> {
  const uuid = idOrFail('Transaction', input.transactionId);
  const customer = input.sender ?? (input.customerId ? await customerTypeOf(trx, input.platformId, input.customerId) : null);
  const environment = await platformEnvironment(trx, input.platformId);
  const platformNow = await clocks.platformClock.now(input.platformId, trx);
  const now = clocks.clock.now();
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
  const expected = new Date(platformNow.getTime() + seconds * 1000);
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
export async function insertPaymentRow(trx: DbOrTx, input: OutgoingPaymentInput, row: TransactionRecord): Promise<TransactionRow> {
  try {
    return await insertTransaction(trx, row);
  } catch (error) {
    const e = error as { code?: string; constraint?: string; message?: string };
    if (e.code === '23505') throw new AppError('CONFLICT', `Quote ${input.quoteId} has already been executed.`);
    throw error;
  }
}
