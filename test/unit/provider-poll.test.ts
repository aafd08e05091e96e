import { describe, expect, it } from 'vitest';
import { providerPollMs } from '../../src/modules/transactions/payment-steps.js';

describe('how often a provider answering PENDING is asked again', () => {
  it('every minute for the first hour of runs, then doubling, never more than an hour apart', () => {
    expect(providerPollMs(1)).toBe(60_000);
    expect(providerPollMs(60)).toBe(60_000);
    expect(providerPollMs(61)).toBe(120_000);
    expect(providerPollMs(62)).toBe(240_000);
    expect(providerPollMs(66)).toBe(3_600_000);
    expect(providerPollMs(999)).toBe(3_600_000);
  });

  it("a payment's 1,000 runs (SETTLE_MAX_ATTEMPTS) ask for more than a month, not 1,000 minutes", () => {
    let waited = 0;
    for (let attempts = 1; attempts < 1_000; attempts++) waited += providerPollMs(attempts);
    expect(waited).toBeGreaterThan(38 * 86_400_000);
  });
});
