import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { PlatformConfig } from '../../src/modules/config/index.js';
import { corridorRate, NETWORKS, NO_FEES, platformFeeOf, priceRequest, priceTransfer, RAILS, routeServes, spreadBps, type RateSnapshot } from '../../src/modules/rates/index.js';
import { listExchangeRates } from '../../src/modules/rates/listing.js';
import { BUILT_IN_RATES_AS_OF, BUILT_IN_RATES_PER_USD } from '../../src/modules/rates/table.js';

/**
 * The rates module's rules as its README states them, one by one: the spread of each class of
 * corridor (and which class wins where two apply), whose fee a platform charges, and the
 * amounts that make no transfer.
 */
const snapshot: RateSnapshot = { provider: 'built-in', windowStart: new Date(0), asOf: new Date(BUILT_IN_RATES_AS_OF), perUsd: { ...BUILT_IN_RATES_PER_USD } };

describe('spreadBps: below mid-market, per corridor (README "Spreads")', () => {
  it.each([
    ['USD', 'USD', 0n],
    ['BTC', 'BTC', 0n],
    // Between two of USD, USDC, USDT: 10, either way.
    ['USD', 'USDC', 10n],
    ['USDT', 'USD', 10n],
    ['USDC', 'USDT', 10n],
    // Two majors: 25, HKD and SGD as much as EUR.
    ['USD', 'EUR', 25n],
    ['GBP', 'JPY', 25n],
    ['USD', 'HKD', 25n],
    ['SGD', 'CHF', 25n],
    // A frontier currency on either side: 150, whatever the other side is (a dollar, a major or BTC).
    ['USD', 'NGN', 150n],
    ['KES', 'EUR', 150n],
    ['USDC', 'ARS', 150n],
    ['BTC', 'NGN', 150n],
    ['VND', 'BTC', 150n],
    // BTC against anything else: 50.
    ['BTC', 'USD', 50n],
    ['EUR', 'BTC', 50n],
    ['BTC', 'USDT', 50n],
    // Any other pair: 75 — a stablecoin is not a major, MXN is neither.
    ['USD', 'MXN', 75n],
    ['USDC', 'EUR', 75n],
    ['INR', 'BRL', 75n],
  ] as const)('%s → %s: %i bps', (from, to, bps) => {
    expect(spreadBps(from, to)).toBe(bps);
  });
});

describe('platformFeeOf (README "Platform fee")', () => {
  const config = {
    feeConfigs: [
      { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'EUR', variableFeeBps: 40, fixedFee: { amount: 7, currency: 'EUR' } },
      { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100, fixedFee: { amount: 50, currency: 'USD' } },
    ],
  } as unknown as Parameters<typeof platformFeeOf>[0];

  it("the sending currency's own CROSS_CURRENCY_TRANSACTION fee when the currencies differ, another currency's never", () => {
    expect(platformFeeOf(config, 'USD', 'MXN')).toEqual({ fixed: 50n, variableBps: 100n });
    expect(platformFeeOf(config, 'EUR', 'USD')).toEqual({ fixed: 7n, variableBps: 40n });
    expect(platformFeeOf(config, 'GBP', 'USD')).toEqual({ fixed: 0n, variableBps: 0n });
  });

  it('none for the same currency; an override wins over everything, the same currency included', () => {
    expect(platformFeeOf(config, 'USD', 'USD')).toEqual({ fixed: 0n, variableBps: 0n });
    const override = { fixed: 3n, variableBps: 9n };
    expect(platformFeeOf(config, 'USD', 'MXN', override)).toBe(override);
    expect(platformFeeOf(config, 'USD', 'USD', override)).toBe(override);
  });
});

describe('amounts that make no transfer', () => {
  it('an amount of 0 prices nothing, on either locked side', () => {
    for (const lockedSide of ['SENDING', 'RECEIVING'] as const) {
      expect(priceTransfer({ lockedSide, amount: 0n, rate: corridorRate(snapshot, 'USD', 'EUR').rate, sendingDecimals: 2, receivingDecimals: 2, fees: NO_FEES }), lockedSide).toBeUndefined();
    }
  });

  it('a SENDING amount that converts to less than one receiving unit prices nothing (a quote for it is INVALID_AMOUNT)', () => {
    // 267 VND buy 0.998 US cents less the 150 bps spread: less than a cent; 268 buy one.
    const rate = corridorRate(snapshot, 'VND', 'USD').rate;
    expect(priceTransfer({ lockedSide: 'SENDING', amount: 267n, rate, sendingDecimals: 0, receivingDecimals: 2, fees: NO_FEES })).toBeUndefined();
    expect(priceTransfer({ lockedSide: 'SENDING', amount: 268n, rate, sendingDecimals: 0, receivingDecimals: 2, fees: NO_FEES })).toMatchObject({ sent: 268n, received: 1n });
    // Through priceRequest, as GET /exchange-rates and quotes price it: ACH's 25 US cents are 6580 VND, the one VND left buys nothing.
    const pricing = priceRequest({ snapshot, config: { feeConfigs: [] }, sendingCurrency: 'VND', receivingCurrency: 'USD', route: RAILS.ACH, lockedSide: 'SENDING', amount: 6581n });
    expect(pricing.fees.serviceFixed).toBe(6580n);
    expect(pricing.priced).toBeUndefined();
  });
});

