import type { Config } from '../../config.js';
import type { Clock, PlatformClock } from '../../platform/clock.js';
import { minorUnits } from '../../platform/currencies.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import type { RequestFingerprints, StoredResponse } from '../../platform/idempotency.js';
import { envelope } from '../../platform/http/error-handler.js';
import { formatId } from '../../platform/ids.js';
import type { PlatformConfigCache } from '../config/index.js';
import { corridorRate, fromUsdMinor, type ExchangeRates, type RateSnapshot } from '../rates/index.js';
import type { OutgoingPaymentInput, TransactionStatus, TransactionView } from '../transactions/index.js';
import type { UmaSender } from '../uma/index.js';
import type { SignedRequests, WalletAuth } from '../wallet-auth/index.js';
import type { FeeModels } from '../withdrawal-fees/index.js';
import { checkExternalOwner, findExternalAccount } from '../external-accounts/index.js';
import { findInternalAccount } from '../internal-accounts/index.js';
import { checkCreditable, checkDestination, checkSender, pullSource } from './payability.js';
import { addDailyVolume, claimQuote, findQuote, markExecuted, type QuoteRow } from './repo.js';
import type { QuoteDestination, QuoteSource } from './schemas.js';
import { quoteStatus, toQuote } from './views.js';

/** The priced route handed to payments with an ACCOUNT destination. */
type OutgoingAccountRoute = Extract<OutgoingPaymentInput['destination'], { destinationType: 'ACCOUNT' }>['paymentRail'];

/** What quotes needs of the transactions module (MONEY-CONTRACT.md); app.ts hands in its Payments. */
export interface OutgoingPayments {
  startOutgoingPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView>;
  recordExpiredPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView>;
  transactionStatusesByQuote(db: DbOrTx, platformId: string, quoteIds: string[]): Promise<Map<string, TransactionStatus>>;
}

export interface QuoteDeps {
  db: Db;
  clock: Clock;
  fingerprints: RequestFingerprints;
  platformClock: PlatformClock;
  config: Config;
  rates: ExchangeRates;
  configCache: PlatformConfigCache;
  payments: OutgoingPayments;
  walletAuth: WalletAuth;
  signed: SignedRequests;
  /** The sending VASP: pay requests for UMA_ADDRESS destinations. */
  uma: Pick<UmaSender, 'quote' | 'record'>;
  /** Network fees of payouts onto crypto networks (withdrawal-fees: the sandbox table, the deployment's model). */
  feeModels: FeeModels;
}

export interface Caller {
  platformId: string;
  environment: 'sandbox' | 'production';
}

/** The signed operation an embedded wallet's execution is (its stamp answers the quote's payloadToSign). */
export const QUOTE_EXECUTE_OPERATION = 'quote.execute';

/**
 * The limit of `table` for `key` in `currency`'s minor units: the override, else the default
 * (US cents) at the current mid-market rate, rounded up.
 */
export function limitIn(table: { defaultUsdMinor: bigint; overrides: Record<string, bigint> }, keys: string[], currency: string, snapshot: RateSnapshot): bigint {
  for (const key of keys) {
    const override = table.overrides[key];
    if (override !== undefined) return override;
  }
  return fromUsdMinor(table.defaultUsdMinor, corridorRate(snapshot, 'USD', currency).mid, minorUnits(currency));
}

