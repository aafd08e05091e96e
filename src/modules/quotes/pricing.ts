// What a quote costs: the platform's currencies and fee override, an account quote's price and
// the refusals of its amounts, and the network fee of a payout onto a crypto network (asked of the
// withdrawal fee model before any transaction opens).
import { minorUnits } from '../../platform/currencies.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { parseId } from '../../platform/ids.js';
import type { PlatformConfig } from '../config/index.js';
import { findExternalAccount, type DestinationNetwork } from '../external-accounts/index.js';
import { findInternalAccount } from '../internal-accounts/index.js';
import { MAX_POSTING_AMOUNT } from '../ledger/index.js';
import { convertDown, corridorRate, priceRequest, type PlatformFeeOverride, type Priced, type Pricing, type RateSnapshot } from '../rates/index.js';
import { networkFeeFor } from '../withdrawal-fees/index.js';
import { limitIn, type Caller, type Prefetched, type QuoteDeps } from './execute.js';
import { checkDestination } from './payability.js';
import { destinationCurrencyField, field, sourceCurrencyField, type ResolvedDestination, type ResolvedSource } from './resolve.js';
import type { QuoteRequest } from './schemas.js';

/** The platform's supportedCurrencies entry for `code`, enabled for `direction`; else 400 INVALID_CURRENCY naming the request field `at`. */
export function currencyConfig(config: PlatformConfig, code: string, direction: 'INCOMING' | 'OUTGOING', at: string) {
  const entry = config.supportedCurrencies.find((c) => c.currencyCode === code);
  if (!entry) throw new AppError('INVALID_CURRENCY', `${code} is not one of the platform's supportedCurrencies (PATCH /config).`, { details: { field: at, currency: code } });
  if (!entry.enabledTransactionTypes.includes(direction)) {
    throw new AppError('INVALID_CURRENCY', `${direction} transfers are not enabled for ${code} (supportedCurrencies[].enabledTransactionTypes).`, {
      details: { field: at, currency: code, direction },
    });
  }
  return entry;
}

/** `platformFeeOverride` as pricing takes it: USD sources only (spec §4.6), its fixed fee in USD. */
export function feeOverrideOf(body: QuoteRequest, sendingCurrency: string): PlatformFeeOverride | undefined {
  const override = body.platformFeeOverride;
  if (!override) return undefined;
  if (sendingCurrency !== 'USD') throw new AppError('NOT_IMPLEMENTED', `platformFeeOverride is available for USD sources only, not ${sendingCurrency}.`);
  if (override.platformFixedFee.currency !== 'USD') throw field('platformFeeOverride.platformFixedFee.currency', 'must be the source currency, USD');
  return { fixed: BigInt(override.platformFixedFee.amount), variableBps: BigInt(override.platformVariableFeeBps) };
}

/**
 * An account quote's price, fixed in the prefetched rate window, with the refusals of its
 * currencies and amounts in the order the module README lists them: the currencies the platform
 * sends and receives, the fee override, the network fee of a payout onto a crypto network,
 * nothing left after fees, the platform's range, the corridor maximum, and what the destination
 * may receive.
 */
