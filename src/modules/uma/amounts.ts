/**
 * UMA's amount arithmetic, exact. The protocol carries amounts as integers (minor units,
 * millisatoshis) but rates as JSON numbers: `multiplier`, millisatoshis per receiving minor unit.
 * A multiplier is taken at the decimal it prints as (`String`, its shortest round-trip form) as
 * an exact ratio of bigints, and every amount is computed from it in bigint and rounded once, to
 * the side its function names (README, "Amounts"). A float never touches an amount: 10^11 minor
 * units at thousands of msats each is past 2^53, where a double no longer counts msats.
 */

/** A positive rational, `num / den`. */
export interface Ratio {
  readonly num: bigint;
  readonly den: bigint;
}

const PRINTED_NUMBER = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;
const PLAIN_DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/** Millisatoshis in a satoshi (LUD-06 limits are whole satoshis). */
const MSATS_PER_SAT = 1000n;

/** The SDK writes a limit's msats (sats × 1000) as a JSON number: no more than that carries exactly. */
const MAX_SENDABLE_SATS = BigInt(Number.MAX_SAFE_INTEGER) / MSATS_PER_SAT;

/** Lightning's largest amount, 21 million BTC: BOLT 11 encodes no invoice above it. */
export const MAX_INVOICE_MSATS = 2_100_000_000_000_000_000n;

/** The exact value of a finite positive number: the decimal JavaScript prints for it ("493.22", "1e-7"). */
export function exactDecimal(value: number): Ratio {
  const match = PRINTED_NUMBER.exec(String(value));
  if (!match || !(value > 0)) throw new RangeError(`${value} is not a finite positive number`);
  const fraction = match[2] ?? '';
  const exponent = Number(match[3] ?? '0') - fraction.length;
  const digits = BigInt(match[1]! + fraction);
  return exponent >= 0 ? { num: digits * 10n ** BigInt(exponent), den: 1n } : { num: digits, den: 10n ** BigInt(-exponent) };
}

/** A plain positive decimal string ("0.0000091", "18.45") as an exact ratio; undefined for anything else. */
export function parsePositiveDecimal(text: string): Ratio | undefined {
  const match = PLAIN_DECIMAL.exec(text);
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  const num = BigInt(match[1]! + fraction);
  return num > 0n ? { num, den: 10n ** BigInt(fraction.length) } : undefined;
}

/** `a / b` rounded toward −∞ (`b` > 0; bigint division truncates toward zero). */
function floorDiv(a: bigint, b: bigint): bigint {
  const quotient = a / b;
  return a % b < 0n ? quotient - 1n : quotient;
}

/** `a / b` rounded toward +∞ (`b` > 0). */
function ceilDiv(a: bigint, b: bigint): bigint {
  return -floorDiv(-a, b);
}

/**
 * The invoice for `amount` receiving minor units (a pay request in the receiving currency):
 * `amount × multiplier`, rounded up, plus the fee. Up: the payer never pays less than the
 * amount converted; the receiving VASP keeps the fraction of a millisatoshi.
 */
export function invoiceMsats(amount: bigint, multiplier: Ratio, feeMsats: bigint): bigint {
  return ceilDiv(amount * multiplier.num, multiplier.den) + feeMsats;
}

/**
 * What `msats` pay the receiver (a pay request in msats): `(msats − fee) / multiplier`, rounded
 * down, 0 when the fee takes it all. Down: the receiver never gets more than was paid for.
 */
export function receivedFor(msats: bigint, multiplier: Ratio, feeMsats: bigint): bigint {
  const received = floorDiv((msats - feeMsats) * multiplier.den, multiplier.num);
  return received > 0n ? received : 0n;
}

/**
 * The millisatoshis a SENDING lock of `amount` sending minor units buys at Corridor's `rate`
 * (msats per sending minor unit): rounded down, so what goes out is never worth more than what
 * the customer pays.
 */
export function msatsBought(amount: bigint, rate: Ratio): bigint {
  return floorDiv(amount * rate.num, rate.den);
}

/**
 * What an invoice of `msats` costs the customer in sending minor units at Corridor's `rate`:
 * rounded up, the fewest minor units worth at least the invoice.
 */
export function sendingCost(msats: bigint, rate: Ratio): bigint {
  return ceilDiv(msats * rate.den, rate.num);
}

