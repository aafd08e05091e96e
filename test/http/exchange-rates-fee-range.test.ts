import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifyChanged } from '../../src/platform/cache.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * A platform's fixed fee next to the API's exact range (2^53 − 1 minor units): PATCH /config
 * keeps it within the source currency's maxAmount, and a listing whose fees the answer cannot
 * carry is 400 AMOUNT_OUT_OF_RANGE, never a 500 (it was: `fees.fixed` could not go on the wire).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const MAX = Number.MAX_SAFE_INTEGER;
const call = (p: TestPlatform, method: 'GET' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const usd = (maxAmount: number) => ({ currencyCode: 'USD', minAmount: 1, maxAmount, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
const fee = (amount: number) => ({ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 10, fixedFee: { amount, currency: 'USD' } });

describe('PATCH /config feeConfigs: a fixed fee within the source currency’s maxAmount', () => {
  it('refuses one above it (the list as the change leaves it): 400 naming the field, nothing changed', async () => {
    const p = await ctx.newPlatform();
    const before = (await call(p, 'GET', '/config')).json();
    for (const body of [{ feeConfigs: [fee(MAX)] }, { feeConfigs: [fee(100_000_001)] }, { supportedCurrencies: [usd(1_000)], feeConfigs: [fee(1_001)] }]) {
      const refused = expectEnvelope(await call(p, 'PATCH', '/config', body), 400, 'INVALID_INPUT');
      const errors = refused.details!.errors as Array<{ field: string; message: string }>;
      expect(errors.map((e) => e.field)).toEqual(['feeConfigs.0.fixedFee.amount']);
      expect(errors[0]!.message).toMatch(/maxAmount/);
    }
    expect((await call(p, 'GET', '/config')).json()).toEqual(before);
    // Up to it, it is taken.
    for (const body of [{ feeConfigs: [fee(100_000_000)] }, { supportedCurrencies: [usd(1_000)], feeConfigs: [fee(1_000)] }]) {
      const taken = await call(p, 'PATCH', '/config', body);
      expect(taken.statusCode, taken.body).toBe(200);
    }
  });
});

describe('GET /exchange-rates with a fixed fee the answer cannot carry', () => {
  it('is 400 AMOUNT_OUT_OF_RANGE, not 500, when the fee reaches 2^53 − 1 under a maxAmount that does', async () => {
    const p = await ctx.newPlatform();
    const configured = await call(p, 'PATCH', '/config', { supportedCurrencies: [usd(MAX)], feeConfigs: [fee(MAX)] });
    expect(configured.statusCode, configured.body).toBe(200);
    const refused = expectEnvelope(await call(p, 'GET', '/exchange-rates'), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toMatchObject({ sourceCurrency: 'USD', destinationCurrency: expect.any(String) });
    // The same-currency rates carry no platform fee: they list.
    const same = await call(p, 'GET', '/exchange-rates?destinationCurrency=USD');
    expect(same.statusCode, same.body).toBe(200);
  });

  it('lists fixed fees of exactly 2^53 − 1: the answer carries them', async () => {
    const p = await ctx.newPlatform();
    // SWIFT's 15 dollars are the largest service fee on a rail paying EUR: with it, the fixed fees are exactly 2^53 − 1.
    const configured = await call(p, 'PATCH', '/config', { supportedCurrencies: [usd(MAX)], feeConfigs: [fee(MAX - 1_500)] });
    expect(configured.statusCode, configured.body).toBe(200);
    const listed = await call(p, 'GET', '/exchange-rates?destinationCurrency=EUR');
    expect(listed.statusCode, listed.body).toBe(200);
    const swift = (listed.json() as { data: Array<{ destinationPaymentRail: string; receivingAmount: number; fees: { fixed: number; total: number } }> }).data.find(
      (r) => r.destinationPaymentRail === 'SWIFT',
    );
    // 10000 makes no transfer under such fees: nothing arrives, the fees shown are the fixed ones.
    expect(swift).toMatchObject({ receivingAmount: 0, fees: { fixed: MAX, total: MAX } });
    // One more and they are past it.
    const past = await call(p, 'PATCH', '/config', { feeConfigs: [fee(MAX - 1_499)] });
    expect(past.statusCode, past.body).toBe(200);
    expectEnvelope(await call(p, 'GET', '/exchange-rates?destinationCurrency=EUR'), 400, 'AMOUNT_OUT_OF_RANGE');
  });

  it('is 400 AMOUNT_OUT_OF_RANGE for a fee stored before PATCH bounded it', async () => {
    const p = await ctx.newPlatform();
    await sql`update platform_configs set fee_configs = ${JSON.stringify([fee(MAX)])}::jsonb where platform_id = ${p.uuid}`.execute(ctx.handle.db);
    await notifyChanged(ctx.handle.db, 'corridor_platform_config_changed', p.uuid);
    expectEnvelope(await call(p, 'GET', '/exchange-rates?destinationCurrency=EUR'), 400, 'AMOUNT_OUT_OF_RANGE');
  });
});
