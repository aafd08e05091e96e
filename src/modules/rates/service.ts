import type { Clock } from '../../platform/clock.js';
import { minorUnits } from '../../platform/currencies.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import type { PlatformConfig } from '../config/index.js';
import { crossRate, fromUsdMinor, priceTransfer, RATE_SCALE, sendingFor, UNIT_RATE, type FeeSchedule, type Priced, type ScaledRate } from './pricing.js';
import type { RateProvider } from './provider.js';
import { findRateWindow, insertRateWindow } from './repo.js';
import type { RouteSpec } from './rails.js';
import { BUILT_IN_RATES_PER_USD } from './table.js';

/** Spec §8: rates are cached about 5 minutes; every caller inside one window gets the same rate. */
export const RATE_WINDOW_MS = 5 * 60_000;

export interface RateSnapshot {
  provider: string;
  windowStart: Date;
  asOf: Date;
  perUsd: Record<string, string>;
}

const DOLLARS = new Set(['USD', 'USDC', 'USDT']);
const MAJORS = new Set(['USD', 'EUR', 'GBP', 'CAD', 'CHF', 'JPY', 'AUD', 'NZD', 'DKK', 'SEK', 'NOK', 'SGD', 'HKD']);
const FRONTIER = new Set(['NGN', 'GHS', 'KES', 'UGX', 'TZS', 'RWF', 'MWK', 'ZMW', 'XAF', 'XOF', 'HTG', 'BWP', 'EGP', 'PKR', 'BDT', 'ARS', 'VND']);

/**
 * Corridor's FX spread per corridor, in basis points below mid-market (README, "Spreads"):
 * same currency 0; between USD and its stablecoins 10; between two majors 25; a frontier
 * currency on either side 150; BTC 50; any other pair 75.
 */
export function spreadBps(from: string, to: string): bigint {
  if (from === to) return 0n;
  if (DOLLARS.has(from) && DOLLARS.has(to)) return 10n;
  if (FRONTIER.has(from) || FRONTIER.has(to)) return 150n;
  if (from === 'BTC' || to === 'BTC') return 50n;
  if (MAJORS.has(from) && MAJORS.has(to)) return 25n;
  return 75n;
}

/** A corridor's rate inside one cache window. */
export interface CorridorRate {
  /** What the customer gets: mid-market less the spread (1 for the same currency). */
  rate: ScaledRate;
  mid: ScaledRate;
  spreadBps: bigint;
  snapshot: RateSnapshot;
}

export interface PlatformFeeOverride {
  fixed: bigint;
  variableBps: bigint;
}

export interface PricingRequest {
  snapshot: RateSnapshot;
  config: Pick<PlatformConfig, 'feeConfigs'>;
  sendingCurrency: string;
  receivingCurrency: string;
  route: RouteSpec;
  lockedSide: 'SENDING' | 'RECEIVING';
  amount: bigint;
  platformFeeOverride?: PlatformFeeOverride;
  /**
   * A payout onto a crypto network: the network's fee (gas) in receiving minor units, as the
   * withdrawal fee model estimates it. It is charged as a fixed part of the service fee, in the
   * sending currency (`networkFeeOf`).
   */
  networkFee?: bigint;
  /** The request fields the currencies came from, for INVALID_CURRENCY's `details.field`. */
  currencyFields?: CurrencyFields;
}

export interface Pricing {
  corridor: CorridorRate;
  /** Its `serviceFixed` includes the request's `networkFee`, in the sending currency. */
  fees: FeeSchedule;
  /** Undefined: the amount cannot make a transfer (fees eat it, or it converts to nothing). */
  priced: Priced | undefined;
}

/**
 * Exchange rates as every process sees them: the provider is asked at most once per window
 * (RATE_WINDOW_MS, aligned on the clock), and what it answered is stored in the database, so
 * every process — and every caller — prices with the same table inside one window.
 */
export class ExchangeRates {
  private readonly memo = new Map<string, RateSnapshot>();

  constructor(
    private readonly deps: {
      db: Db;
      clock: Clock;
      /** Sandbox platforms: the built-in table. */
      sandbox: RateProvider;
      /** Production platforms; absent: their prices are 503 (no real-money quote from a fixed table). */
      production?: RateProvider;
    },
  ) {}