/**
 * The receiver's fee (msats) in receiving minor units, as a quote shows it
 * (`counterpartyFixedFee`): rounded up, a fee is not shown smaller than it is.
 */
export function feeInMinorUnits(feeMsats: bigint, multiplier: Ratio): bigint {
  return ceilDiv(feeMsats * multiplier.den, multiplier.num);
}

/**
 * Whether an invoice of `msats` is what converting `amount` at `multiplier` plus `feeMsats`
 * costs (`amount × multiplier + fee`), compared exactly. `amountLocked`: the amount was the one
 * asked for and the receiver made the invoice from it, rounding to a whole msat — within 1 msat.
 * Otherwise the invoice was the msats asked for and the receiver rounded the amount, whichever
 * way — within one minor unit's worth, short of it.
 */
export function invoiceCovers(msats: bigint, amount: bigint, multiplier: Ratio, feeMsats: bigint, amountLocked: boolean): boolean {
  // (msats − fee − amount × num / den) × den, kept whole.
  const offBy = (msats - feeMsats) * multiplier.den - amount * multiplier.num;
  const distance = offBy < 0n ? -offBy : offBy;
  return amountLocked ? distance <= multiplier.den : distance < multiplier.num;
}

/**
 * LUD-06 `minSendable`/`maxSendable` in whole satoshis for a receiver's currencies (limits in
 * minor units): the least that buys some currency's minimum (rounded up), the most that stays
 * within some currency's maximum (rounded down), at least 1, at most what a JSON number
 * carries exactly in msats.
 */
export function sendableSats(currencies: ReadonlyArray<{ min: bigint; max: bigint; multiplier: Ratio }>): { min: number; max: number } {
  let min: bigint | undefined;
  let max: bigint | undefined;
  for (const c of currencies) {
    const low = ceilDiv(c.min * c.multiplier.num, c.multiplier.den * MSATS_PER_SAT);
    const high = floorDiv(c.max * c.multiplier.num, c.multiplier.den * MSATS_PER_SAT);
    if (min === undefined || low < min) min = low;
    if (max === undefined || high > max) max = high;
  }
  const clamp = (sats: bigint | undefined) => Number(sats === undefined || sats < 1n ? 1n : sats > MAX_SENDABLE_SATS ? MAX_SENDABLE_SATS : sats);
  return { min: clamp(min), max: clamp(max) };
}

/**
 * `value` as a plain decimal string of `digits` significant digits, rounded half up, trailing
 * zeros trimmed ("0.0510204081633", "1200"). For rates shown, never for amounts.
 */
export function significant(value: Ratio, digits: number): string {
  const scaled = (shift: number) =>
    shift >= 0 ? { num: value.num * 10n ** BigInt(shift), den: value.den } : { num: value.num, den: value.den * 10n ** BigInt(-shift) };
  // Shift so the integer part has `digits` digits: log10(value) is within one of the lengths' difference.
  let shift = digits - 1 - (value.num.toString().length - value.den.toString().length);
  let shifted = scaled(shift);
  if (shifted.num < 10n ** BigInt(digits - 1) * shifted.den) shifted = scaled(++shift);
  let rounded = (2n * shifted.num + shifted.den) / (2n * shifted.den);
  if (rounded === 10n ** BigInt(digits)) {
    rounded /= 10n;
    shift--;
  }
  // The fraction's trailing zeros dropped from `rounded` itself: /0+$/ on the padded text
  // backtracks quadratically over the leading zeros of a tiny ratio's fraction.
  while (shift > 0 && rounded % 10n === 0n) {
    rounded /= 10n;
    shift--;
  }
  if (shift <= 0) return rounded.toString() + '0'.repeat(-shift);
  const text = rounded.toString().padStart(shift + 1, '0');
  return `${text.slice(0, -shift)}.${text.slice(-shift)}`;
}

/**
 * A rate as a JSON number: the exact rate to 15 significant digits, which a double holds so that
 * it prints back as that very decimal. UMA's `multiplier` is published so, hence the VASP that
 * publishes it and the one that reads it (`exactDecimal`) compute with the same exact value.
 */
export function rateToNumber(value: Ratio): number {
  return Number(significant(value, 15));
}