describe('the rail catalogue (README "Rails")', () => {
  it('is the README table: currencies, settlement, quote lifetime and service fee of every rail', () => {
    const readme = readFileSync(new URL('../../src/modules/rates/README.md', import.meta.url), 'utf8');
    const seconds = (text: string) => {
      const [n, unit] = text.split(' ') as [string, string];
      return Number(n) * ({ s: 1, min: 60, h: 3600, day: 86_400, days: 86_400 } as Record<string, number>)[unit]!;
    };
    const rows = readme.split('\n').filter((line) => /^\| [A-Z_]+ \|/.test(line) && !line.startsWith('| Rail'));
    expect(rows.map((row) => row.split('|')[1]!.trim())).toEqual(Object.keys(RAILS));
    for (const row of rows) {
      const [rail, currencies, settles, lives, fee] = row.split('|').slice(1, 6).map((cell) => cell.trim()) as [keyof typeof RAILS, string, string, string, string];
      const [fixed, bps] = fee.split(' + ');
      expect(
        {
          currencies: RAILS[rail].currencies,
          settles: RAILS[rail].settlementSeconds,
          lives: RAILS[rail].quoteExpirySeconds,
          fee: RAILS[rail].serviceFee,
        },
        rail,
      ).toEqual({
        currencies: currencies === 'any fiat' ? 'ANY_FIAT' : currencies.split(' '),
        settles: seconds(settles),
        lives: seconds(lives),
        fee: { fixedUsdMinor: BigInt(fixed!), variableBps: BigInt(bps!) },
      });
    }
  });

  it('a rail of any fiat currency pays no crypto currency; a network pays its own', () => {
    for (const rail of ['BANK_TRANSFER', 'RTGS', 'SWIFT'] as const) {
      expect(routeServes(RAILS[rail], 'CHF'), rail).toBe(true);
      for (const crypto of ['BTC', 'USDC', 'USDT']) expect(routeServes(RAILS[rail], crypto), `${rail} ${crypto}`).toBe(false);
    }
    expect(routeServes(NETWORKS.ETHEREUM, 'USDT')).toBe(true);
    expect(routeServes(NETWORKS.ETHEREUM, 'BTC')).toBe(false);
  });

  it('GET /exchange-rates lists no bank rail to a crypto currency', () => {
    const config = {
      supportedCurrencies: [{ currencyCode: 'USD', minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] }],
      feeConfigs: [],
    } as unknown as PlatformConfig;
    const listed = listExchangeRates(snapshot, config, { destinationCurrency: ['BTC', 'USDC', 'CHF'] });
    expect(listed.map((r) => `${r.destinationCurrency.code}/${r.destinationPaymentRail}`).sort()).toEqual(['CHF/BANK_TRANSFER', 'CHF/RTGS', 'CHF/SWIFT']);
  });
});

describe('GET /exchange-rates at the edge of what the answer carries', () => {
  it('lists a receivingAmount of exactly 2^53 − 1; one more sending unit buys past it: AMOUNT_OUT_OF_RANGE', () => {
    const config = {
      supportedCurrencies: [{ currencyCode: 'USD', minAmount: 1, maxAmount: Number.MAX_SAFE_INTEGER, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] }],
      feeConfigs: [],
    } as unknown as PlatformConfig;
    // USD → DKK: this amount buys exactly 2^53 − 1 øre on the rail with the smallest fees (SEPA).
    const amount = 1_398_496_683_561_612;
    const listed = listExchangeRates(snapshot, config, { destinationCurrency: ['DKK'], sendingAmount: amount });
    expect(Math.max(...listed.map((r) => r.receivingAmount))).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => listExchangeRates(snapshot, config, { destinationCurrency: ['DKK'], sendingAmount: amount + 1 })).toThrow(expect.objectContaining({ code: 'AMOUNT_OUT_OF_RANGE' }));
  });
});
