import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  exactDecimal,
  feeInMinorUnits,
  invoiceCovers,
  invoiceMsats,
  msatsBought,
  parsePositiveDecimal,
  rateToNumber,
  receivedFor,
  sendableSats,
  sendingCost,
  significant,
  type Ratio,
} from '../../src/modules/uma/amounts.js';

/**
 * UMA's amount arithmetic (modules/uma README, "Amounts"), held exactly for amounts up to 10^11
 * minor units and multipliers across what a minor unit is worth in millisatoshis (10^-4 to 10^7):
 * every result is compared, by cross-multiplication in bigint, with the rational it rounds.
 */

// A multiplier as a VASP publishes it: a double, most often the 15-significant-digit form of a rate.
const multiplier = fc.oneof(
  fc.double({ min: 1e-4, max: 1e7, noNaN: true, noDefaultInfinity: true }).filter((x) => x > 0),
  fc.tuple(fc.bigInt({ min: 10n ** 14n, max: 10n ** 15n - 1n }), fc.integer({ min: -18, max: -8 })).map(([digits, exponent]) => Number(`${digits}e${exponent}`)),
  fc.integer({ min: 1, max: 10_000_000 }),
);
const amount = fc.bigInt({ min: 1n, max: 100_000_000_000n });
const fee = fc.bigInt({ min: 0n, max: 1_000_000_000n });
// Corridor's own rate, msats per sending minor unit, straight from decimal strings.
const rate = fc
  .tuple(fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.bigInt({ min: 1n, max: 10n ** 12n }))
  .map(([num, den]): Ratio => ({ num, den }))
  .filter((r) => r.num * 10_000n >= r.den && r.num <= r.den * 10_000_000n);

const times = (x: bigint, r: Ratio) => x * r.num; // x × r, over r.den

describe('exactDecimal', () => {
  it('is the decimal the number prints as, and gives the number back', () => {
    fc.assert(
      fc.property(multiplier, (m) => {
        const exact = exactDecimal(m);
        expect(Number(significant(exact, 17))).toBe(m);
      }),
    );
    expect(exactDecimal(493.224932249322)).toEqual({ num: 493224932249322n, den: 10n ** 12n });
    expect(exactDecimal(1e-7)).toEqual({ num: 1n, den: 10n ** 7n });
    expect(exactDecimal(1.5e21)).toEqual({ num: 15n * 10n ** 20n, den: 1n });
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => exactDecimal(bad)).toThrow(RangeError);
  });

  it('a rate published to 15 significant digits is read back as exactly that decimal', () => {
    fc.assert(
      fc.property(rate, (r) => {
        const published = rateToNumber(r);
        const read = exactDecimal(published);
        const decimal = parsePositiveDecimal(significant(r, 15))!;
        expect(read.num * decimal.den).toBe(decimal.num * read.den);
      }),
    );
  });
});