  providerFor(environment: 'sandbox' | 'production'): RateProvider {
    if (environment === 'sandbox') return this.deps.sandbox;
    if (!this.deps.production) {
      throw new AppError('SERVICE_UNAVAILABLE', 'No exchange-rate provider is configured for production platforms (CORRIDOR_RATES_URL).', { retryable: true });
    }
    return this.deps.production;
  }

  /**
   * The current window's rates. Call it before opening a transaction (it may use its own
   * connection and ask the provider); `db` lets a caller already inside one read through it.
   */
  async snapshot(environment: 'sandbox' | 'production', db: DbOrTx = this.deps.db): Promise<RateSnapshot> {
    const provider = this.providerFor(environment);
    const now = this.deps.clock.now().getTime();
    const windowStart = new Date(now - (now % RATE_WINDOW_MS));
    const memo = this.memo.get(provider.name);
    if (memo && memo.windowStart.getTime() === windowStart.getTime()) return memo;
    let row = await findRateWindow(db, provider.name, windowStart);
    if (!row) {
      const table = await provider.fetch(RATED_CURRENCIES);
      await insertRateWindow(db, { provider: provider.name, window_start: windowStart, as_of: table.asOf, rates: table.perUsd, fetched_at: new Date(now) });
      // Another process may have stored its answer first: everyone prices with the stored one.
      row = (await findRateWindow(db, provider.name, windowStart))!;
    }
    const snapshot = { provider: row.provider, windowStart: row.window_start, asOf: row.as_of, perUsd: row.rates };
    // Read through a caller's transaction, the row may be its own uncommitted insert: should that
    // roll back, another process stores another answer for the window, and a memo of this one
    // would price this process apart from every other until the window ends.
    if (!db.isTransaction) this.memo.set(provider.name, snapshot);
    return snapshot;
  }

  /**
   * The rates of the window starting at `windowStart` as stored, never asked of the provider: for
   * a caller inside a transaction that needs the rates something was priced with (a quote's
   * `rate_window_start`), where a provider call would hold the transaction open for as long as the
   * provider takes. Windows are kept a day (`insertRateWindow`); one not stored is 503.
   */
  async storedSnapshot(environment: 'sandbox' | 'production', windowStart: Date, db: DbOrTx = this.deps.db): Promise<RateSnapshot> {
    const provider = this.providerFor(environment);
    const memo = this.memo.get(provider.name);
    if (memo && memo.windowStart.getTime() === windowStart.getTime()) return memo;
    const row = await findRateWindow(db, provider.name, windowStart);
    if (!row) {
      throw new AppError('SERVICE_UNAVAILABLE', `The exchange rates of the window starting ${windowStart.toISOString()} are no longer stored.`);
    }
    return { provider: row.provider, windowStart: row.window_start, asOf: row.as_of, perUsd: row.rates };
  }
}

/** Currencies the built-in table rates; asked of the HTTP provider too. */
export const RATED_CURRENCIES: readonly string[] = Object.keys(BUILT_IN_RATES_PER_USD).sort();

export function hasRate(snapshot: RateSnapshot, currency: string): boolean {
  return snapshot.perUsd[currency] !== undefined;
}

/** The corridor's rate less its spread, when both sides are rated; 0 when it rounds to nothing. */
function spreadRate(snapshot: RateSnapshot, from: string, to: string): ScaledRate {
  return from === to ? UNIT_RATE : crossRate(snapshot.perUsd[from]!, snapshot.perUsd[to]!, spreadBps(from, to));
}

/**
 * Whether this window prices the corridor: both sides rated, and a rate that does not round to 0
 * at RATE_SCALE digits (a provider may rate a currency so far from another that it does).
 */
export function hasCorridor(snapshot: RateSnapshot, from: string, to: string): boolean {
  return hasRate(snapshot, from) && hasRate(snapshot, to) && spreadRate(snapshot, from, to) > 0n;
}

