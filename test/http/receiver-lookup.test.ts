import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';

let ctx: TestContext;
let mxnAccount: string;
let usdSender: string;
let eurSender: string;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const lookup = (accountId: string, query: string, p: TestPlatform = ctx.platform) => call(p, 'GET', `/receiver/external-account/${accountId}${query}`);
const currency = (code: string, minAmount: number, maxAmount: number) => ({ currencyCode: code, minAmount, maxAmount, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });

let seq = 0;
async function customer(extra: Record<string, unknown>): Promise<string> {
  const response = await call(ctx.platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `rcv-${++seq}`, fullName: 'Ann Lee', ...extra });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { id: string }).id;
}

interface Lookup {
  supportedCurrencies: Array<{ currency: { code: string }; estimatedExchangeRate: number; min: number; max: number }>;
  lookupId: string;
  accountId: string;
}

beforeAll(async () => {
  ctx = await createTestContext();
  const patched = await call(ctx.platform, 'PATCH', '/config', { supportedCurrencies: [currency('USD', 100, 1_000_000), currency('EUR', 200, 500_000)] });
  expect(patched.statusCode, patched.body).toBe(200);
  usdSender = await customer({ umaAddress: '$ann@pay.example.com' });
  eurSender = await customer({ currencies: ['EUR'] });
  const created = await call(ctx.platform, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).MXN_ACCOUNT);
  expect(created.statusCode, created.body).toBe(201);
  mxnAccount = (created.json() as { id: string }).id;
});
afterAll(() => ctx.close());