describe('the receiving VASP: invoices and conversions', () => {
  it('invoice msats = amount × multiplier + fee, exactly, rounded up to a whole msat', () => {
    fc.assert(
      fc.property(amount, multiplier, fee, (a, m, f) => {
        const r = exactDecimal(m);
        const invoice = invoiceMsats(a, r, f);
        // (invoice − fee − 1) < a × m ≤ invoice − fee
        expect((invoice - f) * r.den >= times(a, r)).toBe(true);
        expect((invoice - f - 1n) * r.den < times(a, r)).toBe(true);
      }),
    );
  });

  it('a whole product is invoiced as it is, past 2^53 msats too, where a double miscounts it', () => {
    fc.assert(
      fc.property(amount, fc.integer({ min: 1, max: 10_000_000 }), fee, (a, m, f) => {
        expect(invoiceMsats(a, exactDecimal(m), f)).toBe(a * BigInt(m) + f);
      }),
    );
    // 99,999,999,014 minor units at 123,456.789 msats each: 12,345,678,778,271,607 msats, which no double holds (past 2^53 they are even).
    expect(invoiceMsats(99_999_999_014n, exactDecimal(123456.789), 0n)).toBe(12_345_678_778_271_607n);
    expect(BigInt(Math.round(99_999_999_014 * 123456.789))).not.toBe(12_345_678_778_271_607n);
  });

  it('what msats pay the receiver is never worth more than was paid, and is the most that is not', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }), multiplier, fee, (msats, m, f) => {
        const r = exactDecimal(m);
        const received = receivedFor(msats, r, f);
        expect(received >= 0n).toBe(true);
        // received × m + fee ≤ msats < (received + 1) × m + fee, unless the fee takes it all.
        expect(times(received, r) <= (msats - f) * r.den || (received === 0n && msats < f)).toBe(true);
        expect(times(received + 1n, r) > (msats - f) * r.den).toBe(true);
      }),
    );
  });

  it('round trips: an invoice for an amount buys at least it; what msats bought costs no more than they were', () => {
    fc.assert(
      fc.property(amount, multiplier, fee, (a, m, f) => {
        const r = exactDecimal(m);
        expect(receivedFor(invoiceMsats(a, r, f), r, f) >= a).toBe(true);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }), multiplier, fee, (msats, m, f) => {
        const r = exactDecimal(m);
        const received = receivedFor(msats, r, f);
        if (received > 0n) expect(invoiceMsats(received, r, f) <= msats).toBe(true);
      }),
    );
  });

  it('LUD-06 limits: the least whole sats that buy the minimum, the most that stay within the maximum, exact in msats', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 9n }), fc.bigInt({ min: 0n, max: 10n ** 14n }), multiplier, (min, span, m) => {
        const r = exactDecimal(m);
        const max = min + span;
        const sats = sendableSats([{ min, max, multiplier: r }]);
        expect(Number.isSafeInteger(sats.max * 1000)).toBe(true);
        const ceiling = BigInt(Number.MAX_SAFE_INTEGER) / 1000n;
        const minSats = BigInt(sats.min);
        if (minSats > 1n && minSats < ceiling) expect((minSats - 1n) * 1000n * r.den < times(min, r)).toBe(true);
        if (minSats < ceiling) expect(minSats * 1000n * r.den >= times(min, r)).toBe(true);
        const maxSats = BigInt(sats.max);
        if (maxSats > 1n && maxSats < ceiling) {
          expect(maxSats * 1000n * r.den <= times(max, r)).toBe(true);
          expect((maxSats + 1n) * 1000n * r.den > times(max, r)).toBe(true);
        }
      }),
    );
    expect(sendableSats([])).toEqual({ min: 1, max: 1 });
    expect(sendableSats([{ min: 100n, max: 10n ** 14n, multiplier: exactDecimal(493.224932249322) }])).toEqual({ min: 50, max: Math.floor(Number.MAX_SAFE_INTEGER / 1000) });
  });
});

