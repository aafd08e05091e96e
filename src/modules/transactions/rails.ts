import type { DestinationNetwork, PaymentRail } from '../external-accounts/index.js';
import { RAILS as CATALOGUE, NETWORKS as NETWORK_CATALOGUE } from '../rates/index.js';

/**
 * The simulated rails: every PaymentRail of UPSTREAM §5.6 with how long a payout on it takes to
 * settle and the currencies it carries. Settlement times are typical for the real network
 * (instant schemes seconds, batch schemes a business day, correspondent banking two days); a
 * sandbox platform skips the wait with its test clock (POST /sandbox/clock/advance).
 * `currencies: 'ANY_FIAT'` is a rail that carries any fiat currency (SWIFT, generic bank transfer).
 */
export interface RailSpec {
  settlementSeconds: number;
  currencies: readonly string[] | 'ANY_FIAT';
  description: string;
}

/** The one rail catalogue (modules/rates/rails.ts): quotes price by it, payments settle by it. */
export const RAILS: Record<PaymentRail, RailSpec> = Object.fromEntries(
  Object.entries(CATALOGUE).map(([rail, spec]) => [rail, { settlementSeconds: spec.settlementSeconds, currencies: spec.currencies, description: spec.description }]),
) as Record<PaymentRail, RailSpec>;

/** Crypto networks external wallets are paid on (no PaymentRail): settled on the network, as the same catalogue says. */
export const NETWORKS: Record<DestinationNetwork, { settlementSeconds: number }> = Object.fromEntries(
  Object.entries(NETWORK_CATALOGUE).map(([network, spec]) => [network, { settlementSeconds: spec.settlementSeconds }]),
) as Record<DestinationNetwork, { settlementSeconds: number }>;

/** UMA payouts: settled with the counterparty, about a minute. */
export const UMA_SETTLEMENT_SECONDS = 60;

/** Where money paid into a REALTIME_FUNDING quote lands before the payment uses it. */
export const FUNDING_RAIL = 'REALTIME_FUNDING';

/** Corridor's collection accounts at the rail provider: where production REALTIME_FUNDING deposits arrive from. */
export const COLLECTION_RAIL = 'COLLECTION';

/** Settlement account rail name of a UMA payout. */
export const UMA_RAIL = 'UMA';

/** Between two internal accounts of one platform: a ledger transfer, no rail, settled at once. */
export const BOOK_TRANSFER = 'BOOK';

/**
 * The debit rail a pull from an external account travels on, by the account's currency: ACH debit
 * for USD, SEPA Direct Debit for EUR — the only accounts money can be pulled from (external-accounts'
 * PULL_RAILS, by account type; keep the two together). A production pull is handed to the rail
 * provider on it, and its collection takes that rail's settlement time.
 */
export const PULL_RAILS: Readonly<Record<string, PaymentRail>> = { USD: 'ACH', EUR: 'SEPA' };

export function pullRailOf(currency: string): PaymentRail | undefined {
  return Object.hasOwn(PULL_RAILS, currency) ? PULL_RAILS[currency] : undefined;
}

/** The route a payout goes out on: a PaymentRail, a crypto network, UMA, or a book transfer. */
export type RailName = PaymentRail | DestinationNetwork | typeof UMA_RAIL | typeof BOOK_TRANSFER;

export function isPaymentRail(name: string): name is PaymentRail {
  return Object.hasOwn(RAILS, name);
}

export function isRoute(name: string): name is RailName {
  return isPaymentRail(name) || Object.hasOwn(NETWORKS, name) || name === UMA_RAIL || name === BOOK_TRANSFER;
}

export function railCarries(rail: PaymentRail, currency: string): boolean {
  const spec = RAILS[rail];
  return spec.currencies === 'ANY_FIAT' ? !['BTC', 'USDC', 'USDT'].includes(currency) : spec.currencies.includes(currency);
}

export function settlementSecondsOf(route: RailName): number {
  if (isPaymentRail(route)) return RAILS[route].settlementSeconds;
  if (route === BOOK_TRANSFER) return 0;
  if (route === UMA_RAIL) return UMA_SETTLEMENT_SECONDS;
  return NETWORKS[route].settlementSeconds;
}

export const PAYMENT_RAIL_NAMES = Object.keys(RAILS) as PaymentRail[];
