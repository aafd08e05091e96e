import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { outboxOf } from '../helpers/event-audit.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/**
 * POST /sandbox/internal-accounts/{id}/fund onto an account that cannot hold the sum (more than
 * 2^53 − 1 minor units): 400 AMOUNT_OUT_OF_RANGE with reason BALANCE_LIMIT, as every other credit
 * path answers it (amount-extremes.test.ts), so a caller can tell it from an amount over the
 * route's own maximum; nothing moves and no BALANCE_UPDATED event is recorded. Never a 500.
 */

type Body = Record<string, any>;
const MAX = Number.MAX_SAFE_INTEGER;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('sandbox funding past what an account can hold', () => {
  it('is 400 AMOUNT_OUT_OF_RANGE (reason BALANCE_LIMIT); the balance, the ledger and the events stay as they were', async () => {
    const p = await ctx.newPlatform();
    const call = (method: 'GET' | 'POST', path: string, payload?: object, headers: Record<string, string> = {}) =>
      ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload ? { payload } : {}) });
    const usdAccount = async () => ((await call('GET', '/platform/internal-accounts')).json() as { data: Body[] }).data.find((a) => a.balance.currency.code === 'USD')!;
    const usd = (await usdAccount()).id as string;
    await withTx(ctx.handle.db, (trx) =>
      ctx.ledger.transfer(trx, {
        platformId: p.uuid,
        reference: 'near-the-limit',
        postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: parseId('InternalAccount', usd)! }, amount: BigInt(MAX - 1_000), currency: 'USD' }],
      }),
    );
    const eventsBefore = (await outboxOf(ctx, p.uuid)).length;

    const refused = expectEnvelope(await call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1_001 }, { 'idempotency-key': 'fund-past-limit' }), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toMatchObject({ reason: 'BALANCE_LIMIT', accountId: usd });
    // The retry gets the same answer; still nothing moved.
    expectEnvelope(await call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1_001 }, { 'idempotency-key': 'fund-past-limit' }), 400, 'AMOUNT_OUT_OF_RANGE');
    expect((await usdAccount()).balance.amount).toBe(MAX - 1_000);
    expect((await outboxOf(ctx, p.uuid)).length).toBe(eventsBefore);

    // Up to the limit exactly is fine.
    const filled = await call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1_000 });
    expect(filled.statusCode, filled.body).toBe(200);
    expect((filled.json() as Body).balance.amount).toBe(MAX);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
