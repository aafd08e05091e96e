import { currency, isCurrency } from '../../platform/currencies.js';
import type { RateSnapshot } from '../rates/index.js';
import { parsePositiveDecimal, rateToNumber, type Ratio } from './amounts.js';

const MSATS_PER_BTC = 100_000_000_000n;

/**
 * Millisatoshis per minor unit of `code`, exactly, at the rates module's mid-market rates of the
 * current window (its `perUsd` table, decimal strings, prices BTC like any currency):
 * 10^11 × BTC-per-USD ÷ (code-per-USD × 10^decimals). Undefined when Corridor has no rate for it
 * (or one too extreme for UMA's `multiplier` to carry).
 * Each side of a payment converts at its own rates, as UMA intends.
 */
export function exactMsatsPerMinorUnit(snapshot: RateSnapshot, code: string): Ratio | undefined {
  if (code === 'BTC') return { num: 1000n, den: 1n }; // satoshis: the minor unit of BTC
  const btcPerUsd = parsePositiveDecimal(snapshot.perUsd.BTC ?? '');
  const perUsd = parsePositiveDecimal(snapshot.perUsd[code] ?? '');
  if (!isCurrency(code) || !btcPerUsd || !perUsd) return undefined;
  const rate = { num: MSATS_PER_BTC * btcPerUsd.num * perUsd.den, den: btcPerUsd.den * perUsd.num * 10n ** BigInt(currency(code).decimals) };
  // A rate a double cannot publish (0 or infinite) is no rate UMA can carry.
  const published = rateToNumber(rate);
  return published > 0 && Number.isFinite(published) ? rate : undefined;
}

/**
 * UMA's `multiplier` for `code` as a receiver publishes it (`rateToNumber`: 15 significant
 * digits, the decimal both VASPs then compute with), or undefined without a rate.
 */
export function msatsPerMinorUnit(snapshot: RateSnapshot, code: string): number | undefined {
  const exact = exactMsatsPerMinorUnit(snapshot, code);
  return exact && rateToNumber(exact);
}
