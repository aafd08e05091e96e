import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * PATCH /config at the edges a mutation audit found no test holding (config/README.md): each
 * test fails when the rule it names is removed.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Config = Body & { supportedCurrencies: Body[]; feeConfigs: Body[] };
type FieldErrors = Array<{ field: string }>;

const getConfig = async (p: TestPlatform) => (await ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: p.auth } })).json() as Config;
const patch = (p: TestPlatform, payload: unknown) =>
  ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: payload as object });

describe('a new platform', () => {
  it('supports USD from 1 to 100,000,000 minor units, both directions, no required counterparty field', async () => {
    const p = await ctx.newPlatform();
    expect((await getConfig(p)).supportedCurrencies).toEqual([
      {
        currencyCode: 'USD',
        minAmount: 1,
        maxAmount: 100_000_000,
        requiredCounterpartyFields: [],
        enabledTransactionTypes: ['INCOMING', 'OUTGOING'],
        providerRequiredCustomerFields: [],
        providerRequiredCounterpartyCustomerFields: [],
      },
    ]);
  });
});

const fee = (extra: Body) => ({ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', ...extra });

describe('feeConfigs', () => {
  it('keeps the fixed part on file when only the rate is sent', async () => {
    const p = await ctx.newPlatform();
    expect((await patch(p, { feeConfigs: [fee({ fixedFee: { amount: 30, currency: 'USD' } })] })).statusCode).toBe(200);
    const rate = await patch(p, { feeConfigs: [fee({ variableFeeBps: 75 })] });
    expect(rate.statusCode, rate.body).toBe(200);
    expect((rate.json() as Config).feeConfigs).toEqual([fee({ variableFeeBps: 75, fixedFee: { amount: 30, currency: 'USD' } })]);
  });
});

describe('supportedCurrencies', () => {
  it('refuses an empty list (no currency left to hold a balance or price a quote), and changes nothing', async () => {
    const p = await ctx.newPlatform();
    const before = await getConfig(p);
    const refused = expectEnvelope(await patch(p, { supportedCurrencies: [] }), 400, 'INVALID_INPUT');
    expect((refused.details!.errors as FieldErrors).map((e) => e.field)).toEqual(['supportedCurrencies']);
    expect(await getConfig(p)).toEqual(before);
  });
});
