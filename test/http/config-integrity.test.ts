import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUmaAddress } from '../../src/platform/uma-address.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * PATCH /config takes what the upstream's SDK sends, refuses values that would only fail later
 * in another module, and keeps every field of concurrent changes.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Currency = { currencyCode: string; minAmount: number; maxAmount: number; requiredCounterpartyFields: unknown[]; enabledTransactionTypes: string[] };
type Config = Record<string, unknown> & { supportedCurrencies: Currency[] };

const call = (p: TestPlatform, method: 'GET' | 'PATCH' | 'POST', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('PATCH /config supportedCurrencies', () => {
  it('takes a currency as the upstream requires it, code and limits only: the rest is what the currency had, or the defaults for a new one', async () => {
    const p = await ctx.newPlatform();
    const fields = [{ name: 'FULL_NAME', mandatory: true }];
    const set = await call(p, 'PATCH', '/config', {
      supportedCurrencies: [{ currencyCode: 'USD', minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: fields, enabledTransactionTypes: ['OUTGOING'] }],
    });
    expect(set.statusCode, set.body).toBe(200);

    const response = await call(p, 'PATCH', '/config', {
      supportedCurrencies: [
        { currencyCode: 'USD', minAmount: 5, maxAmount: 5000 },
        { currencyCode: 'EUR', minAmount: 100, maxAmount: 1_000_000 },
      ],
    });
    expect(response.statusCode, response.body).toBe(200);
    const expected = [
      { currencyCode: 'USD', minAmount: 5, maxAmount: 5000, requiredCounterpartyFields: fields, enabledTransactionTypes: ['OUTGOING'] },
      { currencyCode: 'EUR', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] },
    ];
    expect((response.json() as Config).supportedCurrencies).toMatchObject(expected);
    expect(((await call(p, 'GET', '/config')).json() as Config).supportedCurrencies).toMatchObject(expected);
  });

  it('still checks the rules that span fields on such a currency, and changes nothing', async () => {
    const p = await ctx.newPlatform();
    const before = (await call(p, 'GET', '/config')).json();
    const response = await call(p, 'PATCH', '/config', {
      supportedCurrencies: [
        { currencyCode: 'EUR', minAmount: 10, maxAmount: 5 },
        { currencyCode: 'EUR', minAmount: 1, maxAmount: 5 },
      ],
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['supportedCurrencies.0.minAmount', 'supportedCurrencies.1.currencyCode']);
    expect((await call(p, 'GET', '/config')).json()).toEqual(before);
  });

  it('takes minAmount equal to maxAmount (one amount only), as minAmount ≤ maxAmount allows', async () => {
    const p = await ctx.newPlatform();
    const response = await call(p, 'PATCH', '/config', { supportedCurrencies: [{ currencyCode: 'USD', minAmount: 500, maxAmount: 500 }] });
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as Config).supportedCurrencies).toMatchObject([{ currencyCode: 'USD', minAmount: 500, maxAmount: 500 }]);
  });

  it('refuses a required counterparty field named twice for one currency, and changes nothing', async () => {
    const p = await ctx.newPlatform();
    const before = (await call(p, 'GET', '/config')).json();
    const response = await call(p, 'PATCH', '/config', {
      supportedCurrencies: [
        {
          currencyCode: 'USD',
          minAmount: 1,
          maxAmount: 1000,
          requiredCounterpartyFields: [
            { name: 'FULL_NAME', mandatory: true },
            { name: 'FULL_NAME', mandatory: false },
          ],
        },
      ],
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'supportedCurrencies.0.requiredCounterpartyFields', message: 'must not repeat a field name' }]);
    expect((await call(p, 'GET', '/config')).json()).toEqual(before);
  });
});

describe('PATCH /config umaDomain', () => {
  it.each(['pay.example.com:99999', 'pay.example.com:0', 'pay.example.com:080', 'localhost:65536'])(
    'refuses %s, whose port no UMA address can carry, and changes nothing',
    async (umaDomain) => {
      const p = await ctx.newPlatform();
      const before = (await call(p, 'GET', '/config')).json();
      const body = expectEnvelope(await call(p, 'PATCH', '/config', { umaDomain }), 400, 'INVALID_INPUT');
      expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['umaDomain']);
      expect((await call(p, 'GET', '/config')).json()).toEqual(before);
    },
  );

  it('takes a port from 1 to 65535, and the customers it names get addresses the one address rule accepts', async () => {
    const p = await ctx.newPlatform();
    for (const umaDomain of ['localhost:1', 'pay.example.com:65535']) {
      const response = await call(p, 'PATCH', '/config', { umaDomain });
      expect(response.statusCode, response.body).toBe(200);
      const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `uma-${umaDomain}`, fullName: 'Ann Lee' });
      expect(created.statusCode, created.body).toBe(201);
      const { umaAddress } = created.json() as { umaAddress: string };
      expect(umaAddress.endsWith(`@${umaDomain}`)).toBe(true);
      expect(isUmaAddress(umaAddress), umaAddress).toBe(true);
    }
  });
});

describe('concurrent PATCH /config', () => {
  it('keeps every field of changes made at the same time', async () => {
    const p = await ctx.newPlatform();
    const fee = (sourceCurrency: string, variableFeeBps: number) => ({ feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency, variableFeeBps }] });
    const changes = [
      { umaDomain: 'together.example.com' },
      { webhookEndpoint: 'https://hooks.example.com/together' },
      { embeddedWalletConfig: { appName: 'Together' } },
      { embeddedWalletConfig: { otpLength: 8 } },
      { cardTokenization2faConfig: { email: { subject: 'Code' } } },
      { cardTokenization2faConfig: { sms: { bodyText: 'Your code' } } },
      fee('USD', 25),
    ];
    const answers = await Promise.all(changes.map((change) => call(p, 'PATCH', '/config', change)));
    for (const answer of answers) expect(answer.statusCode, answer.body).toBe(200);
    expect((await call(p, 'GET', '/config')).json()).toMatchObject({
      umaDomain: 'together.example.com',
      webhookEndpoint: 'https://hooks.example.com/together',
      embeddedWalletConfig: { appName: 'Together', otpLength: 8 },
      cardTokenization2faConfig: { email: { subject: 'Code' }, sms: { bodyText: 'Your code' } },
      feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 25 }],
    });
  });
});
