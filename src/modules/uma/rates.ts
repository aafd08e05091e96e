import { currency } from '../../platform/currencies.js';

/**
 * The simulated Lightning leg's price of one bitcoin in each currency Corridor converts over
 * UMA (sandbox reference prices, major units; round numbers of late 2025, not market data).
 * A currency missing here is not offered over UMA. Replaced by the quotes module's rates when it
 * lands (see README).
 */
const BTC_PRICE: Record<string, number> = {
  USD: 100_000,
  EUR: 92_000,
  GBP: 79_000,
  MXN: 1_800_000,
  BRL: 540_000,
  CAD: 140_000,
  INR: 8_500_000,
  PHP: 5_800_000,
  NGN: 150_000_000,
  KES: 13_000_000,
  COP: 400_000_000,
  USDC: 100_000,
  USDT: 100_000,
};

const MSATS_PER_BTC = 100_000_000_000;

/** UMA's `multiplier`: millisatoshis per minor unit of `code`, or undefined when not offered. */
export function msatsPerMinorUnit(code: string): number | undefined {
  if (code === 'BTC') return 1000; // satoshis: the minor unit of BTC
  const price = BTC_PRICE[code];
  if (price === undefined) return undefined;
  return MSATS_PER_BTC / (price * 10 ** currency(code).decimals);
}
