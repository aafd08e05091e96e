import { describe, expect, it } from 'vitest';
import { exactDecimal, invoiceCovers, sendableSats } from '../../src/modules/uma/amounts.js';

/**
 * Edges of UMA's amount arithmetic (modules/uma/amounts.ts) that the property tests of
 * uma-amounts.test.ts do not reach: LUD-06 limits over several currencies, and an invoice exactly
 * one msat off an amount whose conversion is whole.
 */

describe('sendableSats over several currencies', () => {
  it('the least sats that buy some currency’s minimum, the most that stay within some currency’s maximum, whichever order they come in', () => {
    // 100 minor units at 10 msats = 1 sat; 1,000 at 1,000 msats = 1,000 sats. Maxima: 10^6 × 10 msats = 10,000 sats; 10^5 × 1,000 msats = 100,000 sats.
    const cheap = { min: 100n, max: 1_000_000n, multiplier: exactDecimal(10) };
    const dear = { min: 1_000n, max: 100_000n, multiplier: exactDecimal(1000) };
    expect(sendableSats([cheap, dear])).toEqual({ min: 1, max: 100_000 });
    expect(sendableSats([dear, cheap])).toEqual({ min: 1, max: 100_000 });
    const third = { min: 500n, max: 2_000n, multiplier: exactDecimal(40) }; // 20 sats to 80 sats
    expect(sendableSats([dear, third])).toEqual({ min: 20, max: 100_000 });
    expect(sendableSats([third, dear])).toEqual({ min: 20, max: 100_000 });
  });
});

describe('sendableSats, at least 1 sat', () => {
  it('a minimum of nothing, or a maximum worth less than a sat, is 1 sat: LUD-06 sends no 0', () => {
    // 0 to 50 minor units at 10 msats: 0 sats to 0.5 sat.
    expect(sendableSats([{ min: 0n, max: 50n, multiplier: exactDecimal(10) }])).toEqual({ min: 1, max: 1 });
  });
});

describe('invoiceCovers, the amount locked', () => {
  it('an invoice exactly 1 msat off a whole conversion is within the rounding allowed; 2 msats off is not', () => {
    const two = exactDecimal(2); // 10 minor units are exactly 20 msats
    expect(invoiceCovers(20n, 10n, two, 0n, true)).toBe(true);
    expect(invoiceCovers(21n, 10n, two, 0n, true)).toBe(true);
    expect(invoiceCovers(19n, 10n, two, 0n, true)).toBe(true);
    expect(invoiceCovers(22n, 10n, two, 0n, true)).toBe(false);
    expect(invoiceCovers(18n, 10n, two, 0n, true)).toBe(false);
    // With a fee, and a multiplier that is not whole: 10 × 2.5 + 3 = 28 msats.
    const twoAndHalf = exactDecimal(2.5);
    expect(invoiceCovers(29n, 10n, twoAndHalf, 3n, true)).toBe(true);
    expect(invoiceCovers(27n, 10n, twoAndHalf, 3n, true)).toBe(true);
    expect(invoiceCovers(30n, 10n, twoAndHalf, 3n, true)).toBe(false);
  });
});