/** The request fields a corridor's two currencies came from, which INVALID_CURRENCY names (`details.field`). */
export interface CurrencyFields {
  from: string;
  to: string;
}

/**
 * The corridor's rate in this window; INVALID_CURRENCY when a side has no rate, or the rate rounds
 * to 0 (naming the side's request field when `fields` says which).
 */
export function corridorRate(snapshot: RateSnapshot, from: string, to: string, fields?: CurrencyFields): CorridorRate {
  for (const [code, field] of [[from, fields?.from], [to, fields?.to]] as const) {
    if (!hasRate(snapshot, code)) {
      throw new AppError('INVALID_CURRENCY', `Corridor has no exchange rate for ${code}.`, { details: { ...(field ? { field } : {}), currency: code } });
    }
  }
  if (from === to) return { rate: UNIT_RATE, mid: UNIT_RATE, spreadBps: 0n, snapshot };
  const rate = spreadRate(snapshot, from, to);
  if (rate <= 0n) {
    throw new AppError('INVALID_CURRENCY', `Corridor has no exchange rate from ${from} to ${to}: one ${from} buys less than 10^-${RATE_SCALE} ${to}.`, {
      details: { ...(fields ? { field: fields.to } : {}), currency: to },
    });
  }
  return { rate, mid: crossRate(snapshot.perUsd[from]!, snapshot.perUsd[to]!, 0n), spreadBps: spreadBps(from, to), snapshot };
}

/**
 * The platform's fee on a transfer: `platformFeeOverride` when given (USD sources only, checked
 * by the caller), else the platform's CROSS_CURRENCY_TRANSACTION fee for the sending currency
 * when the currencies differ, else none.
 */
export function platformFeeOf(config: Pick<PlatformConfig, 'feeConfigs'>, sending: string, receiving: string, override?: PlatformFeeOverride): PlatformFeeOverride {
  if (override) return override;
  if (sending === receiving) return { fixed: 0n, variableBps: 0n };
  const fee = config.feeConfigs.find((f) => f.feeType === 'CROSS_CURRENCY_TRANSACTION' && f.sourceCurrency === sending);
  return fee ? { fixed: BigInt(fee.fixedFee.amount), variableBps: BigInt(fee.variableFeeBps) } : { fixed: 0n, variableBps: 0n };
}

/**
 * A network fee in receiving minor units, in sending minor units at the corridor's own `rate`:
 * the fewest that buy it (rounded up, as every fixed fee), so what the sender pays covers it.
 * The same currency: the fee itself.
 */
function networkFeeOf(networkFee: bigint, corridor: CorridorRate, sendingCurrency: string, receivingCurrency: string): bigint {
  return sendingFor(networkFee, corridor.rate, minorUnits(sendingCurrency), minorUnits(receivingCurrency));
}

/**
 * Prices one transfer in one window: the corridor's rate, the route's service fee (with the
 * network's fee on a payout onto a crypto network), the platform's fee.
 */
export function priceRequest(request: PricingRequest): Pricing {
  const { snapshot, sendingCurrency: s, receivingCurrency: r } = request;
  const corridor = corridorRate(snapshot, s, r, request.currencyFields);
  // The mid-market rate alone converts the fixed fee: USD → s less a spread may round to 0 where s → r does not.
  const usdToSending = crossRate(snapshot.perUsd.USD!, snapshot.perUsd[s]!, 0n);
  const platform = platformFeeOf(request.config, s, r, request.platformFeeOverride);
  const networkFee = request.networkFee ? networkFeeOf(request.networkFee, corridor, s, r) : 0n;
  const fees: FeeSchedule = {
    serviceFixed: fromUsdMinor(request.route.serviceFee.fixedUsdMinor, usdToSending, minorUnits(s)) + networkFee,
    serviceBps: request.route.serviceFee.variableBps,
    platformFixed: platform.fixed,
    platformBps: platform.variableBps,
  };
  const priced = priceTransfer({
    lockedSide: request.lockedSide,
    amount: request.amount,
    rate: corridor.rate,
    sendingDecimals: minorUnits(s),
    receivingDecimals: minorUnits(r),
    fees,
  });
  return { corridor, fees, priced };
}