function paymentInput(row: QuoteRow): OutgoingPaymentInput {
  const source = row.source as QuoteSource;
  const destination = row.destination as QuoteDestination;
  return {
    transactionId: formatId('Transaction', row.transaction_id),
    platformId: row.platform_id,
    // No customer: the platform's own transfer (its account without source.customerId, or REALTIME_FUNDING without customerId).
    ...(row.customer_id ? { customerId: formatId('Customer', row.customer_id) } : {}),
    quoteId: formatId('Quote', row.id),
    source:
      source.sourceType === 'ACCOUNT'
        ? { sourceType: 'ACCOUNT', accountId: source.accountId }
        : { sourceType: 'REALTIME_FUNDING', currency: source.currency, ...(source.cryptoNetwork ? { cryptoNetwork: source.cryptoNetwork } : {}) },
    destination:
      destination.destinationType === 'ACCOUNT'
        ? // The route the quote priced: a PaymentRail, a wallet's network, or BOOK for an internal account.
          { destinationType: 'ACCOUNT', accountId: destination.accountId, paymentRail: row.payment_rail as OutgoingAccountRoute }
        : { destinationType: 'UMA_ADDRESS', umaAddress: destination.umaAddress },
    sendingCurrency: row.sending_currency,
    receivingCurrency: row.receiving_currency,
    sentAmount: BigInt(row.sent_amount),
    totalSendingAmount: BigInt(row.total_sending_amount),
    receivedAmount: BigInt(row.received_amount),
    fees: BigInt(row.service_fees),
    platformFees: BigInt(row.platform_fees),
    exchangeRate: row.exchange_rate,
    rateDetails: row.rate_details,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.remittance_information !== null ? { remittanceInformation: row.remittance_information } : {}),
    ...(row.purpose_of_payment !== null ? { purposeOfPayment: row.purpose_of_payment } : {}),
    ...(row.payment_instructions ? { paymentInstructions: row.payment_instructions } : {}),
    ...(source.sourceType === 'REALTIME_FUNDING' ? { fundingDeadline: row.expires_at } : {}),
  };
}

/**
 * Executes a quote exactly once, inside the caller's transaction: the quote row is locked, so of
 * concurrent executions one proceeds and the others find it executed (409 CONFLICT). Past
 * expiresAt (platform time) the transaction is recorded EXPIRED and the answer is 409 with
 * `details.reason: QUOTE_EXPIRED` — committed, not rolled back. Otherwise the customer's daily
 * volume grows (429 past the limit) and the payment starts (the hold; too little balance is
 * AMOUNT_OUT_OF_RANGE and nothing is written).
 */
/**
 * What an execution needs besides the quote: the platform's time now (PlatformClock) and its
 * environment, whose rate provider priced the quote. The rates are the quote's own window's,
 * read as stored in the execution's transaction (`quoteRates`): never the provider's, whose
 * answer could keep the transaction, and the quote's row lock, waiting.
 */
export interface ExecutionContext {
  now: Date;
  environment: Caller['environment'];
}

/** What a request creating a quote reads before its transaction opens (a second connection inside it could starve the pool). */
export interface Prefetched extends ExecutionContext {
  /** The current window's rates, which price the quote. */
  snapshot: RateSnapshot;
}

export async function prefetch(deps: QuoteDeps, caller: Caller): Promise<Prefetched> {
  const [snapshot, now] = await Promise.all([deps.rates.snapshot(caller.environment), deps.platformClock.now(caller.platformId)]);
  return { snapshot, now, environment: caller.environment };
}

/**
 * The rates a quote was priced with, as stored (its `rate_window_start`), for the execution's
 * checks that convert (the default limits in US cents, the destination's verification threshold in
 * EUR): what the quote fixed is not re-read (README, "Checked again at execution"). Asked only of
 * a quote that has not expired, so at most minutes old: stored windows are kept a day.
 */
function quoteRates(trx: Tx, deps: QuoteDeps, row: QuoteRow, environment: Caller['environment']): Promise<RateSnapshot> {
  return deps.rates.storedSnapshot(environment, row.rate_window_start, trx);
}

function walletSignatureMissing(): AppError {
  return new AppError('WALLET_SIGNATURE_MISSING', 'Executing a quote from an embedded wallet needs the Service-Wallet-Signature header (or Grid-Wallet-Signature): the stamp of an active session over the quote’s payloadToSign.');
}

function expiredMessage(row: QuoteRow): string {
  return `Quote ${formatId('Quote', row.id)} expired at ${row.expires_at.toISOString()}; its transaction is recorded EXPIRED. Request a new quote.`;
}

