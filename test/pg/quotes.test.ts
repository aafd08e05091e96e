import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/** Quote execution under real concurrency: many connections and two app instances on one PostgreSQL. */
describe.runIf(onPostgres)('quotes on PostgreSQL', () => {
  let ctx: TestContext;
  let second: App;
  beforeAll(async () => {
    ctx = await createTestContext({ env: { CORRIDOR_DAILY_VOLUME_LIMIT: JSON.stringify({ GBP: 10_000 }) } });
    second = await ctx.secondApp();
  });
  afterAll(() => ctx.close());

  /** Requests alternate between the two processes. */
  const call = (i: number, p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
    (i % 2 === 0 ? ctx.app : second).inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

  let seq = 0;
  async function setup(currency = 'USD', funding = 10_000) {
    const p = await ctx.newPlatform();
    if (currency !== 'USD') {
      const config = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
      expect((await call(0, p, 'PATCH', '/config', { supportedCurrencies: [config('USD'), config(currency)] })).statusCode).toBe(200);
    }
    const created = await call(0, p, 'POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: `pg-q-${++seq}`,
      fullName: 'Ann Lee',
      endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
    });
    const customerId = (created.json() as { id: string }).id;
    const accounts = (await call(0, p, 'GET', `/customers/internal-accounts?customerId=${customerId}`)).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> };
    const account = accounts.data.find((a) => a.balance.currency.code === currency)!.id;
    expect((await call(0, p, 'POST', `/sandbox/internal-accounts/${account}/fund`, { amount: funding })).statusCode).toBe(200);
    const samples = validSamples(ctx.clock.now());
    const payee = ((await call(0, p, 'POST', '/platform/external-accounts', currency === 'GBP' ? samples.GBP_ACCOUNT : samples.EUR_ACCOUNT)).json() as { id: string }).id;
    return { p, account, payee };
  }
  const balanceOf = async (p: TestPlatform, id: string) =>
    ((await call(0, p, 'GET', '/customers/internal-accounts?limit=100')).json() as { data: Array<{ id: string; balance: { amount: number }; totalBalance: { amount: number } }> }).data.find((a) => a.id === id)!;

  it('executes one quote exactly once under concurrent executions from two processes', async () => {
    const { p, account, payee } = await setup();
    const quote = (await call(0, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: account }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 3000 })).json() as { id: string; transactionId: string };
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(i, p, 'POST', `/quotes/${quote.id}/execute`)));
    const statuses = answers.map((a) => a.statusCode).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    const transactions = await ctx.handle.db.selectFrom('transactions').select('id').where('quote_id', '=', parseId('Quote', quote.id)!).execute();
    expect(transactions).toEqual([{ id: parseId('Transaction', quote.transactionId) }]);
    expect((await balanceOf(p, account)).balance.amount).toBe(7000);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('concurrent quotes and executions that together would overdraw the account never take it below zero', async () => {
    const { p, account, payee } = await setup('USD', 10_000);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        call(i, p, 'POST', '/quotes', {
          source: { sourceType: 'ACCOUNT', accountId: account },
          destination: { destinationType: 'ACCOUNT', accountId: payee },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: 2_000,
          immediatelyExecute: true,
        }),
      ),
    );
    const ok = answers.filter((a) => a.statusCode === 201);
    const refused = answers.filter((a) => a.statusCode !== 201);
    expect(ok).toHaveLength(5);
    expect(refused.map((a) => (a.json() as { code: string }).code)).toEqual(Array(7).fill('AMOUNT_OUT_OF_RANGE'));
    const after = await balanceOf(p, account);
    expect(after.balance.amount).toBe(0);
    expect(after.totalBalance.amount).toBe(10_000);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('counts a customer’s daily volume exactly under concurrency (GBP 100.00 here)', async () => {
    const { p, account, payee } = await setup('GBP', 1_000_000);
    const quotes = await Promise.all(
      Array.from({ length: 16 }, async (_, i) =>
        ((await call(i, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: account }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 })).json() as { id: string }).id,
      ),
    );
    const answers = await Promise.all(quotes.map((id, i) => call(i, p, 'POST', `/quotes/${id}/execute`)));
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(10);
    expect(answers.filter((a) => a.statusCode === 429).map((a) => (a.json() as { code: string }).code)).toEqual(Array(6).fill('DAILY_VOLUME_LIMIT_EXCEEDED'));
    const volume = await ctx.handle.db.selectFrom('daily_volumes').select('amount').where('platform_id', '=', p.uuid).execute();
    expect(volume.map((v) => BigInt(v.amount))).toEqual([10_000n]);
    expect((await balanceOf(p, account)).balance.amount).toBe(1_000_000 - 10_000);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
