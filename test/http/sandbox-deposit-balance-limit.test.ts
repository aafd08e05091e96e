import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, fundedCustomer, type Json } from '../helpers/payments.js';

/**
 * POST /sandbox/deposits to an account that cannot hold the deposit (past 2^53 − 1 minor units,
 * what an account holds and the API carries exactly) is the caller's error, as sandbox funding
 * says it: 400 AMOUNT_OUT_OF_RANGE, not 500, nothing credited and the deposit id still free.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const MAX = Number.MAX_SAFE_INTEGER;

describe('a sandbox deposit past what the account can hold', () => {
  it('400 AMOUNT_OUT_OF_RANGE; nothing credited, no transaction; the same deposit id credits once the amount fits', async () => {
    const p = await ctx.newPlatform();
    const ann = await fundedCustomer(ctx, p, 0);
    const account = ((await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${ann.customerId}&currency=USD`)).json() as { data: Json[] }).data[0]!;
    const reference = (account.fundingPaymentInstructions as Array<{ accountOrWalletInfo: Json }>)[0]!.accountOrWalletInfo.reference as string;
    // What 90,072 deposits of 1e11 would add up to, in one posting: 1,000 minor units short of the limit.
    await withTx(ctx.handle.db, (trx) =>
      ctx.ledger.transfer(trx, {
        platformId: p.uuid,
        reference: 'near-the-limit',
        postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: parseId('InternalAccount', ann.accountId)! }, amount: BigInt(MAX - 1_000), currency: 'USD' }],
      }),
    );

    const refused = expectEnvelope(await call(ctx, p, 'POST', '/sandbox/deposits', { reference, amount: 1_001, depositId: 'ach-past-the-limit' }), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toEqual({ reason: 'BALANCE_LIMIT', accountId: account.id });
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: MAX - 1_000, total: MAX - 1_000 });
    expect(await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);

    const credited = await call(ctx, p, 'POST', '/sandbox/deposits', { reference, amount: 1_000, depositId: 'ach-past-the-limit' });
    expect(credited.statusCode, credited.body).toBe(200);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: MAX, total: MAX });
  });
});