/**
 * A repeated execution. A first execution past expiresAt marked the quote too, but executed
 * nothing: its transaction is EXPIRED (the only way an account-sourced payment gets there), and a
 * client retrying after a lost answer must hear QUOTE_EXPIRED again, not that its payment went out.
 */
async function alreadyExecuted(trx: DbOrTx, deps: QuoteDeps, row: QuoteRow): Promise<AppError> {
  const quoteId = formatId('Quote', row.id);
  const transactionId = formatId('Transaction', row.transaction_id);
  const status = (await deps.payments.transactionStatusesByQuote(trx, row.platform_id, [quoteId])).get(quoteId);
  if (status === 'EXPIRED') return new AppError('CONFLICT', expiredMessage(row), { details: { reason: 'QUOTE_EXPIRED', quoteId, transactionId } });
  return new AppError('CONFLICT', `Quote ${quoteId} has already been executed.`, { details: { quoteId, transactionId } });
}

/** Executes a quote whose row the caller has locked (FOR UPDATE) and not yet marked executed. */
export async function executeLocked(
  trx: Tx,
  deps: QuoteDeps,
  row: QuoteRow,
  context: ExecutionContext,
  // The deprecated transfer-in records its payment as INCOMING (money entering an internal account);
  // transfer-out tells the rail it is a transfer (sandbox rails have transfer outcomes of their own).
  // `walletSigned`: the wallet's session stamp over the quote's payloadToSign was verified (the signed path).
  // `createdNow`: the quote was created in this transaction, so its sender was checked just now.
  { walletSigned = false, createdNow = false, ...options }: Pick<OutgoingPaymentInput, 'recordAs' | 'requestedAs'> & { walletSigned?: boolean; createdNow?: boolean } = {},
): Promise<StoredResponse> {
  if (row.source_account_type === 'EMBEDDED_WALLET' && !walletSigned) throw walletSignatureMissing();
  if (row.executed_at) throw await alreadyExecuted(trx, deps, row);
  return executeTaken(trx, deps, row, context, { ...options, claimed: false, recheck: !createdNow });
}

/**
 * The execution of a quote this transaction has locked. `claimed`: claimQuote has already marked
 * it executed (and set its volume day); otherwise it is marked here. `recheck`: the sender is held
 * to the quote's rules again (payability.ts), since it may have changed while the quote waited.
 * The accounts always are, here: their reads are the ones that lock their owners.
 */
