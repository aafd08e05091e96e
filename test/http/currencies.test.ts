import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

/**
 * Issue 12 B12: every field that takes a currency code takes any code of the one registry
 * (ISO 4217 money, USDC, USDT, BTC) and refuses another with 400 INVALID_CURRENCY naming the field.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Envelope = { details?: { errors?: Array<{ field: string; constraint?: Record<string, unknown> }> } };
const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const fields = (response: { json(): unknown }) => ((response.json() as Envelope).details?.errors ?? []).map((e) => e.field);

let seq = 0;
const individual = (extra: Record<string, unknown> = {}) => ({ customerType: 'INDIVIDUAL', platformCustomerId: `cur-${seq++}`, fullName: 'Ada', ...extra });

describe('currency codes (B12)', () => {
  it('accepts crypto and fiat codes on customers, and filters by them', async () => {
    const created = await call('POST', '/customers', individual({ currencies: ['USDC', 'USD', 'BTC', 'USDT', 'EUR', 'JPY'] }));
    expect(created.statusCode).toBe(201);
    const customer = created.json() as { id: string; currencies: string[] };
    expect(customer.currencies).toEqual(['USDC', 'USD', 'BTC', 'USDT', 'EUR', 'JPY']);
    const updated = await call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', currencies: ['USDT'] });
    expect((updated.json() as { currencies: string[] }).currencies).toEqual(['USDT']);
    const listed = (await call('GET', '/customers?currency=USDT')).json() as { data: Array<{ id: string }> };
    expect(listed.data.map((c) => c.id)).toEqual([customer.id]);
  });

  it('refuses an unknown code with 400 INVALID_CURRENCY naming each field', async () => {
    for (const bad of ['XYZ', 'USDCX', 'XAU']) {
      const response = await call('POST', '/customers', individual({ currencies: ['USD', bad] }));
      const body = expectEnvelope(response, 400, 'INVALID_CURRENCY') as Envelope;
      expect(body.details!.errors).toEqual([{ field: 'currencies.1', constraint: { format: 'currency-code' }, message: `${bad} is not a currency Corridor knows` }]);
    }
    // Not shaped like a code at all: an input error, its pattern named.
    for (const bad of ['usd', 'US', 'DOLLARS']) {
      const body = expectEnvelope(await call('POST', '/customers', individual({ currencies: [bad] })), 400, 'INVALID_INPUT') as Envelope;
      expect(body.details!.errors![0]).toMatchObject({ field: 'currencies.0', constraint: { pattern: '^[A-Z]{3,5}$' } });
    }
    const created = (await call('POST', '/customers', individual())).json() as { id: string };
    expectEnvelope(await call('PATCH', `/customers/${created.id}`, { customerType: 'INDIVIDUAL', currencies: ['ABC'] }), 400, 'INVALID_CURRENCY');
    const query = await call('GET', '/customers?currency=ABC');
    expectEnvelope(query, 400, 'INVALID_CURRENCY');
    expect(fields(query)).toEqual(['currency']);
    const accounts = await call('GET', '/customers/internal-accounts?currency=ABC');
    expectEnvelope(accounts, 400, 'INVALID_CURRENCY');
    expect(fields(accounts)).toEqual(['currency']);
  });

  it('reports an unknown code beside other invalid fields as INVALID_INPUT, listing all of them', async () => {
    const response = await call('POST', '/customers', individual({ currencies: ['XYZ'], fullName: '' }));
    expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fields(response).sort()).toEqual(['currencies.0', 'fullName']);
  });

  it('accepts any registry code in the platform config and refuses others', async () => {
    const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });
    const accepted = await call('PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('USDC'), currency('BTC')] });
    expect(accepted.statusCode).toBe(200);
    expect((accepted.json() as { supportedCurrencies: Array<{ currencyCode: string }> }).supportedCurrencies.map((c) => c.currencyCode)).toEqual(['USD', 'USDC', 'BTC']);
    const refused = await call('PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('QQQ')] });
    expectEnvelope(refused, 400, 'INVALID_CURRENCY');
    expect(fields(refused)).toEqual(['supportedCurrencies.1.currencyCode']);
    const fee = await call('PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'QQQ', variableFeeBps: 5 }] });
    expectEnvelope(fee, 400, 'INVALID_CURRENCY');
    expect(fields(fee)).toEqual(['feeConfigs.0.sourceCurrency']);
  });
});
