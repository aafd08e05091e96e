import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, DbHandle } from '../../src/platform/db/database.js';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { holdLocks, openSide, started, waitingFor, type Started } from '../helpers/lock-queue.js';
import { balances, call, customerUsdAccount, drainJobs, readySender, type Json } from '../helpers/payments.js';

/**
 * A DELETE /customers/{id} racing the execution of a quote that pays the customer, with the order
 * forced both ways by a transaction the test holds open on its own connection: the execution reads
 * the owner FOR SHARE (quotes' checkCreditable, checkExternalOwner), the DELETE locks it FOR
 * UPDATE, so one always sees the other and money never reaches a deleted customer.
 */
describe.runIf(onPostgres)('a customer DELETE racing an execution that pays the customer', () => {
  let ctx: TestContext;
  /** The test's own connections (the app's pool is the app's), on the test file's schema. */
  let side: DbHandle;
  beforeAll(async () => {
    ctx = await createTestContext();
    side = await openSide(ctx.handle.db, 3);
  });
  afterAll(async () => {
    await side?.close();
    await ctx.close();
  });

  const hold = (lock: (trx: Db) => Promise<unknown>) => holdLocks(side.db, lock);

  type Answer = Awaited<ReturnType<typeof call>>;

  /**
   * The customer's row held FOR UPDATE, its DELETE queued behind the hold, then the quote's
   * execution queued behind both; the hold released: both answers.
   */
  async function deletionBeforeExecution(p: TestPlatform, customerId: string, quoteId: string) {
    const held = await hold((trx) => trx.selectFrom('customers').select('id').where('id', '=', parseId('Customer', customerId)!).forUpdate().execute());
    const deletion = started(call(ctx, p, 'DELETE', `/customers/${customerId}`));
    let execution: Started<Answer>;
    try {
      const deleting = await waitingFor(side.db, [held.pid], deletion);
      execution = started(call(ctx, p, 'POST', `/quotes/${quoteId}/execute`));
      await waitingFor(side.db, [held.pid, deleting], execution, [deleting]);
    } finally {
      await held.release();
    }
    return { deleted: await deletion.request, execution: await execution.request };
  }

  const sender = (p: TestPlatform, amount: number) => readySender(ctx, p, amount);

  const quote = (p: TestPlatform, source: string, destination: string, extra: Json = {}) =>
    call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: source }, destination: { destinationType: 'ACCOUNT', accountId: destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000, ...extra });

  async function pendingQuote(p: TestPlatform, source: string, destination: string): Promise<string> {
    const created = await quote(p, source, destination);
    expect(created.statusCode, created.body).toBe(201);
    return (created.json() as Json).id as string;
  }

  const platformAccount = async (p: TestPlatform) => ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!.id as string;
  const transactionsOf = (quoteId: string) => ctx.handle.db.selectFrom('transactions').select('id').where('quote_id', '=', parseId('Quote', quoteId)!).execute();

  it('execution first (held open after its owner read): the DELETE waits for it, then is refused 409 — the credit is held towards the account', async () => {
    const p = await ctx.newPlatform();
    const payer = await sender(p, 50_000);
    const c = await sender(p, 0);
    // An earlier payment of the payer's gives it a daily-volume row: the test holds that row, which
    // the execution updates after it has read the credited account's owner FOR SHARE.
    expect((await quote(p, payer.accountId, await platformAccount(p), { immediatelyExecute: true })).statusCode).toBe(201);
    const quoteId = await pendingQuote(p, payer.accountId, c.accountId);

    const held = await hold((trx) => trx.selectFrom('daily_volumes').select('amount').where('platform_id', '=', p.uuid).where('customer_id', '=', parseId('Customer', payer.customerId)!).forUpdate().execute());
    const execution = started(call(ctx, p, 'POST', `/quotes/${quoteId}/execute`));
    let deletion: Started<Answer>;
    try {
      const executing = await waitingFor(side.db, [held.pid], execution);
      deletion = started(call(ctx, p, 'DELETE', `/customers/${c.customerId}`));
      await waitingFor(side.db, [executing], deletion, [held.pid]);
    } finally {
      await held.release();
    }

    const executed = await execution.request;
    expect(executed.statusCode, executed.body).toBe(200);
    const refused = expectEnvelope(await deletion.request, 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'BALANCE_NOT_ZERO', customerId: c.customerId, accountIds: [c.accountId] });
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/customers/${c.customerId}`)).json() as Json).isDeleted).toBe(false);
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 1_000, total: 1_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('DELETE first (the customer row held FOR UPDATE, the DELETE queued, then the execution): the execution is refused 410, nothing moves', async () => {
    const p = await ctx.newPlatform();
    const payer = await sender(p, 50_000);
    const c = await sender(p, 0);
    const quoteId = await pendingQuote(p, payer.accountId, c.accountId);

    const { deleted, execution } = await deletionBeforeExecution(p, c.customerId, quoteId);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(expectEnvelope(execution, 410, 'CUSTOMER_DELETED').details).toEqual({ customerId: c.customerId, accountId: c.accountId });
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/quotes/${quoteId}`)).json() as Json).status).toBe('PENDING');
    expect(await transactionsOf(quoteId)).toEqual([]);
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect(await balances(ctx, p, payer.customerId)).toEqual({ available: 50_000, total: 50_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('DELETE first, the platform paying to the customer’s external account: the execution is refused 410, nothing moves', async () => {
    const p = await ctx.newPlatform();
    const own = await platformAccount(p);
    expect((await call(ctx, p, 'POST', `/sandbox/internal-accounts/${own}/fund`, { amount: 50_000 })).statusCode).toBe(200);
    const c = await sender(p, 0);
    const payeeId = await customerUsdAccount(ctx, p, c.customerId, '12345678901');
    const quoteId = await pendingQuote(p, own, payeeId);

    const { deleted, execution } = await deletionBeforeExecution(p, c.customerId, quoteId);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(expectEnvelope(execution, 410, 'CUSTOMER_DELETED').details).toEqual({ customerId: c.customerId, accountId: payeeId });
    await drainJobs(ctx);
    expect(await transactionsOf(quoteId)).toEqual([]);
    const ownAfter = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
    expect([ownAfter.balance.amount, ownAfter.totalBalance.amount]).toEqual([50_000, 50_000]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('DELETE first, the platform pulling from the customer’s external account: the execution is refused 410, nothing moves', async () => {
    // The quote's sender is the customer, but its re-check reads without a lock: the pull source's owner, read FOR SHARE, is what waits for the DELETE.
    const p = await ctx.newPlatform();
    const own = await platformAccount(p);
    const c = await sender(p, 0);
    const pullable = await customerUsdAccount(ctx, p, c.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
    const quoteId = await pendingQuote(p, pullable, own);

    const { deleted, execution } = await deletionBeforeExecution(p, c.customerId, quoteId);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(expectEnvelope(execution, 410, 'CUSTOMER_DELETED').details).toMatchObject({ customerId: c.customerId });
    await drainJobs(ctx);
    expect(await transactionsOf(quoteId)).toEqual([]);
    const ownAfter = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
    expect([ownAfter.balance.amount, ownAfter.totalBalance.amount]).toEqual([0, 0]);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
