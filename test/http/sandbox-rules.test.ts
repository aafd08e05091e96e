import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, depositableCustomer, fundedCustomer, readySender, type Json } from '../helpers/payments.js';

/**
 * Rules of the sandbox simulations that their other tests leave open: deposits without an id,
 * a repeated deposit id that differs in currency or account, sending to a quote no payment of
 * which waits, and the bounds and refusals of a simulated UMA payment.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const deposit = (p: TestPlatform, body: Json) => call(ctx, p, 'POST', '/sandbox/deposits', body);
const incoming = async (p: TestPlatform) => (await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).length;

describe('POST /sandbox/deposits without a deposit id', () => {
  it('is a deposit of its own each time: the same deposit sent twice credits twice, as two transactions', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const [first, second] = [await deposit(p, { reference: ann.reference, amount: 400 }), await deposit(p, { reference: ann.reference, amount: 400 })];
    expect([first.statusCode, second.statusCode], second.body).toEqual([200, 200]);
    expect((second.json() as Json).id).not.toBe((first.json() as Json).id);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 800, total: 800 });
    expect(await incoming(p)).toBe(2);
  });
});

describe('POST /sandbox/deposits with a deposit id already credited', () => {
  it('in another currency is 409 naming the first transaction, and credits nothing', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const first = await deposit(p, { reference: ann.reference, amount: 700, depositId: 'wire-1' });
    expect(first.statusCode, first.body).toBe(200);
    const refused = expectEnvelope(await deposit(p, { reference: ann.reference, amount: 700, currency: 'EUR', depositId: 'wire-1' }), 409, 'CONFLICT');
    expect(refused.details).toEqual({ transactionId: (first.json() as Json).id });
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 700, total: 700 });
    expect(await incoming(p)).toBe(1);
  });

  it('for another account of the platform is 409 naming the first transaction, and credits neither again', async () => {
    const p = await ctx.newPlatform();
    const [ann, bob] = [await depositableCustomer(ctx, p), await depositableCustomer(ctx, p)];
    const first = await deposit(p, { reference: ann.reference, amount: 700, depositId: 'wire-2' });
    expect(first.statusCode, first.body).toBe(200);
    const refused = expectEnvelope(await deposit(p, { reference: bob.reference, amount: 700, depositId: 'wire-2' }), 409, 'CONFLICT');
    expect(refused.details).toEqual({ transactionId: (first.json() as Json).id });
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 700, total: 700 });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await incoming(p)).toBe(1);
  });
});

describe('POST /sandbox/send', () => {
  it('answers a quote funded from an account and never executed 409 (no payment of it waits for money), an unknown quote 404; nothing moves', async () => {
    const p = await ctx.newPlatform();
    const c = await readySender(ctx, p, 5_000);
    const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!.id as string;
    const quoted = await call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: c.accountId }, destination: { destinationType: 'ACCOUNT', accountId: own }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 });
    expect(quoted.statusCode, quoted.body).toBe(201);
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: (quoted.json() as Json).id, currencyCode: 'USD' }), 409, 'CONFLICT');
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: 'Quote:019542f5-b3e7-7d02-8000-000000000009', currencyCode: 'USD' }), 404, 'QUOTE_NOT_FOUND');
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 5_000, total: 5_000 });
    expect(await incoming(p)).toBe(0);
  });
});

describe('POST /sandbox/uma/receive', () => {
  const receive = (p: TestPlatform, body: Json) => call(ctx, p, 'POST', '/sandbox/uma/receive', body);
  const sent = (customerId: string, amount: number, code = 'USD') => ({ senderUmaAddress: '$alice@sender-vasp.example', customerId, receivingCurrencyCode: code, receivingCurrencyAmount: amount });
  const configure = async (p: TestPlatform, types: string[]) => {
    const usd = { currencyCode: 'USD', minAmount: 100, maxAmount: 5_000, requiredCounterpartyFields: [], enabledTransactionTypes: types };
    const patched = await call(ctx, p, 'PATCH', '/config', { supportedCurrencies: [usd] });
    expect(patched.statusCode, patched.body).toBe(200);
  };

  it("takes amounts from the platform's minimum to its maximum inclusive, and refuses one unit outside either", async () => {
    const p = await ctx.newPlatform();
    await configure(p, ['INCOMING', 'OUTGOING']);
    const c = await fundedCustomer(ctx, p, 0);
    for (const amount of [99, 5_001]) {
      const refused = expectEnvelope(await receive(p, sent(c.customerId, amount)), 400, 'AMOUNT_OUT_OF_RANGE');
      expect(refused.details, String(amount)).toEqual({ min: 100, max: 5_000, currency: 'USD' });
    }
    expect(await incoming(p)).toBe(0);
    // No webhook endpoint: the payment is opened and answered (its approval fails), not refused.
    for (const amount of [100, 5_000]) {
      const taken = await receive(p, sent(c.customerId, amount));
      expect(taken.statusCode, taken.body).toBe(200);
      expect((taken.json() as Json).receivedAmount).toMatchObject({ amount, currency: { code: 'USD' } });
    }
    expect(await incoming(p)).toBe(2);
  });

  it('refuses a currency the platform supports without INCOMING (400 INVALID_CURRENCY), opening nothing', async () => {
    const p = await ctx.newPlatform();
    await configure(p, ['OUTGOING']);
    const c = await fundedCustomer(ctx, p, 0);
    expect(expectEnvelope(await receive(p, sent(c.customerId, 1_000)), 400, 'INVALID_CURRENCY').details).toEqual({ currency: 'USD' });
    expect(await incoming(p)).toBe(0);
  });

  it('refuses a customer whose account in the currency is not ACTIVE (400 INVALID_CURRENCY), opening nothing', async () => {
    const p = await ctx.newPlatform();
    const c = await fundedCustomer(ctx, p, 0);
    // No route freezes an account: the provider's state, written as its sync would.
    await ctx.handle.db.updateTable('internal_accounts').set({ status: 'FROZEN' }).where('platform_id', '=', p.uuid).where('id', '=', c.accountId.slice('InternalAccount:'.length)).execute();
    const refused = expectEnvelope(await receive(p, sent(c.customerId, 1_000)), 400, 'INVALID_CURRENCY');
    expect(refused.details).toEqual({ currency: 'USD', customerId: c.customerId });
    expect(await incoming(p)).toBe(0);
  });

  it("answers an unknown customer id, or another platform's, 404 USER_NOT_FOUND, opening nothing", async () => {
    const p = await ctx.newPlatform();
    const q = await ctx.newPlatform();
    const theirs = await fundedCustomer(ctx, q, 0);
    expectEnvelope(await receive(p, sent(theirs.customerId, 1_000)), 404, 'USER_NOT_FOUND');
    expectEnvelope(await receive(p, sent('Customer:00000000-0000-7000-8000-000000000000', 1_000)), 404, 'USER_NOT_FOUND');
    expect(await incoming(p)).toBe(0);
    expect(await incoming(q)).toBe(0);
  });
});