describe('GET /receiver/external-account/{accountId}', () => {
  it('offers the account currency at the rate a quote would use, within the platform limits converted, and stores the lookup', async () => {
    const response = await lookup(mxnAccount, `?customerId=${usdSender}`);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json() as Lookup;
    // Built-in table: 18.45 MXN per USD, less the 75 bps spread of this corridor = 18.311625.
    expect(body).toEqual({
      supportedCurrencies: [{ currency: { code: 'MXN', name: 'Mexican Peso', symbol: '$', decimals: 2 }, estimatedExchangeRate: 18.311625, min: 1831, max: 18_311_625 }],
      lookupId: expect.stringMatching(/^LookupRequest:[0-9a-f-]{36}$/),
      accountId: mxnAccount,
    });
    const stored = await ctx.handle.db.selectFrom('receiver_lookups').selectAll().where('id', '=', body.lookupId.slice('LookupRequest:'.length)).executeTakeFirstOrThrow();
    expect(stored.response).toEqual(body);
    expect(stored.sender_customer_id).toBe(usdSender.slice('Customer:'.length));
    expect(stored.expires_at.getTime()).toBe(ctx.clock.now().getTime() + 5 * 60_000);
  });

  it('is GET only: a HEAD (monitors and proxies send them freely) stores no lookup, here or at /receiver/uma', async () => {
    const stored = async () => (await ctx.handle.db.selectFrom('receiver_lookups').select('id').execute()).length + (await ctx.handle.db.selectFrom('uma_lookups').select('id').execute()).length;
    const before = await stored();
    for (const url of [`/receiver/external-account/${mxnAccount}?customerId=${usdSender}`, `/receiver/uma/${encodeURIComponent('$success.usd@sandbox.uma.money')}?customerId=${usdSender}`]) {
      const head = await ctx.app.inject({ method: 'HEAD', url: `${BASE}${url}`, headers: { authorization: ctx.platform.auth } });
      expect(head.statusCode, url).not.toBe(200);
    }
    expect(await stored()).toBe(before);
  });

  it('the sender may be named by UMA address; its own currency is the sending one', async () => {
    const byAddress = (await lookup(mxnAccount, `?senderUmaAddress=${encodeURIComponent('$ANN@pay.example.com')}`)).json() as Lookup;
    expect(byAddress.supportedCurrencies[0]!.estimatedExchangeRate).toBe(18.311625);
    const both = await lookup(mxnAccount, `?senderUmaAddress=${encodeURIComponent('$ann@pay.example.com')}&customerId=${usdSender}`);
    expect(both.statusCode).toBe(200);
    const eur = (await lookup(mxnAccount, `?customerId=${eurSender}`)).json() as Lookup;
    // EUR → MXN: 18.45 / 0.866 less 75 bps; limits 200..500,000 euro cents converted.
    const rate = eur.supportedCurrencies[0]!.estimatedExchangeRate;
    expect(rate).toBeCloseTo((18.45 / 0.866) * 0.9925, 6);
    expect(eur.supportedCurrencies[0]!.min).toBe(Math.floor(200 * rate));
  });

  it('stops the converted limits at what a quote carries (2^53 − 1 minor units)', async () => {
    // The platform's largest maxAmount, in MXN, was past the safe-integer range: a 500.
    const p = await ctx.newPlatform();
    const max = Number.MAX_SAFE_INTEGER;
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD', max, max)] })).statusCode).toBe(200);
    const sender = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'rcv-big', fullName: 'Ann Lee' });
    const account = await call(p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).MXN_ACCOUNT);
    const response = await lookup((account.json() as { id: string }).id, `?customerId=${(sender.json() as { id: string }).id}`, p);
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as Lookup).supportedCurrencies[0]).toMatchObject({ min: max, max });
  });

  it('offers at least 1 and never a most below the least, when the converted limits round down to nothing', async () => {
    // MXN limits of 1 and 10 centavos are 0.05 and 0.5 US cents: both round down to 0.
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('MXN', 1, 10)] })).statusCode).toBe(200);
    const sender = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'rcv-small', fullName: 'Ann Lee' });
    expect(sender.statusCode, sender.body).toBe(201);
    const account = await call(p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).USD_ACCOUNT);
    expect(account.statusCode, account.body).toBe(201);
    const response = await lookup((account.json() as { id: string }).id, `?customerId=${(sender.json() as { id: string }).id}`, p);
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as Lookup).supportedCurrencies[0]).toMatchObject({ currency: { code: 'USD' }, min: 1, max: 1 });
  });

  it('refuses what does not name a sender, or names one wrongly', async () => {
    const none = expectEnvelope(await lookup(mxnAccount, ''), 400, 'INVALID_INPUT');
    expect((none.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['customerId', 'senderUmaAddress']);
    const malformed = expectEnvelope(await lookup(mxnAccount, '?senderUmaAddress=ann'), 400, 'INVALID_UMA_ADDRESS');
    expect(malformed.details).toEqual({ field: 'senderUmaAddress', value: 'ann' });
    expectEnvelope(await lookup(mxnAccount, '?customerId=nope'), 400, 'INVALID_INPUT');
    expectEnvelope(await lookup(mxnAccount, '?customerId=Customer:019542f5-b3e7-7d02-8000-000000000001'), 404, 'USER_NOT_FOUND');
    expectEnvelope(await lookup(mxnAccount, `?senderUmaAddress=${encodeURIComponent('$nobody@pay.example.com')}`), 404, 'USER_NOT_FOUND');
    // The longest address the rule takes (325 characters: a 64-character user, a 253-character
    // host, a port) is one, and a malformed one that long is INVALID_UMA_ADDRESS: both were 400
    // INVALID_INPUT past 320 characters.
    const host = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    const longest = `$${'u'.repeat(64)}@${host}:65535`;
    expect(longest.length).toBe(325);
    expectEnvelope(await lookup(mxnAccount, `?senderUmaAddress=${encodeURIComponent(longest)}`), 404, 'USER_NOT_FOUND');
    const longMalformed = `${'u'.repeat(64)}@${host}:65535`.padEnd(330, 'x');
    expect(expectEnvelope(await lookup(mxnAccount, `?senderUmaAddress=${encodeURIComponent(longMalformed)}`), 400, 'INVALID_UMA_ADDRESS').details).toEqual({
      field: 'senderUmaAddress',
      value: longMalformed,
    });
    const mismatch = expectEnvelope(await lookup(mxnAccount, `?senderUmaAddress=${encodeURIComponent('$ann@pay.example.com')}&customerId=${eurSender}`), 400, 'INVALID_INPUT');
    expect(mismatch.details).toMatchObject({ errors: [{ field: 'senderUmaAddress' }] });
  });

  it('an account that is unknown, malformed or another platform\'s is 404 REFERENCE_NOT_FOUND', async () => {
    expectEnvelope(await lookup('ExternalAccount:019542f5-b3e7-7d02-8000-000000000001', `?customerId=${usdSender}`), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await lookup('not-an-id', `?customerId=${usdSender}`), 404, 'REFERENCE_NOT_FOUND');
    const other = await ctx.newPlatform();
    expectEnvelope(await lookup(mxnAccount, `?customerId=${usdSender}`, other), 404, 'REFERENCE_NOT_FOUND');
  });
});
