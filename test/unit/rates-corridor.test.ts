import { describe, expect, it } from 'vitest';
import { RAILS } from '../../src/modules/rates/rails.js';
import { corridorRate, priceRequest, type RateSnapshot } from '../../src/modules/rates/service.js';
import { AppError } from '../../src/platform/errors.js';

/** A window whose provider rated EUR so low that USD → EUR, less its spread, rounds to 0 at 18 digits. */
const snapshot: RateSnapshot = {
  provider: 'http',
  windowStart: new Date('2026-11-20T10:00:00Z'),
  asOf: new Date('2026-11-20T10:00:00Z'),
  perUsd: { USD: '1', EUR: '0.000000000000000001', MXN: '20' },
};

describe('corridorRate', () => {
  it('refuses a corridor whose rate rounds to 0 as one without a rate (receiver lookups showed estimatedExchangeRate 0)', () => {
    const refused = (() => {
      try {
        corridorRate(snapshot, 'USD', 'EUR');
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'INVALID_CURRENCY', details: { currency: 'EUR' } });
    expect(corridorRate(snapshot, 'EUR', 'EUR').rate).toBe(10n ** 18n);
  });

  it('converts a fixed fee at mid-market even where USD → the sending currency less its spread rounds to 0', () => {
    // EUR → MXN is priced; the 1 USD cent of fee converts at the mid rate, 10^-18 EUR per USD.
    const pricing = priceRequest({ snapshot, config: { feeConfigs: [] }, sendingCurrency: 'EUR', receivingCurrency: 'MXN', route: RAILS.SPEI, lockedSide: 'SENDING', amount: 10_000n });
    expect(pricing.fees.serviceFixed).toBe(1n);
    expect(pricing.priced).toBeDefined();
  });
});
