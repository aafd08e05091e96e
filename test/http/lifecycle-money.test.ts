import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, customerUsdAccount, drainJobs, readySender, type Json } from '../helpers/payments.js';

/**
 * What happens to money when an object it depends on changes while it waits or travels: a customer
 * deleted, an external account deleted. The rule: no money is left where nobody can move it again.
 * A customer is not deleted while it holds money or has a payment that has not ended; a deleted
 * customer's account is credited by nothing; a quote is executed only if the accounts it reads
 * from and pays to are still there (docs/quotes.md, "Execution checks…"; customers README).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const sender = (p: TestPlatform, amount: number) => readySender(ctx, p, amount);
const usdAccount = (p: TestPlatform, customerId: string, accountNumber: string, extra: Json = {}) => customerUsdAccount(ctx, p, customerId, accountNumber, extra);

async function platformAccount(p: TestPlatform): Promise<string> {
  return ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!.id as string;
}

const quote = (p: TestPlatform, source: string, destination: Json, amount: number, extra: Json = {}) =>
  call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: source }, destination: { destinationType: 'ACCOUNT', ...destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra });

const remove = (p: TestPlatform, customerId: string) => call(ctx, p, 'DELETE', `/customers/${customerId}`);

describe('deleting a customer money depends on', () => {
  it('is refused while it holds a balance (409 BALANCE_NOT_ZERO, nothing changes); once paid out it is deleted, and nothing credits its accounts after', async () => {
    const p = await ctx.newPlatform();
    const c = await sender(p, 50_000);
    const other = await sender(p, 50_000);
    const own = await platformAccount(p);
    const refused = expectEnvelope(await remove(p, c.customerId), 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'BALANCE_NOT_ZERO', customerId: c.customerId, accountIds: [c.accountId] });
    expect(((await call(ctx, p, 'GET', `/customers/${c.customerId}`)).json() as Json).isDeleted).toBe(false);

    // A book transfer into the customer quoted before it is deleted; then its money is paid out.
    const into = (await quote(p, other.accountId, { accountId: c.accountId }, 1_000)).json() as Json;
    expect((await quote(p, c.accountId, { accountId: own }, 50_000, { immediatelyExecute: true })).statusCode).toBe(201);
    await drainJobs(ctx);
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect((await remove(p, c.customerId)).statusCode).toBe(200);

    // Nothing may credit a deleted customer, who could never send the money on.
    expect(expectEnvelope(await call(ctx, p, 'POST', `/quotes/${into.id}/execute`), 410, 'CUSTOMER_DELETED').details).toEqual({ customerId: c.customerId, accountId: c.accountId });
    expectEnvelope(await quote(p, other.accountId, { accountId: c.accountId }, 1_000), 410, 'CUSTOMER_DELETED');
    expectEnvelope(await quote(p, own, { accountId: c.accountId }, 1_000), 410, 'CUSTOMER_DELETED');
    expect(expectEnvelope(await call(ctx, p, 'POST', `/sandbox/internal-accounts/${c.accountId}/fund`, { amount: 5_000 }), 409, 'CONFLICT').details).toMatchObject({ reason: 'CUSTOMER_DELETED' });
    expect(((await call(ctx, p, 'GET', `/quotes/${into.id}`)).json() as Json).status).toBe('PENDING');
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect(await balances(ctx, p, other.customerId)).toEqual({ available: 50_000, total: 50_000 });
  });

  it('is refused while a payment of theirs is in flight (409 PAYMENT_IN_FLIGHT): the returned payout comes back to a live customer', async () => {
    const p = await ctx.newPlatform();
    const c = await sender(p, 10_000);
    const returns = await usdAccount(p, c.customerId, '12345678005'); // 005: returned at the settlement time
    const paid = await quote(p, c.accountId, { accountId: returns, paymentRail: 'ACH' }, 10_000, { immediatelyExecute: true });
    expect(paid.statusCode, paid.body).toBe(201);
    const transactionId = (paid.json() as Json).transactionId as string;
    await drainJobs(ctx);
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect(expectEnvelope(await remove(p, c.customerId), 409, 'CONFLICT').details).toEqual({ reason: 'PAYMENT_IN_FLIGHT', customerId: c.customerId, transactionId });
    // The destination may go meanwhile: the payment still ends, and its refund lands at the source.
    expect((await call(ctx, p, 'DELETE', `/customers/external-accounts/${returns}`)).statusCode).toBe(204);

    ctx.clock.advance(2 * 86_400_000);
    await drainJobs(ctx);
    expect((await call(ctx, p, 'GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'PAYOUT_RETURNED', refund: { status: 'COMPLETED' } });
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 10_000, total: 10_000 });
    expect(expectEnvelope(await remove(p, c.customerId), 409, 'CONFLICT').details).toMatchObject({ reason: 'BALANCE_NOT_ZERO' });
  });

  it('is refused while a transfer-in to them is pending (its hold is in their total balance), and while a REALTIME_FUNDING payment of theirs waits for its money', async () => {
    const p = await ctx.newPlatform();
    const c = await sender(p, 0);
    const pullable = await usdAccount(p, c.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
    const pulled = await call(ctx, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId: c.accountId }, amount: 7_000 });
    expect(pulled.statusCode, pulled.body).toBe(201);
    // The pull is held towards the account from execution on: its total balance shows it.
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 7_000 });
    expect(expectEnvelope(await remove(p, c.customerId), 409, 'CONFLICT').details).toEqual({ reason: 'BALANCE_NOT_ZERO', customerId: c.customerId, accountIds: [c.accountId] });
    await drainJobs(ctx);
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 7_000, total: 7_000 });

    const d = await sender(p, 0);
    const payee = await usdAccount(p, d.customerId, '12345678901');
    const realtime = await call(ctx, p, 'POST', '/quotes', {
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: d.customerId },
      destination: { destinationType: 'ACCOUNT', accountId: payee },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 7_000,
    });
    expect(realtime.statusCode, realtime.body).toBe(201);
    expect(expectEnvelope(await remove(p, d.customerId), 409, 'CONFLICT').details).toMatchObject({ reason: 'PAYMENT_IN_FLIGHT', transactionId: (realtime.json() as Json).transactionId });
    // Unpaid, it expires; then nothing depends on the customer any more.
    ctx.clock.advance(301_000);
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${(realtime.json() as Json).transactionId}`)).json() as Json).status).toBe('EXPIRED');
    expect((await remove(p, d.customerId)).statusCode).toBe(200);
  });
});

describe('a REALTIME_FUNDING payment to a customer deleted while it waited', () => {
  it('is not credited when its money comes: the money goes back and the payment fails ACCOUNT_CANNOT_RECEIVE', async () => {
    const p = await ctx.newPlatform();
    const c = await sender(p, 0);
    // The platform's own payment (no sending customer) to the customer's account: nothing of the
    // customer's is held or sent until the money comes, so the customer can be deleted meanwhile.
    const created = await call(ctx, p, 'POST', '/quotes', {
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' },
      destination: { destinationType: 'ACCOUNT', accountId: c.accountId },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 7_000,
    });
    expect(created.statusCode, created.body).toBe(201);
    const realtime = created.json() as Json;
    expect((await remove(p, c.customerId)).statusCode).toBe(200);
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: realtime.id, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE' });
    await drainJobs(ctx);
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
  });
});

describe('executing a quote whose accounts changed', () => {
  it('a pull from an external account deleted after the quote is refused (404), nothing moves, the quote stays PENDING', async () => {
    const p = await ctx.newPlatform();
    const c = await sender(p, 0);
    const pullable = await usdAccount(p, c.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
    const q = (await quote(p, pullable, { accountId: c.accountId }, 7_000)).json() as Json;
    expect(q.status).toBe('PENDING');
    expect((await call(ctx, p, 'DELETE', `/customers/external-accounts/${pullable}`)).statusCode).toBe(204);
    expectEnvelope(await call(ctx, p, 'POST', `/quotes/${q.id}/execute`), 404, 'REFERENCE_NOT_FOUND');
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('PENDING');
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect((await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).length).toBe(0);
  });
});

describe('a DELETE racing an execution', () => {
  it('of a pull to the customer: either the pull runs and the delete is refused, or the delete wins and the pull is refused (410); never both', async () => {
    const p = await ctx.newPlatform();
    for (let round = 0; round < 6; round++) {
      const c = await sender(p, 0);
      const pullable = await usdAccount(p, c.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
      const q = (await quote(p, pullable, { accountId: c.accountId }, 7_000)).json() as Json;
      const [executed, deleted] = await Promise.all([call(ctx, p, 'POST', `/quotes/${q.id}/execute`), remove(p, c.customerId)]);
      expect([executed.statusCode, deleted.statusCode].sort(), `${executed.body} ${deleted.body}`).toSatisfy(
        (pair: number[]) => (pair[0] === 200 && pair[1] === 409) || (pair[0] === 200 && pair[1] === 410),
      );
      if (deleted.statusCode === 200) expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
      await drainJobs(ctx);
    }
  });
});
