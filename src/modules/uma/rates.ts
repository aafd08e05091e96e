import { currency, isCurrency } from '../../platform/currencies.js';
import type { RateSnapshot } from '../rates/index.js';
import { parsePositiveDecimal, rateToNumber, type Ratio } from './amounts.js';

const MSATS_PER_BTC = 100_000_000_000n;

/**
 * Millisatoshis per minor unit of `code` at the rates module's mid-market rates of the current
 * window (its `perUsd` table, decimal strings, prices BTC like any currency), exactly —
 * 10^11 × BTC-per-USD ÷ (code-per-USD × 10^decimals) — and as UMA's `multiplier` publishes it
 * (`rateToNumber`: 15 significant digits, the decimal both VASPs then compute with). Undefined
 * when Corridor has no rate for it, or one too extreme for a `multiplier` to carry (0 or
 * infinite as a double). Each side of a payment converts at its own rates, as UMA intends.
 */
function msatsRate(snapshot: RateSnapshot, code: string): { exact: Ratio; published: number } | undefined {
  if (code === 'BTC') return { exact: { num: 1000n, den: 1n }, published: 1000 }; // satoshis: the minor unit of BTC
  const btcPerUsd = parsePositiveDecimal(snapshot.perUsd.BTC ?? '');
  const perUsd = parsePositiveDecimal(snapshot.perUsd[code] ?? '');
  if (!isCurrency(code) || !btcPerUsd || !perUsd) return undefined;
  const exact = { num: MSATS_PER_BTC * btcPerUsd.num * perUsd.den, den: btcPerUsd.den * perUsd.num * 10n ** BigInt(currency(code).decimals) };
  const published = rateToNumber(exact);
  return published > 0 && Number.isFinite(published) ? { exact, published } : undefined;
}

/** Corridor's own rate for `code`, exactly (msatsRate); undefined without one. */
export function exactMsatsPerMinorUnit(snapshot: RateSnapshot, code: string): Ratio | undefined {
  return msatsRate(snapshot, code)?.exact;
}

/** UMA's `multiplier` for `code` as a receiver publishes it (msatsRate); undefined without a rate. */
export function msatsPerMinorUnit(snapshot: RateSnapshot, code: string): number | undefined {
  return msatsRate(snapshot, code)?.published;
}
