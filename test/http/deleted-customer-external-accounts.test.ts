import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { solanaWallet } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, customerUsdAccount, drainJobs, readySender, type Json } from '../helpers/payments.js';

/**
 * A deleted customer's external accounts: nothing is paid to them or pulled from them, whoever
 * sends — the platform's own payments included — at quote creation and at execution, on every
 * path that makes a payment (POST /quotes, immediatelyExecute, REALTIME_FUNDING, transfer-out,
 * transfer-in), and the receiver lookup does not offer them. Like its internal accounts they stay readable and listed; they take no ownership
 * proof (410, as the customer's own writes); they can still be deleted (docs/external-accounts.md).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const customer = (p: TestPlatform) => readySender(ctx, p, 0);

async function externalAccount(p: TestPlatform, body: Json): Promise<Json> {
  const created = await call(ctx, p, 'POST', '/customers/external-accounts', body);
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Json;
}

const usdAccount = (p: TestPlatform, customerId: string, accountNumber: string, extra: Json = {}) => customerUsdAccount(ctx, p, customerId, accountNumber, extra);

/** The platform's own USD account, funded: a payment from it would go through but for the owner check. */
async function platformAccount(p: TestPlatform): Promise<string> {
  const id = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!.id as string;
  expect((await call(ctx, p, 'POST', `/sandbox/internal-accounts/${id}/fund`, { amount: 100_000 })).statusCode).toBe(200);
  return id;
}

async function platformBalance(p: TestPlatform, id: string): Promise<{ available: number; total: number }> {
  const account = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data.find((a) => a.id === id)!;
  return { available: account.balance.amount as number, total: account.totalBalance.amount as number };
}

