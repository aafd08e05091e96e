import { describe, expect, it } from 'vitest';
import { fromUsdMinor, parseRate, priceTransfer, UNIT_RATE, type FeeSchedule } from '../../src/modules/rates/pricing.js';

/**
 * Who gets what of a price (modules/quotes README, rounding rule): the 0–2 minor units a
 * SENDING-locked total leaves after rounding the fees are Corridor's service fee, never the
 * platform's, whose fee is exactly its fixed part plus its basis points of the amount sent; and a
 * limit set in US cents is converted rounded up (execute.ts `limitIn`).
 */
const bps = (amount: bigint, rate: bigint) => {
  const product = amount * rate;
  return (product % 10000n) * 2n >= 10000n ? product / 10000n + 1n : product / 10000n;
};

describe('priceTransfer: the SENDING remainder is Corridor’s', () => {
  it('the platform’s fee is exactly its schedule; the service fee takes the remainder, in its variable part', () => {
    const fees: FeeSchedule = { serviceFixed: 3n, serviceBps: 25n, platformFixed: 2n, platformBps: 150n };
    let remainders = 0;
    for (let amount = 1_000n; amount <= 5_000n; amount++) {
      const priced = priceTransfer({ lockedSide: 'SENDING', amount, rate: UNIT_RATE, sendingDecimals: 2, receivingDecimals: 2, fees })!;
      const service = fees.serviceFixed + bps(priced.sent, fees.serviceBps);
      const remainder = amount - priced.sent - service - (fees.platformFixed + bps(priced.sent, fees.platformBps));
      expect(priced.platformFee, `SENDING ${amount}`).toBe(fees.platformFixed + bps(priced.sent, fees.platformBps));
      expect(priced.serviceFee, `SENDING ${amount}`).toBe(service + remainder);
      expect(priced.serviceVariableFee, `SENDING ${amount}`).toBe(bps(priced.sent, fees.serviceBps) + remainder);
      if (remainder > 0n) remainders++;
    }
    // The amounts chosen do leave remainders (else the test would hold whoever took them).
    expect(remainders).toBeGreaterThan(10);
  });
});

describe('fromUsdMinor: a limit in US cents, rounded up', () => {
  it('rounds any fraction of a minor unit up', () => {
    expect(fromUsdMinor(1n, parseRate('0.92'), 2)).toBe(1n);
    expect(fromUsdMinor(100_000_000n, parseRate('17.123456789'), 2)).toBe(1_712_345_679n);
    expect(fromUsdMinor(100n, parseRate('0.92'), 2)).toBe(92n);
  });
});
