import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * One PATCH /config naming a fee config (feeType, sourceCurrency) twice says two things at once:
 * which fee is charged is not to be left to the order of a list. 400 naming the repeat, and
 * nothing changes.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

const call = (p: TestPlatform, method: 'GET' | 'PATCH', payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}/config`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('PATCH /config with a repeated entry', () => {
  it('a fee config repeated for one feeType and sourceCurrency: 400 naming the second, nothing changed', async () => {
    const p = await ctx.newPlatform();
    const set = await call(p, 'PATCH', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 25 }] });
    expect(set.statusCode, set.body).toBe(200);
    const before = (await call(p, 'GET')).json();
    const repeated = await call(p, 'PATCH', {
      webhookEndpoint: 'https://hooks.example.com/repeated',
      feeConfigs: [
        { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 50 },
        { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100 },
      ],
    });
    expect(expectEnvelope(repeated, 400, 'INVALID_INPUT').details).toEqual({
      errors: [{ field: 'feeConfigs.1', message: 'repeats CROSS_CURRENCY_TRANSACTION for USD' }],
    });
    expect((await call(p, 'GET')).json()).toEqual(before);
  });
});
