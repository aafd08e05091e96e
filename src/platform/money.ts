/**
 * Money is an integer count of a currency's smallest unit: `bigint` inside Corridor and in the
 * database, a JSON integer on the wire. Floating point never touches an amount.
 */
import { minorUnits } from './currencies.js';

export class AmountOutOfRangeError extends Error {}

/** The largest amount the wire carries exactly, 2^53 − 1 minor units (a JSON number's safe integers). */
export const MAX_WIRE_AMOUNT = BigInt(Number.MAX_SAFE_INTEGER);

/** Wire → internal. Rejects anything that is not a safe integer. */
export function amountFromWire(value: number): bigint {
  if (!Number.isSafeInteger(value)) throw new AmountOutOfRangeError(`amount ${value} is not a safe integer`);
  return BigInt(value);
}

/** Internal → wire. An amount past 2^53 cannot be a JSON number without losing cents. */
export function amountToWire(value: bigint): number {
  if (value > MAX_WIRE_AMOUNT || value < -MAX_WIRE_AMOUNT) {
    throw new AmountOutOfRangeError(`amount ${value} exceeds the safe-integer range`);
  }
  return Number(value);
}

/** Human form, e.g. 12345n USD → "123.45"; for logs and messages, never for arithmetic. */
export function formatAmount(value: bigint, currency: string): string {
  const exp = minorUnits(currency);
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(exp + 1, '0');
  const whole = exp === 0 ? digits : digits.slice(0, -exp);
  const frac = exp === 0 ? '' : `.${digits.slice(-exp)}`;
  return `${negative ? '-' : ''}${whole}${frac}`;
}

/** `amount × bps / 10000`, rounded half away from zero, in integer arithmetic. */
export function applyBasisPoints(amount: bigint, bps: bigint): bigint {
  const product = amount * bps;
  const quotient = product / 10000n;
  const remainder = product % 10000n;
  const twice = (remainder < 0n ? -remainder : remainder) * 2n;
  if (twice >= 10000n) return quotient + (product < 0n ? -1n : 1n);
  return quotient;
}