const quote = (p: TestPlatform, source: Json, destination: string, extra: Json = {}) =>
  call(ctx, p, 'POST', '/quotes', { source, destination: { destinationType: 'ACCOUNT', accountId: destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 7_000, ...extra });

/** A platform's own payment, executed at once, from its funded USD account to a live customer's bank account. */
async function platformPaysCustomer() {
  const p = await ctx.newPlatform();
  const own = await platformAccount(p);
  const c = await customer(p);
  const payee = await usdAccount(p, c.customerId, '12345678901');
  const paid = await quote(p, { sourceType: 'ACCOUNT', accountId: own }, payee, { immediatelyExecute: true });
  expect(paid.statusCode, paid.body).toBe(201);
  return { p, own, c };
}

const transactionsOf = (p: TestPlatform) => ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute();

describe('paying to or pulling from a deleted customer’s external account', () => {
  it('is refused 410 CUSTOMER_DELETED on every path, for quotes made before the DELETE too; nothing moves', async () => {
    const p = await ctx.newPlatform();
    const own = await platformAccount(p);
    const c = await customer(p);
    const payee = await usdAccount(p, c.customerId, '12345678901');
    const pullable = await usdAccount(p, c.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
    const fromOwn = { sourceType: 'ACCOUNT', accountId: own };
    // While the customer lives, the platform may pay to its account and pull from it.
    const payout = await quote(p, fromOwn, payee);
    expect(payout.statusCode, payout.body).toBe(201);
    const pull = await quote(p, { sourceType: 'ACCOUNT', accountId: pullable }, own);
    expect(pull.statusCode, pull.body).toBe(201);
    const sender = await customer(p);
    const lookup = () => call(ctx, p, 'GET', `/receiver/external-account/${payee}?customerId=${sender.customerId}`);
    expect((await lookup()).statusCode).toBe(200);

    expect((await call(ctx, p, 'DELETE', `/customers/${c.customerId}`)).statusCode).toBe(200);

    const receives = { customerId: c.customerId, accountId: payee };
    expect(expectEnvelope(await lookup(), 410, 'CUSTOMER_DELETED').details).toEqual(receives);
    expect(expectEnvelope(await call(ctx, p, 'POST', `/quotes/${(payout.json() as Json).id}/execute`), 410, 'CUSTOMER_DELETED').details).toEqual(receives);
    expect(expectEnvelope(await quote(p, fromOwn, payee), 410, 'CUSTOMER_DELETED').details).toEqual(receives);
    expect(expectEnvelope(await quote(p, fromOwn, payee, { immediatelyExecute: true }), 410, 'CUSTOMER_DELETED').details).toEqual(receives);
    expect(expectEnvelope(await quote(p, { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, payee), 410, 'CUSTOMER_DELETED').details).toEqual(receives);
    const transferOut = await call(ctx, p, 'POST', '/transfer-out', { source: { accountId: own }, destination: { accountId: payee, paymentRail: 'ACH' }, amount: 7_000 });
    expect(expectEnvelope(transferOut, 410, 'CUSTOMER_DELETED').details).toEqual(receives);

    expectEnvelope(await call(ctx, p, 'POST', `/quotes/${(pull.json() as Json).id}/execute`), 410, 'CUSTOMER_DELETED');
    expectEnvelope(await quote(p, { sourceType: 'ACCOUNT', accountId: pullable }, own), 410, 'CUSTOMER_DELETED');
    expectEnvelope(await call(ctx, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId: own }, amount: 7_000 }), 410, 'CUSTOMER_DELETED');

    await drainJobs(ctx);
    for (const q of [payout, pull]) expect(((await call(ctx, p, 'GET', `/quotes/${(q.json() as Json).id}`)).json() as Json).status).toBe('PENDING');
    expect(await transactionsOf(p)).toEqual([]);
    expect(await platformBalance(p, own)).toEqual({ available: 100_000, total: 100_000 });
  });

  it('a REALTIME_FUNDING payout quoted before the DELETE is not paid when its money comes: the money goes back, ACCOUNT_CANNOT_RECEIVE', async () => {
    const p = await ctx.newPlatform();
    const c = await customer(p);
    const payee = await usdAccount(p, c.customerId, '12345678901');
    // The platform's own payment: nothing of the customer's is in flight, so the DELETE goes through.
    const realtime = await quote(p, { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, payee);
    expect(realtime.statusCode, realtime.body).toBe(201);
    expect((await call(ctx, p, 'DELETE', `/customers/${c.customerId}`)).statusCode).toBe(200);
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: (realtime.json() as Json).id, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE', refund: { reason: 'TRANSACTION_FAILED' } });
    await drainJobs(ctx);
    const [payment] = await transactionsOf(p);
    expect(((await call(ctx, p, 'GET', `/transactions/Transaction:${payment!.id}`)).json() as Json).status).toBe('FAILED');
  });

  it('a platform payout executed before the DELETE is not handed to the rail: it fails ACCOUNT_CANNOT_RECEIVE, the hold released', async () => {
    const { p, own, c } = await platformPaysCustomer();
    expect(await platformBalance(p, own)).toEqual({ available: 93_000, total: 100_000 });
    // The money held is the platform's: nothing of the customer's is in flight, so the DELETE goes through.
    expect((await call(ctx, p, 'DELETE', `/customers/${c.customerId}`)).statusCode).toBe(200);
    await drainJobs(ctx);
    const [payment] = await transactionsOf(p);
    const failed = (await call(ctx, p, 'GET', `/transactions/Transaction:${payment!.id}`)).json() as Json;
    expect(failed).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE', refund: { reason: 'TRANSACTION_FAILED' } });
    expect(await platformBalance(p, own)).toEqual({ available: 100_000, total: 100_000 });
  });

  it('a live customer’s external account is still paid by the platform (the refusal is the deletion’s)', async () => {
    const { p, own } = await platformPaysCustomer();
    expect((await platformBalance(p, own)).available).toBe(93_000);
  });
});

describe('a deleted customer’s external accounts through their own endpoints', () => {
  it('stay readable and listed, take no ownership proof (410; a link issued before is gone), and can be deleted', async () => {
    const p = await ctx.newPlatform();
    const c = await customer(p);
    const payee = await usdAccount(p, c.customerId, '12345678901');
    const wallet = async () =>
      externalAccount(p, { customerId: c.customerId, currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } });
    const signed = await wallet();
    const live = await wallet();
    const challenge = (id: string, method: string) => call(ctx, p, 'POST', `/customers/external-accounts/${id}/challenge`, { method });
    expect((await challenge(signed.id as string, 'WALLET_SIGNATURE')).statusCode).toBe(201);
    const issued = await challenge(live.id as string, 'LIVENESS');
    expect(issued.statusCode, issued.body).toBe(201);
    const link = new URL((issued.json() as Json).verificationLink as string).pathname;

    expect((await call(ctx, p, 'DELETE', `/customers/${c.customerId}`)).statusCode).toBe(200);

    const read = await call(ctx, p, 'GET', `/customers/external-accounts/${payee}`);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toMatchObject({ id: payee, customerId: c.customerId, status: 'ACTIVE' });
    const listed = (await call(ctx, p, 'GET', `/customers/external-accounts?customerId=${c.customerId}`)).json() as { data: Json[] };
    expect(listed.data.map((a) => a.id).sort()).toEqual([payee, signed.id, live.id].sort());

    for (const account of [signed, live]) {
      for (const method of ['WALLET_SIGNATURE', 'LIVENESS']) expectEnvelope(await challenge(account.id as string, method), 410, 'CUSTOMER_DELETED');
      expectEnvelope(await call(ctx, p, 'POST', `/customers/external-accounts/${account.id}/verify`, { signature: '0x00' }), 410, 'CUSTOMER_DELETED');
    }
    expect((await ctx.app.inject({ method: 'GET', url: link })).statusCode).toBe(404);
    expectEnvelope(await ctx.app.inject({ method: 'POST', url: link, payload: { consent: true } }), 404, 'REFERENCE_NOT_FOUND');
    for (const account of [signed, live]) {
      expect((await call(ctx, p, 'GET', `/customers/external-accounts/${account.id}`)).json()).toMatchObject({ status: 'PENDING_OWNERSHIP_VERIFICATION' });
    }
    const statusEvents = await ctx.handle.db.selectFrom('events').select('id').where('type', '=', 'EXTERNAL_ACCOUNT.STATUS_UPDATED').where('platform_id', '=', p.uuid).execute();
    expect(statusEvents).toEqual([]);

    expect((await call(ctx, p, 'DELETE', `/customers/external-accounts/${payee}`)).statusCode).toBe(204);
    expectEnvelope(await call(ctx, p, 'GET', `/customers/external-accounts/${payee}`), 404, 'REFERENCE_NOT_FOUND');
    const after = (await call(ctx, p, 'GET', `/customers/external-accounts?customerId=${c.customerId}`)).json() as { data: Json[] };
    expect(after.data.map((a) => a.id).sort()).toEqual([signed.id, live.id].sort());
  });
});
