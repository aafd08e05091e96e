import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convertDown, crossRate, formatRate, parseRate, priceTransfer, RATE_SCALE, sendingFor, type FeeSchedule } from '../../src/modules/rates/pricing.js';

/**
 * The rounding rule of modules/quotes README, held exactly for random amounts, rates and fees
 * in both locked-side modes: the sender's total is the amount sent plus every fee, the receiver
 * gets the sent amount converted rounded down (SENDING) or exactly the locked amount (RECEIVING).
 */
const ONE = 10n ** BigInt(RATE_SCALE);
const bps = (amount: bigint, rate: bigint) => {
  const product = amount * rate;
  const q = product / 10000n;
  return (product % 10000n) * 2n >= 10000n ? q + 1n : q;
};
const feeOf = (sent: bigint, f: FeeSchedule) => f.serviceFixed + bps(sent, f.serviceBps) + f.platformFixed + bps(sent, f.platformBps);

/** Independent of the implementation: binary search for the largest sent whose cost fits in `total`. */
function largestSent(total: bigint, f: FeeSchedule): bigint {
  let lo = 0n;
  let hi = total;
  while (lo < hi) {
    const mid = (lo + hi + 1n) / 2n;
    if (mid + feeOf(mid, f) <= total) lo = mid;
    else hi = mid - 1n;
  }
  return lo;
}

const fees = fc.record({
  serviceFixed: fc.bigInt({ min: 0n, max: 5_000n }),
  serviceBps: fc.bigInt({ min: 0n, max: 1_000n }),
  platformFixed: fc.bigInt({ min: 0n, max: 5_000n }),
  platformBps: fc.bigInt({ min: 0n, max: 10_000n }),
});
// Rates from 1e-9 to 1e6 receiving units per sending unit, at full fixed-point precision.
const rate = fc.bigInt({ min: ONE / 1_000_000_000n, max: ONE * 1_000_000n });
const decimals = fc.constantFrom(0, 2, 3, 6, 8);
const amount = fc.bigInt({ min: 1n, max: 9_000_000_000_000_000n });

describe('priceTransfer: the rounding rule', () => {
  it('SENDING: the sender pays exactly the amount; sent is the largest that fits; the receiver gets sent converted, rounded down', () => {
    fc.assert(
      fc.property(amount, rate, decimals, decimals, fees, (locked, r, ds, dr, f) => {
        const priced = priceTransfer({ lockedSide: 'SENDING', amount: locked, rate: r, sendingDecimals: ds, receivingDecimals: dr, fees: f });
        const largest = largestSent(locked, f);
        if (!priced) {
          // Refused only when nothing can be sent: the fees take it all, or it converts to nothing.
          expect(largest === 0n || convertDown(largest, r, ds, dr) === 0n).toBe(true);
          return;
        }
        expect(priced.sent).toBe(largest);
        expect(priced.total).toBe(locked);
        expect(priced.total).toBe(priced.sent + priced.serviceFee + priced.platformFee);
        const exactFees = feeOf(priced.sent, f);
        const remainder = priced.serviceFee + priced.platformFee - exactFees;
        expect(remainder >= 0n && remainder <= 2n).toBe(true);
        expect(priced.received).toBe((priced.sent * r * 10n ** BigInt(dr)) / (ONE * 10n ** BigInt(ds)));
        expect(priced.received > 0n).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('RECEIVING: the receiver gets exactly the amount; sent is the fewest units that buy it; total = sent + fees', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), rate, decimals, decimals, fees, (locked, r, ds, dr, f) => {
        const priced = priceTransfer({ lockedSide: 'RECEIVING', amount: locked, rate: r, sendingDecimals: ds, receivingDecimals: dr, fees: f })!;
        expect(priced.received).toBe(locked);
        expect(priced.total).toBe(priced.sent + priced.serviceFee + priced.platformFee);
        expect(priced.serviceFee + priced.platformFee).toBe(feeOf(priced.sent, f));
        expect(convertDown(priced.sent, r, ds, dr) >= locked).toBe(true);
        expect(convertDown(priced.sent - 1n, r, ds, dr) < locked).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('same currency: rate 1 moves amounts unchanged', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n }), decimals, (locked, d) => {
        const priced = priceTransfer({ lockedSide: 'SENDING', amount: locked, rate: ONE, sendingDecimals: d, receivingDecimals: d, fees: { serviceFixed: 0n, serviceBps: 0n, platformFixed: 0n, platformBps: 0n } })!;
        expect(priced).toMatchObject({ sent: locked, received: locked, total: locked, serviceFee: 0n, platformFee: 0n });
      }),
    );
  });

  it('rates are exact decimals: cross rates round down at the 18th digit; sendingFor inverts convertDown', () => {
    expect(formatRate(crossRate('1', '0.866', 0n))).toBe('0.866');
    expect(formatRate(crossRate('1', '18.45', 25n))).toBe('18.403875');
    expect(formatRate(crossRate('0.866', '1', 0n))).toBe('1.154734411085450346');
    expect(parseRate('0.92')).toBe(92n * 10n ** 16n);
    expect(sendingFor(9200n, parseRate('0.92'), 2, 2)).toBe(10000n);
    expect(sendingFor(9201n, parseRate('0.92'), 2, 2)).toBe(10002n);
  });
});