export async function priceAccountQuote(
  db: DbOrTx,
  deps: QuoteDeps,
  caller: Caller,
  body: QuoteRequest,
  prefetched: Prefetched & { config: PlatformConfig; networkFee?: PrefetchedNetworkFee },
  source: ResolvedSource,
  destination: ResolvedDestination,
): Promise<{ pricing: Pricing; priced: Priced }> {
  const { config, snapshot } = prefetched;
  const sendingConfig = currencyConfig(config, source.currency, 'OUTGOING', sourceCurrencyField(body));
  if (destination.kind === 'INTERNAL_ACCOUNT') currencyConfig(config, destination.currency, 'INCOMING', destinationCurrencyField(body));

  const override = feeOverrideOf(body, source.currency);
  // On the root handle (no Idempotency-Key) no transaction is open yet: the model is asked here; in one, it was asked before (prefetchNetworkFee).
  const networkFee = !destination.network
    ? undefined
    : db.isTransaction
      ? takeNetworkFee(prefetched.networkFee, source.currency, destination)
      : await payoutNetworkFee(deps, caller, body, snapshot, source.currency, destination.network, destination.currency);

  const pricing = priceRequest({
    snapshot,
    config,
    sendingCurrency: source.currency,
    receivingCurrency: destination.currency,
    route: destination.route,
    lockedSide: body.lockedCurrencySide,
    amount: BigInt(body.lockedCurrencyAmount),
    currencyFields: { from: sourceCurrencyField(body), to: destinationCurrencyField(body) },
    ...(override ? { platformFeeOverride: override } : {}),
    ...(networkFee !== undefined ? { networkFee } : {}),
  });
  const priced = pricing.priced;
  if (!priced) {
    throw new AppError('INVALID_AMOUNT', `${body.lockedCurrencyAmount} cannot make a transfer: after fees nothing would arrive.`, {
      details: { lockedCurrencySide: body.lockedCurrencySide, lockedCurrencyAmount: body.lockedCurrencyAmount },
    });
  }
  if (priced.total > MAX_POSTING_AMOUNT || priced.received > MAX_POSTING_AMOUNT) {
    throw new AppError('AMOUNT_OUT_OF_RANGE', 'The transfer’s amounts exceed what the API carries exactly (2^53 − 1 minor units).');
  }
  refuseOutsideRange(priced.total, sendingConfig, source.currency);
  refuseAboveSizeLimit(deps, priced.total, source.currency, destination.currency, snapshot);
  if (destination.external) checkDestination(destination.external, priced.received, destination.currency, snapshot);
  return { pricing, priced };
}

/** 400 AMOUNT_OUT_OF_RANGE: the total the sender pays is outside the platform's minAmount–maxAmount for the sending currency. */
export function amountOutOfRange(total: bigint, sendingConfig: { minAmount: number; maxAmount: number }, currency: string): AppError {
  const [min, max] = [sendingConfig.minAmount, sendingConfig.maxAmount];
  return new AppError('AMOUNT_OUT_OF_RANGE', `The total sending amount ${total} is outside the platform's range for ${currency}: ${min}–${max} minor units.`, {
    details: { totalSendingAmount: Number(total), minAmount: min, maxAmount: max, currency },
  });
}

export function refuseOutsideRange(total: bigint, sendingConfig: { minAmount: number; maxAmount: number }, currency: string): void {
  if (total < BigInt(sendingConfig.minAmount) || total > BigInt(sendingConfig.maxAmount)) throw amountOutOfRange(total, sendingConfig, currency);
}

/** 400 TRANSACTION_SIZE_LIMIT_EXCEEDED: the total is above the corridor's single-transaction maximum (CORRIDOR_MAX_TRANSACTION). */
export function refuseAboveSizeLimit(deps: QuoteDeps, total: bigint, sending: string, receiving: string, snapshot: RateSnapshot): void {
  const limit = limitIn(deps.config.quoteLimits.maxTransaction, [`${sending}:${receiving}`, sending], sending, snapshot);
  if (total > limit) {
    throw new AppError('TRANSACTION_SIZE_LIMIT_EXCEEDED', `The total sending amount ${total} is above the single-transaction maximum of ${limit} ${sending} minor units for this corridor.`, {
      details: { totalSendingAmount: Number(total), limit: Number(limit), currency: sending, corridor: `${sending}:${receiving}` },
    });
  }
}

/**
 * The fee of the network a payout to an external wallet goes onto, in the wallet's currency: the
 * withdrawal fee model's (the environment's; production without one is 503), called as
 * `POST /crypto/estimate-withdrawal-fee` calls it, on the amount the request names in that
 * currency — a RECEIVING lock's amount, a SENDING lock's converted at the quote's rate (rounded
 * down; the same currency: the amount itself, as the estimate is asked). Fixed here with every
 * other fee: the execution never asks again.
 */
