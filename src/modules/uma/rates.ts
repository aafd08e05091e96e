import { currency, isCurrency } from '../../platform/currencies.js';
import type { RateSnapshot } from '../rates/index.js';

const MSATS_PER_BTC = 100_000_000_000;

/**
 * UMA's `multiplier`: millisatoshis per minor unit of `code` at the rates module's mid-market
 * rates of the current window (its `perUsd` table prices BTC like any currency), or undefined
 * when Corridor has no rate for it. The Lightning leg carries the value; each side converts at
 * its own rates, as UMA intends.
 */
export function msatsPerMinorUnit(snapshot: RateSnapshot, code: string): number | undefined {
  if (code === 'BTC') return 1000; // satoshis: the minor unit of BTC
  const btcPerUsd = Number(snapshot.perUsd.BTC);
  const perUsd = Number(snapshot.perUsd[code]);
  if (!isCurrency(code) || !(btcPerUsd > 0) || !(perUsd > 0)) return undefined;
  return (MSATS_PER_BTC * btcPerUsd) / perUsd / 10 ** currency(code).decimals;
}
