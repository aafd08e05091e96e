import type { PaymentRail } from '../external-accounts/index.js';
import { RAILS as CATALOGUE } from '../rates/index.js';

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

/** Crypto and UMA payouts (no PaymentRail): settled on the network, about a minute. */
export const NETWORK_SETTLEMENT_SECONDS = 60;

/** Where money paid into a REALTIME_FUNDING quote lands before the payment uses it. */
export const FUNDING_RAIL = 'REALTIME_FUNDING';

/** Settlement account rail name of a destination without a PaymentRail (crypto, UMA). */
export const NETWORK_RAIL = 'NETWORK';

export function railCarries(rail: PaymentRail, currency: string): boolean {
  const spec = RAILS[rail];
  return spec.currencies === 'ANY_FIAT' ? !['BTC', 'USDC', 'USDT'].includes(currency) : spec.currencies.includes(currency);
}

/** The rail a payout goes out on: a PaymentRail, or NETWORK for crypto and UMA destinations. */
export type RailName = PaymentRail | typeof NETWORK_RAIL;

export function settlementSecondsOf(rail: RailName): number {
  return rail === NETWORK_RAIL ? NETWORK_SETTLEMENT_SECONDS : RAILS[rail].settlementSeconds;
}

export const PAYMENT_RAIL_NAMES = Object.keys(RAILS) as PaymentRail[];
