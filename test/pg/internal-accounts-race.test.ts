import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { holdLocks, openSide, started, waitingFor, type Started } from '../helpers/lock-queue.js';
import { call, fundedCustomer } from '../helpers/payments.js';

/**
 * Races of the internal-accounts module, the order forced by a transaction the test holds open on
 * its own connection. POST /sandbox/internal-accounts/{id}/fund racing a DELETE of the account's
 * owner: the funding reads the owner FOR SHARE (internal-accounts README), the DELETE locks it FOR
 * UPDATE, so money never reaches a deleted customer's account. Two reads renewing the same expired
 * Lightning invoice: the compare-and-set on the old invoice stores one, which both serve.
 */
describe.runIf(onPostgres)('internal-accounts races on PostgreSQL', () => {
  let ctx: TestContext;
  let side: DbHandle;
  beforeAll(async () => {
    ctx = await createTestContext();
    side = await openSide(ctx.handle.db, 2);
  });
  afterAll(async () => {
    await side?.close();
    await ctx.close();
  });

  type Answer = Awaited<ReturnType<typeof call>>;
  /** How many events of `type` the platform recorded for the resource. */
  const eventCount = async (platformId: string, resourceId: string, type: string) =>
    (await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', platformId).where('resource_id', '=', resourceId).where('type', '=', type).execute()).length;

  it('DELETE first (the customer row held FOR UPDATE, the DELETE queued, then the funding): the funding waits and is refused 409 CUSTOMER_DELETED, nothing credited', async () => {
    const p = await ctx.newPlatform();
    const c = await fundedCustomer(ctx, p, 0);
    const held = await holdLocks(side.db, (trx) => trx.selectFrom('customers').select('id').where('id', '=', parseId('Customer', c.customerId)!).forUpdate().execute());
    const deletion = started(call(ctx, p, 'DELETE', `/customers/${c.customerId}`));
    let funding: Started<Answer>;
    try {
      const deleting = await waitingFor(side.db, [held.pid], deletion);
      funding = started(call(ctx, p, 'POST', `/sandbox/internal-accounts/${c.accountId}/fund`, { amount: 5_000 }));
      await waitingFor(side.db, [held.pid, deleting], funding, [deleting]);
    } finally {
      await held.release();
    }
    const deleted = await deletion.request;
    expect(deleted.statusCode, deleted.body).toBe(200);
    const refused = expectEnvelope(await funding.request, 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'CUSTOMER_DELETED', accountId: c.accountId, customerId: c.customerId });
    expect(await eventCount(p.uuid, c.accountId, 'INTERNAL_ACCOUNT.BALANCE_UPDATED')).toBe(0);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('two reads renewing one expired Lightning invoice at once (both queued on the account row): one invoice stored, both serve it, one event', async () => {
    const p = await ctx.newPlatform();
    const btc = { currencyCode: 'BTC', minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
    expect((await call(ctx, p, 'PATCH', '/config', { supportedCurrencies: [btc] })).statusCode).toBe(200);
    const c = await fundedCustomer(ctx, p, 0);
    const path = `/customers/internal-accounts?customerId=${c.customerId}&currency=BTC`;
    const account = ((await call(ctx, p, 'GET', path)).json() as { data: Array<{ id: string }> }).data[0]!;
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 366 * 86_400 })).statusCode).toBe(200);

    const held = await holdLocks(side.db, (trx) => trx.selectFrom('internal_accounts').select('id').where('id', '=', parseId('InternalAccount', account.id)!).forUpdate().execute());
    const reads = [started(call(ctx, p, 'GET', path)), started(call(ctx, p, 'GET', path))];
    try {
      const first = await waitingFor(side.db, [held.pid], reads[0]!);
      await waitingFor(side.db, [held.pid, first], reads[1]!, [first]);
    } finally {
      await held.release();
    }
    const invoices = [];
    for (const read of reads) {
      const answer = await read.request;
      expect(answer.statusCode, answer.body).toBe(200);
      const [shown] = (answer.json() as { data: Array<{ fundingPaymentInstructions: Array<{ accountOrWalletInfo: { accountType: string; invoice?: string } }> }> }).data;
      invoices.push(shown!.fundingPaymentInstructions.find((i) => i.accountOrWalletInfo.accountType === 'LIGHTNING')!.accountOrWalletInfo.invoice);
    }
    expect(invoices[1]).toBe(invoices[0]);
    const stored = ((await call(ctx, p, 'GET', path)).json() as { data: Array<{ fundingPaymentInstructions: Array<{ accountOrWalletInfo: { accountType: string; invoice?: string } }> }> }).data[0]!;
    expect(stored.fundingPaymentInstructions.find((i) => i.accountOrWalletInfo.accountType === 'LIGHTNING')!.accountOrWalletInfo.invoice).toBe(invoices[0]);
    expect(await eventCount(p.uuid, account.id, 'INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED')).toBe(1);
  });
});
