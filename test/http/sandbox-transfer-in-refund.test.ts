import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, expectPaymentEventsMatchCatalogue, type Json } from '../helpers/payments.js';

/**
 * POST /sandbox/transactions/{id}/refund on a completed transfer-in (an INCOMING transaction whose
 * credit is the pull's posted hold, not a `funding_id` credit): the credit is reversed like any
 * incoming payment's, the money goes back to the external account it was pulled from.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

async function world(): Promise<{ p: TestPlatform; accountId: string; pullable: string }> {
  const p = await ctx.newPlatform();
  const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
  const created = await call(ctx, p, 'POST', '/platform/external-accounts', { ...sample, ownershipType: 'FIRST_PARTY', accountInfo: { ...sample.accountInfo, accountNumber: '98765432101' } });
  expect(created.statusCode, created.body).toBe(201);
  return { p, accountId: own.id as string, pullable: (created.json() as Json).id as string };
}

async function balance(p: TestPlatform): Promise<{ available: number; total: number }> {
  const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  return { available: own.balance.amount as number, total: own.totalBalance.amount as number };
}

async function transferIn(w: Awaited<ReturnType<typeof world>>, amount: number): Promise<Json> {
  const created = await call(ctx, w.p, 'POST', '/transfer-in', { source: { accountId: w.pullable }, destination: { accountId: w.accountId }, amount });
  expect(created.statusCode, created.body).toBe(201);
  await drainJobs(ctx);
  const id = (created.json() as Json).id as string;
  const view = (await call(ctx, w.p, 'GET', `/transactions/${id}`)).json() as Json;
  expect(view).toMatchObject({ type: 'INCOMING', status: 'COMPLETED' });
  return view;
}

describe('the sandbox refund of a transfer-in', () => {
  it('reverses the credit: REFUND_PENDING, then REFUNDED with REFUND_COMPLETED, the money back where it was pulled from', async () => {
    const w = await world();
    const tx = await transferIn(w, 7_500);
    const credited = await balance(w.p);
    expect(credited.available).toBeGreaterThan(0);

    const started = await call(ctx, w.p, 'POST', `/sandbox/transactions/${tx.id}/refund`);
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json()).toMatchObject({ status: 'COMPLETED', refund: { status: 'PENDING' } });
    await drainJobs(ctx);
    expect((await call(ctx, w.p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ status: 'REFUNDED', refund: { status: 'COMPLETED' } });
    expect((await eventTypes(ctx, tx.id as string)).slice(-2)).toEqual(['INCOMING_PAYMENT.REFUND_PENDING', 'INCOMING_PAYMENT.REFUND_COMPLETED']);
    expect(await balance(w.p)).toEqual({ available: 0, total: 0 });
    expect((await accountBalance(ctx.handle.db, w.p.uuid, { kind: 'SETTLEMENT', rail: 'PULL', currency: 'USD' })).total).toBe(0n);
    await expectPaymentEventsMatchCatalogue(ctx);
  });

  it('when the account no longer has the money: REFUND_FAILED, nothing moves, and it may be tried again', async () => {
    const w = await world();
    const tx = await transferIn(w, 5_000);
    const payee = await call(ctx, w.p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).USD_ACCOUNT);
    const spent = await call(ctx, w.p, 'POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: w.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: (payee.json() as Json).id },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 4_000,
      immediatelyExecute: true,
    });
    expect(spent.statusCode, spent.body).toBe(201);
    const before = await balance(w.p);
    expect(before.available).toBeLessThan(5_000);

    expect((await call(ctx, w.p, 'POST', `/sandbox/transactions/${tx.id}/refund`)).statusCode).toBe(200);
    await drainJobs(ctx);
    expect((await call(ctx, w.p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ status: 'COMPLETED', refund: { status: 'FAILED' } });
    expect((await eventTypes(ctx, tx.id as string)).slice(-2)).toEqual(['INCOMING_PAYMENT.REFUND_PENDING', 'INCOMING_PAYMENT.REFUND_FAILED']);
    expect((await balance(w.p)).available).toBe(before.available);
    expect((await call(ctx, w.p, 'POST', `/sandbox/transactions/${tx.id}/refund`)).statusCode).toBe(200);
  });
});
