import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, fundedCustomer } from '../helpers/payments.js';

/**
 * An Idempotency-Key names one request: its method, its routed path and its body. The same key and
 * the same body sent to another resource's path (another account's funding) is another request:
 * 409 CONFLICT and nothing moves. Replaying the first answer instead would tell the caller the
 * second account was funded when no money reached it.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

describe('one Idempotency-Key and one body on two accounts’ funding paths', () => {
  it('funds the first account once; the second path is 409 CONFLICT and its balance does not move', async () => {
    const p = await ctx.newPlatform();
    const ann = await fundedCustomer(ctx, p, 0);
    const bob = await fundedCustomer(ctx, p, 0);
    const key = { 'idempotency-key': 'fund-once' };
    const funded = await call(ctx, p, 'POST', `/sandbox/internal-accounts/${ann.accountId}/fund`, { amount: 5_000 }, key);
    expect(funded.statusCode, funded.body).toBe(200);

    expectEnvelope(await call(ctx, p, 'POST', `/sandbox/internal-accounts/${bob.accountId}/fund`, { amount: 5_000 }, key), 409, 'CONFLICT');
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });

    const replayed = await call(ctx, p, 'POST', `/sandbox/internal-accounts/${ann.accountId}/fund`, { amount: 5_000 }, key);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 5_000, total: 5_000 });
  });
});
