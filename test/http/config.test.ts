import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const getConfig = (p: TestPlatform) => ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: p.auth } });
const patch = (p: TestPlatform, payload: unknown) =>
  ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: payload as object });

type Config = Record<string, unknown> & { feeConfigs: Array<Record<string, unknown>>; updatedAt: string; id: string };

describe('GET /config', () => {
  it('returns the defaults of a new platform', async () => {
    const response = await getConfig(ctx.platform);
    expect(response.statusCode).toBe(200);
    const config = response.json() as Config;
    expect(config.id).toMatch(/^PlatformConfig:/);
    expect(config).toMatchObject({
      supportedCurrencies: [{ currencyCode: 'USD', enabledTransactionTypes: ['INCOMING', 'OUTGOING'] }],
      isRegulatedFinancialInstitution: false,
      feeConfigs: [],
    });
    expect(config).not.toHaveProperty('embeddedWalletConfig');
    expect(config).not.toHaveProperty('webhookEndpoint');
  });
});

describe('PATCH /config', () => {
  it('takes back the currencies it answered, read-only fields and all, and ignores those', async () => {
    const p = await ctx.newPlatform();
    const { supportedCurrencies } = (await getConfig(p)).json() as { supportedCurrencies: Array<Record<string, unknown>> };
    const changed = [{ ...supportedCurrencies[0], maxAmount: 500_000, providerRequiredCustomerFields: ['FULL_NAME'] }];
    const response = await patch(p, { supportedCurrencies: changed });
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as Config).supportedCurrencies).toEqual([{ ...supportedCurrencies[0], maxAmount: 500_000 }]);
    expect(((await getConfig(p)).json() as Config).supportedCurrencies).toEqual([{ ...supportedCurrencies[0], maxAmount: 500_000 }]);
  });

  it('merges fee configs by key; both parts zero removes one', async () => {
    const p = await ctx.newPlatform();
    let response = await patch(p, { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 50 }] });
    expect(response.statusCode).toBe(200);
    expect((response.json() as Config).feeConfigs).toEqual([
      { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 50, fixedFee: { amount: 0, currency: 'USD' } },
    ]);
    response = await patch(p, { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', fixedFee: { amount: 25, currency: 'USD' } }] });
    expect((response.json() as Config).feeConfigs).toEqual([
      { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 50, fixedFee: { amount: 25, currency: 'USD' } },
    ]);
    response = await patch(p, { webhookEndpoint: 'https://hooks.example.com/corridor' });
    expect((response.json() as Config).feeConfigs).toHaveLength(1);
    response = await patch(p, {
      feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 0, fixedFee: { amount: 0, currency: 'USD' } }],
    });
    expect((response.json() as Config).feeConfigs).toEqual([]);
    expect(((await getConfig(p)).json() as Config).webhookEndpoint).toBe('https://hooks.example.com/corridor');
  });

  it('answers 501 NOT_IMPLEMENTED for a non-USD fee source and changes nothing', async () => {
    const p = await ctx.newPlatform();
    const before = (await getConfig(p)).json();
    const response = await patch(p, {
      umaDomain: 'pay.example.com',
      feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'EUR', variableFeeBps: 10 }],
    });
    expectEnvelope(response, 501, 'NOT_IMPLEMENTED');
    expect((await getConfig(p)).json()).toEqual(before);
  });

  it('accepts http webhook endpoints for sandbox platforms only, and announces a new endpoint with a TEST event', async () => {
    const p = await ctx.newPlatform();
    for (const url of ['http://localhost:3000/hooks', 'http://127.0.0.1/hooks', 'http://hooks.example.com/x', 'https://example.com/h', 'https://xn--bcher-kva.example/h', 'https://[2001:db8::1]:8443/h', 'https://example.com./h']) {
      expect((await patch(p, { webhookEndpoint: url })).statusCode, url).toBe(200);
    }
    // Also what the URL parser accepts but names no reachable host: an empty authority (read from
    // the path), empty labels, port 0.
    for (const url of ['ftp://example.com/x', 'https://user:pw@example.com/', 'https://example.com/#frag', 'not a url', 'https:///h', 'https:/h', 'https://.../h', 'https://a..b/h', 'https://.a/h', 'https://example.com:0/h']) {
      const body = expectEnvelope(await patch(p, { webhookEndpoint: url }), 400, 'INVALID_INPUT');
      expect((body.details!.errors as Array<{ field: string }>)[0]!.field, url).toBe('webhookEndpoint');
    }
    const production = await ctx.newPlatform('production');
    for (const url of ['http://localhost:3000/hooks', 'http://hooks.example.com/x']) {
      const body = expectEnvelope(await patch(production, { webhookEndpoint: url }), 400, 'INVALID_INPUT');
      expect((body.details!.errors as Array<{ constraint: unknown }>)[0]!.constraint, url).toEqual({ format: 'url', pattern: '^https://' });
    }
    expect((await patch(production, { webhookEndpoint: 'https://hooks.example.com/x' })).statusCode).toBe(200);
    // Setting the same endpoint again is no change: one TEST per new endpoint.
    expect((await patch(production, { webhookEndpoint: 'https://hooks.example.com/x' })).statusCode).toBe(200);
    const tests = await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('platform_id', '=', production.uuid).where('type', '=', 'TEST').execute();
    expect(tests).toEqual([{ type: 'TEST', data: null }]);
  });

  it('refuses a password without a user name as credentials too, in webhookEndpoint, a JWKS and a passkey origin', async () => {
    for (const environment of ['sandbox', 'production'] as const) {
      const p = await ctx.newPlatform(environment);
      const before = (await getConfig(p)).json();
      const refused = async (payload: unknown) =>
        (expectEnvelope(await patch(p, payload), 400, 'INVALID_INPUT').details!.errors as Array<{ field: string }>).map((e) => e.field).sort();
      expect(await refused({ webhookEndpoint: 'https://:secret@hooks.example.com/in' }), environment).toEqual(['webhookEndpoint']);
      const wallet = { oidcIssuers: [{ issuer: 'https://id.example.com', jwksUri: 'https://:secret@id.example.com/jwks' }], passkeyOrigins: ['https://:secret@wallet.example.com'] };
      expect(await refused({ embeddedWalletConfig: wallet }), environment).toEqual(['embeddedWalletConfig.oidcIssuers.0.jwksUri', 'embeddedWalletConfig.passkeyOrigins.0']);
      expect((await getConfig(p)).json()).toEqual(before);
    }
  });

  it('merges embeddedWalletConfig and cardTokenization2faConfig field by field', async () => {
    const p = await ctx.newPlatform();
    await patch(p, { embeddedWalletConfig: { appName: 'Acme', otpLength: 8 }, cardTokenization2faConfig: { email: { subject: 'Code' } } });
    const response = await patch(p, { embeddedWalletConfig: { expirationSeconds: 600 }, cardTokenization2faConfig: { email: { fromName: 'Acme' } } });
    const config = response.json() as Config;
    expect(config.embeddedWalletConfig).toEqual({ appName: 'Acme', otpLength: 8, expirationSeconds: 600 });
    expect(config.cardTokenization2faConfig).toEqual({ email: { subject: 'Code', fromName: 'Acme' } });
  });

  it('reports every invalid field of the request in one response and changes nothing', async () => {
    const p = await ctx.newPlatform();
    const before = (await getConfig(p)).json();
    const response = await patch(p, {
      embeddedWalletConfig: { otpLength: 3, expirationSeconds: 0, sendFromEmailAddress: 'not-an-email' },
      feeConfigs: [{ feeType: 'OTHER', sourceCurrency: 'USD', variableFeeBps: 10001 }],
      supportedCurrencies: [{ currencyCode: 'usd', minAmount: -1, maxAmount: 1.5, requiredCounterpartyFields: [], enabledTransactionTypes: ['SIDEWAYS'] }],
      cardTokenization2faConfig: { logoUrl: 'http://example.com/logo.png' },
      surprise: true,
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    const errors = body.details!.errors as Array<{ field: string; constraint?: Record<string, unknown> }>;
    const fields = errors.map((e) => e.field).sort();
    expect(fields).toEqual([
      'cardTokenization2faConfig.logoUrl',
      'embeddedWalletConfig.expirationSeconds',
      'embeddedWalletConfig.otpLength',
      'embeddedWalletConfig.sendFromEmailAddress',
      'feeConfigs.0.feeType',
      'feeConfigs.0.variableFeeBps',
      'supportedCurrencies.0.currencyCode',
      'supportedCurrencies.0.enabledTransactionTypes.0',
      'supportedCurrencies.0.maxAmount',
      'supportedCurrencies.0.minAmount',
      'surprise',
    ]);
    const find = (f: string) => errors.find((e) => e.field === f)!;
    expect(find('embeddedWalletConfig.sendFromEmailAddress').constraint).toEqual({ format: 'email' });
    expect(find('feeConfigs.0.feeType').constraint).toEqual({ enum: ['CROSS_CURRENCY_TRANSACTION'] });
    expect(find('cardTokenization2faConfig.logoUrl').constraint).toEqual({ pattern: '^https://' });
    expect((await getConfig(p)).json()).toEqual(before);
  });

  it('checks rules that span fields: duplicate currencies, min above max, fee currency', async () => {
    const p = await ctx.newPlatform();
    const currency = { currencyCode: 'USD', minAmount: 10, maxAmount: 5, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] };
    const response = await patch(p, {
      supportedCurrencies: [currency, { ...currency, minAmount: 1 }],
      feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', fixedFee: { amount: 5, currency: 'EUR' } }],
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual([
      'feeConfigs.0.fixedFee.currency',
      'supportedCurrencies.0.minAmount',
      'supportedCurrencies.1.currencyCode',
    ]);
  });

  it('rejects an empty update and a fee with neither rate nor fixed amount', async () => {
    expectEnvelope(await patch(ctx.platform, {}), 400, 'INVALID_INPUT');
    const body = expectEnvelope(
      await patch(ctx.platform, { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD' }] }),
      400,
      'INVALID_INPUT',
    );
    expect((body.details!.errors as Array<{ field: string }>)[0]!.field).toBe('feeConfigs.0');
  });

  it('records PLATFORM_CONFIG.UPDATED in the outbox with the change, and nothing on failure', async () => {
    const p = await ctx.newPlatform();
    const count = async () =>
      (await ctx.handle.db.selectFrom('events').select('id').where('platform_id', '=', p.uuid).where('type', '=', 'PLATFORM_CONFIG.UPDATED').execute()).length;
    await patch(p, { umaDomain: 'pay.example.com' });
    expect(await count()).toBe(1);
    await patch(p, { webhookEndpoint: 'ftp://example.com' });
    expect(await count()).toBe(1);
  });

  it('keeps platforms apart', async () => {
    const a = await ctx.newPlatform();
    const b = await ctx.newPlatform();
    await patch(a, { umaDomain: 'a.example.com' });
    expect((await getConfig(b)).json()).not.toHaveProperty('umaDomain');
  });
});