async function executeTaken(
  trx: Tx,
  deps: QuoteDeps,
  row: QuoteRow,
  { now, environment }: ExecutionContext,
  { claimed, recheck, ...options }: Pick<OutgoingPaymentInput, 'recordAs' | 'requestedAs'> & { claimed: boolean; recheck: boolean },
): Promise<StoredResponse> {
  const input: OutgoingPaymentInput = { ...paymentInput(row), ...options };
  if (row.expires_at <= now) {
    await deps.payments.recordExpiredPayment(trx, input);
    if (!claimed) await markExecuted(trx, row.platform_id, row.id, deps.clock.now());
    return {
      statusCode: 409,
      body: envelope('CONFLICT', expiredMessage(row), {
        reason: 'QUOTE_EXPIRED',
        quoteId: input.quoteId,
        transactionId: input.transactionId,
      }),
    };
  }
  const snapshot = await quoteRates(trx, deps, row, environment);
  if (recheck && row.customer_id) input.sender = await checkSender(trx, row.platform_id, row.customer_id);
  // The accounts, also for a quote created just now: its creation may have looked outside this
  // transaction, and only a look in it (each account's owner read FOR SHARE) keeps a concurrent
  // DELETE of the owner from passing between that look and the payment.
  if (row.source_kind === 'EXTERNAL_ACCOUNT') {
    const source = await pullSource(trx, row.platform_id, formatId('ExternalAccount', row.source_account_id!));
    await checkExternalOwner(trx, row.platform_id, source, 'source');
  }
  if (row.destination_kind === 'EXTERNAL_ACCOUNT') {
    const destination = await findExternalAccount(trx, row.platform_id, formatId('ExternalAccount', row.destination_account_id!));
    checkDestination(destination, BigInt(row.received_amount), row.receiving_currency, snapshot);
    await checkExternalOwner(trx, row.platform_id, destination, 'destination');
  }
  if (row.destination_kind === 'INTERNAL_ACCOUNT') {
    const destination = await findInternalAccount(trx, row.platform_id, formatId('InternalAccount', row.destination_account_id!));
    if (destination) await checkCreditable(trx, row.platform_id, destination);
  }
  // The daily volume is a customer's (spec §8); the platform's own transfers have none to count.
  let volumeDay: string | null = null;
  if (row.customer_id) {
    const customerId = row.customer_id;
    const currency = row.sending_currency;
    const limit = limitIn(deps.config.quoteLimits.dailyVolume, [currency], currency, snapshot);
    const day = now.toISOString().slice(0, 10);
    volumeDay = day;
    const added = await addDailyVolume(trx, { platformId: row.platform_id, customerId, day, currency }, BigInt(row.total_sending_amount), limit);
    if (!added) {
      throw new AppError('DAILY_VOLUME_LIMIT_EXCEEDED', `This transfer would take the customer past its daily volume limit of ${limit} ${currency} minor units for ${day} (UTC).`, {
        details: { limit: Number(limit), currency, day },
      });
    }
  }
  const transaction = await deps.payments.startOutgoingPayment(trx, input);
  if (!claimed) await markExecuted(trx, row.platform_id, row.id, deps.clock.now(), volumeDay);
  return { statusCode: 200, body: toQuote({ ...row, executed_at: now }, quoteStatus(row, transaction.status, now)) };
}

export async function loadQuote(db: DbOrTx, platformId: string, quoteUuid: string, options: { forUpdate?: boolean } = {}): Promise<QuoteRow> {
  const row = await findQuote(db, platformId, quoteUuid, options);
  if (!row) throw new AppError('QUOTE_NOT_FOUND', `Quote ${formatId('Quote', quoteUuid)} was not found.`);
  return row;
}

/** POST /quotes/{id}/execute for account sources that need no wallet signature. */
export async function executeQuote(trx: Tx, deps: QuoteDeps, caller: Caller, quoteUuid: string, context: ExecutionContext): Promise<StoredResponse> {
  // Locked and marked in one round trip (with the day its volume is counted in); every refusal below rolls the mark back.
  const claim = await claimQuote(trx, caller.platformId, quoteUuid, deps.clock.now(), context.now);
  if (!claim) throw new AppError('QUOTE_NOT_FOUND', `Quote ${formatId('Quote', quoteUuid)} was not found.`);
  const row = claim.row;
  if (row.source_kind === 'REALTIME_FUNDING') {
    // Upstream's execute takes internal-account and pull-capable sources only; this quote's payment opened at creation.
    throw new AppError('INVALID_INPUT', `Quote ${formatId('Quote', row.id)} is funded in real time and is not executed: its payment opened when it was created and waits for the money sent to its paymentInstructions (POST /sandbox/send on sandbox).`, {
      details: { reason: 'REALTIME_FUNDING_NOT_EXECUTABLE', quoteId: formatId('Quote', row.id), transactionId: formatId('Transaction', row.transaction_id) },
    });
  }
  if (row.source_account_type === 'EMBEDDED_WALLET') throw walletSignatureMissing();
  if (claim.alreadyExecuted) throw await alreadyExecuted(trx, deps, row);
  return executeTaken(trx, deps, row, context, { claimed: true, recheck: true });
}

export async function readQuote(deps: QuoteDeps, caller: Caller, quoteUuid: string) {
  const row = await loadQuote(deps.db, caller.platformId, quoteUuid);
  const statuses = await deps.payments.transactionStatusesByQuote(deps.db, caller.platformId, [formatId('Quote', row.id)]);
  return toQuote(row, quoteStatus(row, statuses.get(formatId('Quote', row.id)), await deps.platformClock.now(caller.platformId)));
}
