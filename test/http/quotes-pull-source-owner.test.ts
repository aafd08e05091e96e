import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, customerUsdAccount, drainJobs, readySender } from '../helpers/payments.js';

/**
 * A pull names its sender by the source account's owner. A platform naming another customer as
 * `source.customerId` of a customer's bank account is refused (400, field `source.customerId`),
 * as for an internal source: the payment would otherwise be made, checked and counted for the
 * account's owner, not for the customer the platform named.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

describe('a pull from one customer’s bank account named for another customer', () => {
  it('400 INVALID_INPUT source.customerId, also through immediatelyExecute: no quote, no transaction, no money', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 0);
    const bob = await readySender(ctx, p, 0);
    const bobBank = await customerUsdAccount(ctx, p, bob.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
    for (const extra of [{}, { immediatelyExecute: true }]) {
      const refused = expectEnvelope(
        await call(ctx, p, 'POST', '/quotes', {
          source: { sourceType: 'ACCOUNT', accountId: bobBank, customerId: ann.customerId },
          destination: { destinationType: 'ACCOUNT', accountId: ann.accountId },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: 7_000,
          ...extra,
        }),
        400,
        'INVALID_INPUT',
      );
      expect(refused.details).toMatchObject({ errors: [{ field: 'source.customerId' }] });
    }
    await drainJobs(ctx);
    expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
    expect(await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 0, total: 0 });
  });
});