describe('the sending VASP: what the customer pays, and what it accepts of the receiver', () => {
  it('a SENDING lock buys msats rounded down; an invoice costs sending minor units rounded up; neither way gives away a fraction', () => {
    fc.assert(
      fc.property(amount, rate, (locked, r) => {
        const msats = msatsBought(locked, r);
        expect(msats * r.den <= times(locked, r)).toBe(true);
        expect((msats + 1n) * r.den > times(locked, r)).toBe(true);
        // The msats a lock bought never cost more than the lock.
        expect(sendingCost(msats, r) <= locked).toBe(true);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 2_100_000_000_000_000_000n }), rate, (msats, r) => {
        const cost = sendingCost(msats, r);
        expect(times(cost, r) >= msats * r.den).toBe(true);
        expect(times(cost - 1n, r) < msats * r.den).toBe(true);
      }),
    );
  });

  it('the fee in receiving minor units is rounded up, and exact when whole (123 msats at 4.1 is 30, not 31)', () => {
    fc.assert(
      fc.property(fee, multiplier, (f, m) => {
        const r = exactDecimal(m);
        const shown = feeInMinorUnits(f, r);
        expect(times(shown, r) >= f * r.den).toBe(true);
        if (shown > 0n) expect(times(shown - 1n, r) < f * r.den).toBe(true);
      }),
    );
    expect(feeInMinorUnits(123n, exactDecimal(4.1))).toBe(30n);
    expect(Math.ceil(123 / 4.1)).toBe(31);
  });

  it('accepts what an exact receiver and an SDK receiver invoice, and nothing 2 msats (or a minor unit) further off', () => {
    fc.assert(
      fc.property(amount, multiplier, fee, (a, m, f) => {
        const r = exactDecimal(m);
        const exact = invoiceMsats(a, r, f);
        expect(invoiceCovers(exact, a, r, f, true)).toBe(true);
        expect(invoiceCovers(exact + 2n, a, r, f, true)).toBe(false);
        expect(invoiceCovers(exact - 2n, a, r, f, true)).toBe(false);
        // The SDK's getPayReqResponse: Math.round(amount × multiplier + fee) in doubles, within
        // 1 msat while the double carries a quarter msat (below 2^50 msats; README, "Amounts").
        const sdk = Math.round(Number(a) * m + Number(f));
        if (sdk < 2 ** 50) expect(invoiceCovers(BigInt(sdk), a, r, f, true)).toBe(true);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: BigInt(Number.MAX_SAFE_INTEGER) }), multiplier, fee, (msats, m, f) => {
        const r = exactDecimal(m);
        const floor = receivedFor(msats, r, f);
        fc.pre(floor > 0n);
        // Rounded down (Corridor) or to nearest (the SDK): both within a minor unit's worth.
        expect(invoiceCovers(msats, floor, r, f, false)).toBe(true);
        const sdk = Math.round((Number(msats) - Number(f)) / m);
        if (sdk < 2 ** 50) expect(invoiceCovers(msats, BigInt(sdk), r, f, false)).toBe(true);
        expect(invoiceCovers(msats, floor + 2n, r, f, false)).toBe(false);
        if (floor > 1n) expect(invoiceCovers(msats, floor - 1n, r, f, false)).toBe(false);
      }),
    );
  });
});

describe('significant', () => {
  it('rounds to the digits asked, half up, as a plain decimal', () => {
    expect(significant({ num: 46_951n, den: 1n }, 12)).toBe('46951');
    expect(significant({ num: 2n, den: 3n }, 12)).toBe('0.666666666667');
    expect(significant({ num: 999_999_999_999_5n, den: 10n }, 12)).toBe('1000000000000');
    expect(significant({ num: 1n, den: 10n ** 9n }, 12)).toBe('0.000000001');
    expect(significant({ num: 12_345n, den: 1n }, 2)).toBe('12000');
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 30n }), fc.bigInt({ min: 1n, max: 10n ** 30n }), fc.integer({ min: 1, max: 20 }), (num, den, digits) => {
        const text = significant({ num, den }, digits);
        const shown = parsePositiveDecimal(text)!;
        expect(text.replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length <= digits).toBe(true);
        // |shown − num/den| ≤ half a unit of the last digit kept: 10^(e − digits + 1) / 2, e = floor(log10 of the value).
        const e = BigInt(text.split('.')[0] === '0' ? -(text.split('.')[1]!.match(/^0*/)![0].length + 1) : text.split('.')[0]!.length - 1);
        const unitExponent = e - BigInt(digits) + 1n;
        const distance = shown.num * den - num * shown.den;
        const abs = distance < 0n ? -distance : distance;
        const bound = unitExponent >= 0n ? 10n ** unitExponent * shown.den * den : shown.den * den;
        const scale = unitExponent >= 0n ? 2n : 2n * 10n ** -unitExponent;
        expect(abs * scale <= bound).toBe(true);
      }),
    );
  });
});
