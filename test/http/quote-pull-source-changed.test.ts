import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, customerUsdAccount, drainJobs, readySender, type Json } from '../helpers/payments.js';

/**
 * A quote that pulls from an external account is held at execution to the rule it was created
 * under (quotes' `pullSource`): only an ACTIVE FIRST_PARTY USD/EUR bank account whose holder name
 * was not refused can be pulled from. No request changes these on a bank account today, so the
 * test changes the stored account between creation and execution, once per condition of the rule.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});


const changes: Array<[string, Json]> = [
  ['its status is no longer ACTIVE', { status: 'INACTIVE' }],
  ['it is no longer FIRST_PARTY', { ownership_type: 'THIRD_PARTY' }],
  ['its holder name was refused', { beneficiary_verification_status: 'NOT_MATCHED' }],
];

describe('executing a pull quote whose source can no longer be pulled from', () => {
  it.each(changes)('%s: the same 400 as creating the quote now, nothing moves, the quote stays PENDING', async (_why, change) => {
    const p = await ctx.newPlatform();
    const c = await readySender(ctx, p, 0);
    const pullable = await customerUsdAccount(ctx, p, c.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
    const request = { source: { sourceType: 'ACCOUNT', accountId: pullable }, destination: { destinationType: 'ACCOUNT', accountId: c.accountId }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 7_000 };
    const quoted = await call(ctx, p, 'POST', '/quotes', request);
    expect(quoted.statusCode, quoted.body).toBe(201);
    const quote = quoted.json() as Json;

    await ctx.handle.db.updateTable('external_accounts').set(change).where('id', '=', parseId('ExternalAccount', pullable)!).execute();

    const refusedNow = expectEnvelope(await call(ctx, p, 'POST', '/quotes', request), 400, 'INVALID_INPUT');
    expect(refusedNow.details).toMatchObject({ errors: [{ field: 'source.accountId' }] });
    const executed = await call(ctx, p, 'POST', `/quotes/${quote.id}/execute`);
    expect(executed.statusCode, executed.body).toBe(400);
    expect(executed.json()).toEqual(refusedNow);

    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/quotes/${quote.id}`)).json() as Json).status).toBe('PENDING');
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect(await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
  });
});