async function payoutNetworkFee(
  deps: QuoteDeps,
  caller: Caller,
  body: QuoteRequest,
  snapshot: RateSnapshot,
  sendingCurrency: string,
  network: DestinationNetwork,
  currency: string,
): Promise<bigint> {
  if (!deps.feeModels[caller.environment].carries(network).includes(currency)) {
    throw new AppError('SERVICE_UNAVAILABLE', `The withdrawal fee estimator prices no ${currency} on ${network}: a payout there cannot be quoted.`);
  }
  const locked = BigInt(body.lockedCurrencyAmount);
  const amount =
    body.lockedCurrencySide === 'RECEIVING'
      ? locked
      : convertDown(locked, corridorRate(snapshot, sendingCurrency, currency, { from: sourceCurrencyField(body), to: destinationCurrencyField(body) }).rate, minorUnits(sendingCurrency), minorUnits(currency));
  return (await networkFeeFor(deps.feeModels, caller.environment, network, currency, amount)).networkFeeInCurrency;
}

/**
 * A payout's network fee, asked before the quote's transaction opens (`prefetchNetworkFee`): the
 * destination account and sending currency it was asked for, and the fee or the refusal the
 * quote answers in its place.
 */
export type PrefetchedNetworkFee = { accountUuid: string; sendingCurrency: string } & ({ fee: bigint } | { refusal: AppError });

/**
 * The network fee of a payout to an external wallet, asked of the withdrawal fee model before
 * any transaction opens: a deployment's model may ask a gas oracle over HTTP, which must hold no
 * transaction (on the embedded engine, every other request's) nor the Idempotency-Key's row. Both
 * sides are read here without the quote's rules; createQuote resolves them again and refuses what
 * they refuse first, so a refusal of the model is kept and answered where the fee is charged.
 * Undefined when the destination is no external wallet (or either side is not found: the quote
 * refuses that).
 */
export async function prefetchNetworkFee(deps: QuoteDeps, caller: Caller, body: QuoteRequest, snapshot: RateSnapshot): Promise<PrefetchedNetworkFee | undefined> {
  const destination = body.destination;
  if (destination.destinationType !== 'ACCOUNT' || !parseId('ExternalAccount', destination.accountId)) return undefined;
  // The source is read only for a wallet: most payouts go to bank accounts, and pay for no second read.
  const account = await unlessRefused(findExternalAccount(deps.db, caller.platformId, destination.accountId));
  if (!account?.network) return undefined;
  const sendingCurrency = await sendingCurrencyOf(deps, caller, body);
  if (!sendingCurrency) return undefined;
  const asked = { accountUuid: account.uuid, sendingCurrency };
  try {
    return { ...asked, fee: await payoutNetworkFee(deps, caller, body, snapshot, sendingCurrency, account.network, account.currency) };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { ...asked, refusal: error };
  }
}

/** Undefined for a refusal (an unknown account): the quote resolves the account again and refuses it itself. */
const unlessRefused = <T>(read: Promise<T>): Promise<T | undefined> =>
  read.catch((error: unknown) => {
    if (error instanceof AppError) return undefined;
    throw error;
  });

/** The currency the request's source sends, as resolveSource finds it (undefined: no such account). */
async function sendingCurrencyOf(deps: QuoteDeps, caller: Caller, body: QuoteRequest): Promise<string | undefined> {
  const source = body.source;
  if (source.sourceType === 'REALTIME_FUNDING') return source.currency;
  if (parseId('ExternalAccount', source.accountId)) return (await unlessRefused(findExternalAccount(deps.db, caller.platformId, source.accountId)))?.currency;
  return (await findInternalAccount(deps.db, caller.platformId, source.accountId))?.currency;
}

/** The prefetched network fee of the destination the quote resolved (its refusal thrown here, in the order of creation's refusals). */
function takeNetworkFee(prefetched: PrefetchedNetworkFee | undefined, sendingCurrency: string, destination: ResolvedDestination): bigint {
  // An account's currency and network never change: a fee for another account or currency is a caller that did not prefetch this request's.
  if (!prefetched || prefetched.accountUuid !== destination.accountUuid || prefetched.sendingCurrency !== sendingCurrency) {
    throw new Error(`the network fee of a payout to ${destination.accountId} was not asked before the quote's transaction (prefetchNetworkFee)`);
  }
  if ('refusal' in prefetched) throw prefetched.refusal;
  return prefetched.fee;
}
