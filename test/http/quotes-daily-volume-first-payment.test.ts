import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, customerUsdAccount, drainJobs, readySender } from '../helpers/payments.js';

/**
 * The daily volume is one conditional upsert whose condition (`amount + n <= limit`) guards only
 * an existing row: the first payment of a customer's day inserts its row. A payment larger than
 * the whole day's limit (here USD 1,000.00, below the single-transaction maximum) must be refused
 * all the same, on its own, with nothing counted and nothing moved.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_DAILY_VOLUME_LIMIT: JSON.stringify({ USD: 100_000 }) } });
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

describe('the first payment of a customer’s day, larger than the daily volume limit', () => {
  it('429 DAILY_VOLUME_LIMIT_EXCEEDED at execution, through immediatelyExecute and from REALTIME_FUNDING: nothing counted, nothing moved', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 500_000);
    const payee = await customerUsdAccount(ctx, p, sender.customerId, '12345678901');
    const fromAccount = (amount: number) => ({ source: { sourceType: 'ACCOUNT', accountId: sender.accountId }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount });

    const quoted = await call(ctx, p, 'POST', '/quotes', fromAccount(100_001));
    expect(quoted.statusCode, quoted.body).toBe(201);
    const refused = expectEnvelope(await call(ctx, p, 'POST', `/quotes/${(quoted.json() as { id: string }).id}/execute`), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    expect(refused.details).toMatchObject({ limit: 100_000, currency: 'USD' });
    expectEnvelope(await call(ctx, p, 'POST', '/quotes', { ...fromAccount(100_001), immediatelyExecute: true }), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    const realtime = { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: sender.customerId }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 100_001 };
    expectEnvelope(await call(ctx, p, 'POST', '/quotes', realtime), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');

    await drainJobs(ctx);
    expect(await ctx.handle.db.selectFrom('daily_volumes').select('amount').where('platform_id', '=', p.uuid).execute()).toEqual([]);
    expect(await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).where('type', '=', 'OUTGOING').execute()).toEqual([]);
    expect(await balances(ctx, p, sender.customerId)).toEqual({ available: 500_000, total: 500_000 });
    // The whole limit is still there: a payment of exactly it goes out.
    expect((await call(ctx, p, 'POST', '/quotes', { ...fromAccount(100_000), immediatelyExecute: true })).statusCode).toBe(201);
  });
});
