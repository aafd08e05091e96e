import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RAILS } from '../../src/modules/rates/index.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

type Rate = {
  sourceCurrency: { code: string; decimals: number };
  destinationCurrency: { code: string };
  destinationPaymentRail: string;
  sendingAmount: number;
  minSendingAmount: number;
  maxSendingAmount: number;
  receivingAmount: number;
  exchangeRate: number;
  fees: { fixed: number; total: number };
  updatedAt: string;
};

/**
 * A rate service speaking the documented contract; `answer` decides each response. `cut` sends
 * the head and the body's first byte, then stalls (`stall`) or drops the connection (`reset`).
 */
type Answer = { status: number; body: string; delayMs?: number; cut?: 'stall' | 'reset' };
let answer: (body: string, auth: string | undefined) => Answer = () => ({ status: 500, body: '' });
let server: Server;
let ctx: TestContext;
let production: TestContext;
let calls = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      calls++;
      const out = answer(body, req.headers.authorization);
      if (out.cut) {
        res.writeHead(out.status, { 'content-type': 'application/json', 'content-length': String(out.body.length) }).write(out.body.slice(0, 1));
        if (out.cut === 'reset') setTimeout(() => res.destroy(), 20);
        else setTimeout(() => res.end(out.body.slice(1)), 1000);
        return;
      }
      setTimeout(() => res.writeHead(out.status, { 'content-type': 'application/json' }).end(out.body), out.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rates`;
  ctx = await createTestContext();
  production = await createTestContext({ env: { CORRIDOR_RATES_URL: url, CORRIDOR_RATES_TOKEN: 'rates-secret', CORRIDOR_RATES_TIMEOUT_MS: '300' } });
});
afterAll(async () => {
  await ctx.close();
  await production.close();
  server.close();
});

const table = (perUsd: Record<string, string>, asOf = '2026-11-20T10:00:00Z') => JSON.stringify({ asOf, rates: perUsd });
const rates = (c: TestContext, p: TestPlatform, query = '') => c.app.inject({ method: 'GET', url: `${BASE}/exchange-rates${query}`, headers: { authorization: p.auth } });

describe('GET /exchange-rates', () => {
  it('lists every rail that pays each rated currency from the platform’s currencies, fees and limits included', async () => {
    const response = await rates(ctx, ctx.platform);
    expect(response.statusCode, response.body).toBe(200);
    const data = (response.json() as { data: Rate[] }).data;
    expect(data.every((r) => r.sourceCurrency.code === 'USD' && r.sendingAmount === 10000 && r.minSendingAmount === 1 && r.maxSendingAmount === 100_000_000)).toBe(true);
    const pairs = new Set(data.map((r) => `${r.destinationCurrency.code}/${r.destinationPaymentRail}`));
    for (const rail of ['ACH', 'WIRE', 'RTP', 'FEDNOW']) expect(pairs.has(`USD/${rail}`)).toBe(true);
    for (const pair of ['EUR/SEPA_INSTANT', 'MXN/SPEI', 'INR/UPI', 'BRL/PIX', 'GBP/FASTER_PAYMENTS', 'CHF/SWIFT']) expect(pairs.has(pair)).toBe(true);
    expect(new Set(data.map((r) => r.destinationPaymentRail))).toEqual(new Set(Object.keys(RAILS)));

    const sameCurrency = data.find((r) => r.destinationCurrency.code === 'USD' && r.destinationPaymentRail === 'ACH')!;
    // Rate 1 and ACH's 25-cent fee: 10000 − 25 arrive.
    expect(sameCurrency).toMatchObject({ exchangeRate: 1, receivingAmount: 9975, fees: { fixed: 25, total: 25 } });
    const euro = data.find((r) => r.destinationCurrency.code === 'EUR' && r.destinationPaymentRail === 'SEPA_INSTANT')!;
    // USD→EUR 0.866 less a 25 bps spread; SEPA Instant 30 cents + 5 bps of what is sent.
    expect(euro.exchangeRate).toBe(0.863835);
    expect(euro.fees).toEqual({ fixed: 30, total: 35 });
    expect(euro.receivingAmount).toBe(Math.floor((9965 * 0.863835 * 1e6) / 1e6));
  });

  it('filters by source and destinations, prices the sendingAmount given, and adds the platform’s fee on cross-currency rates', async () => {
    const p = await ctx.newPlatform();
    const patched = await ctx.app.inject({
      method: 'PATCH',
      url: `${BASE}/config`,
      headers: { authorization: p.auth },
      payload: {
        supportedCurrencies: [
          { currencyCode: 'USD', minAmount: 100, maxAmount: 5_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] },
          { currencyCode: 'EUR', minAmount: 100, maxAmount: 5_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING'] },
        ],
        feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100, fixedFee: { amount: 50, currency: 'USD' } }],
      },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const response = await rates(ctx, p, '?sourceCurrency=USD&destinationCurrency=MXN&destinationCurrency=USD&sendingAmount=100000');
    const data = (response.json() as { data: Rate[] }).data;
    expect(data.map((r) => `${r.destinationCurrency.code}/${r.destinationPaymentRail}`).sort()).toEqual(['MXN/BANK_TRANSFER', 'MXN/RTGS', 'MXN/SPEI', 'MXN/SWIFT', 'USD/ACH', 'USD/BANK_TRANSFER', 'USD/FEDNOW', 'USD/MOBILE_MONEY', 'USD/RTGS', 'USD/RTP', 'USD/SWIFT', 'USD/WIRE']);
    const spei = data.find((r) => r.destinationPaymentRail === 'SPEI')!;
    expect(spei).toMatchObject({ sendingAmount: 100000, minSendingAmount: 100, maxSendingAmount: 5_000_000 });
    // SPEI 30 + 10 bps, platform 50 + 100 bps, of what is sent.
    expect(spei.fees.fixed).toBe(80);
    const sent = 100000 - spei.fees.total;
    expect(spei.fees.total).toBe(80 + Math.round(sent * 0.001) + Math.round(sent * 0.01));
    // Same currency: no cross-currency platform fee.
    expect(data.find((r) => r.destinationPaymentRail === 'ACH')!.fees).toEqual({ fixed: 25, total: 25 });
    // EUR is not a currency this platform sends from.
    expect((await rates(ctx, p, '?sourceCurrency=EUR')).json()).toEqual({ data: [] });
    // The upstream's SDKs send a list as one comma-separated value: the same list.
    const commas = await rates(ctx, p, '?sourceCurrency=USD&destinationCurrency=MXN%2CUSD&sendingAmount=100000');
    expect(commas.statusCode, commas.body).toBe(200);
    expect(commas.json()).toEqual(response.json());
    expectEnvelope(await rates(ctx, p, '?destinationCurrency=MXN,ABC'), 400, 'INVALID_CURRENCY');
  });

  it('refuses unknown currencies and bad amounts', async () => {
    expectEnvelope(await rates(ctx, ctx.platform, '?destinationCurrency=ABC'), 400, 'INVALID_CURRENCY');
    expectEnvelope(await rates(ctx, ctx.platform, '?sourceCurrency=usd'), 400, 'INVALID_INPUT');
    expectEnvelope(await rates(ctx, ctx.platform, '?sendingAmount=-1'), 400, 'INVALID_INPUT');
    expectEnvelope(await rates(ctx, ctx.platform, '?sendingAmount=1.5'), 400, 'INVALID_INPUT');
    // The largest amount the schema takes buys more MXN than the answer carries exactly (was 500).
    const max = Number.MAX_SAFE_INTEGER;
    const tooMuch = expectEnvelope(await rates(ctx, ctx.platform, `?destinationCurrency=MXN&sendingAmount=${max}`), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(tooMuch.details).toEqual({ sendingAmount: max, sourceCurrency: 'USD', destinationCurrency: 'MXN' });
    expect((await rates(ctx, ctx.platform, `?destinationCurrency=USD&sendingAmount=${max}`)).statusCode).toBe(200);
  });

  it('is the same for every caller inside one 5-minute window, and moves on with the next', async () => {
    const first = (await rates(ctx, ctx.platform, '?destinationCurrency=EUR')).json() as { data: Rate[] };
    const fromAnother = (await rates(ctx, await ctx.newPlatform(), '?destinationCurrency=EUR')).json() as { data: Rate[] };
    expect(fromAnother.data.map((r) => r.exchangeRate)).toEqual(first.data.map((r) => r.exchangeRate));
    const windows = await ctx.handle.db.selectFrom('exchange_rate_windows').select(['provider', 'window_start']).execute();
    expect(windows.length).toBe(1);
    ctx.clock.advance(5 * 60_000);
    await rates(ctx, ctx.platform, '?destinationCurrency=EUR');
    expect((await ctx.handle.db.selectFrom('exchange_rate_windows').select('window_start').execute()).length).toBe(2);
  });

  describe('production: the HTTP rate provider', () => {
    it('asks the provider once per window with its token, and prices with what it answered', async () => {
      const p = await production.newPlatform('production');
      const seen: Array<{ body: unknown; auth: string | undefined }> = [];
      answer = (body, auth) => {
        seen.push({ body: JSON.parse(body), auth });
        return { status: 200, body: JSON.stringify({ asOf: '2026-11-20T10:00:00Z', rates: { EUR: '0.5', MXN: '20' } }) };
      };
      calls = 0;
      const response = await rates(production, p, '?destinationCurrency=EUR');
      expect(response.statusCode, response.body).toBe(200);
      const data = (response.json() as { data: Rate[] }).data;
      expect(data.find((r) => r.destinationPaymentRail === 'SEPA')).toMatchObject({ exchangeRate: 0.49875, updatedAt: '2026-11-20T10:00:00.000Z' });
      expect(seen[0]!.auth).toBe('Bearer rates-secret');
      expect(seen[0]!.body).toMatchObject({ base: 'USD', currencies: expect.arrayContaining(['EUR', 'MXN', 'USD']) });
      await rates(production, p, '?destinationCurrency=MXN');
      expect(calls).toBe(1);
      // A currency the provider did not rate is unknown to this window.
      const inr = (await rates(production, p, '?destinationCurrency=INR')).json() as { data: Rate[] };
      expect(inr.data).toEqual([]);
    });

    it.each([
      ['an error status', () => ({ status: 502, body: 'bad gateway' })],
      ['no answer in time', () => ({ status: 200, body: '{}', delayMs: 1000 })],
      ['a malformed table', () => ({ status: 200, body: JSON.stringify({ asOf: '2026-11-20T10:00:00Z', rates: { EUR: 0.5 } }) })],
      ['not JSON', () => ({ status: 200, body: 'rates!' })],
      // The head in time, the body not: the read failed past the deadline (was 500).
      ['a body that stalls past the deadline', () => ({ status: 200, body: table({ EUR: '0.5' }), cut: 'stall' as const })],
      ['a body cut off', () => ({ status: 200, body: table({ EUR: '0.5' }), cut: 'reset' as const })],
      // An asOf outside RFC 3339 years 0001–9999 failed to store (was 500); other shapes were guessed at.
      ['an asOf in year 10000', () => ({ status: 200, body: table({ EUR: '0.5' }, '+010000-01-01T00:00:00Z') })],
      ['an asOf in year 0', () => ({ status: 200, body: table({ EUR: '0.5' }, '0000-01-01T00:00:00Z') })],
      ['an asOf that is not RFC 3339', () => ({ status: 200, body: table({ EUR: '0.5' }, 'Tue, 1 Dec 2026') })],
      // USD is the base: another USD rate skewed every cross rate.
      ['a USD rate other than 1', () => ({ status: 200, body: table({ USD: '2', EUR: '0.9' }) })],
      // Rates are positive decimal strings of at most 18 fractional digits: a zero would divide by zero pricing from that currency.
      ['a rate of zero', () => ({ status: 200, body: table({ EUR: '0', MXN: '20' }) })],
      ['a rate of zero with decimals', () => ({ status: 200, body: table({ EUR: '0.000', MXN: '20' }) })],
      ['a rate with 19 fractional digits', () => ({ status: 200, body: table({ EUR: '0.8660000000000000001' }) })],
    ])('answers 503 on %s, and stores nothing', async (_name, reply) => {
      production.clock.advance(5 * 60_000);
      answer = reply;
      const p = await production.newPlatform('production');
      const before = (await production.handle.db.selectFrom('exchange_rate_windows').select('window_start').execute()).length;
      expectEnvelope(await rates(production, p), 503, 'SERVICE_UNAVAILABLE');
      expect((await production.handle.db.selectFrom('exchange_rate_windows').select('window_start').execute()).length).toBe(before);
    });

    it('leaves out a corridor whose rate rounds to 0 (was listed at exchangeRate 0)', async () => {
      production.clock.advance(5 * 60_000);
      answer = () => ({ status: 200, body: table({ EUR: '0.000000000000000001', MXN: '20' }) });
      const p = await production.newPlatform('production');
      const response = await rates(production, p, '?destinationCurrency=EUR,MXN');
      expect(response.statusCode, response.body).toBe(200);
      const data = (response.json() as { data: Rate[] }).data;
      expect(new Set(data.map((r) => r.destinationCurrency.code))).toEqual(new Set(['MXN']));
    });

    it('answers 503 for production platforms when no provider is configured', async () => {
      expectEnvelope(await rates(ctx, await ctx.newPlatform('production')), 503, 'SERVICE_UNAVAILABLE');
    });
  });
});
