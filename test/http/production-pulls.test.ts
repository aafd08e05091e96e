import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, type Json } from '../helpers/payments.js';
import { stubRailProvider } from '../helpers/rail-stub.js';

/**
 * Production pulls: money that comes from an external account (POST /transfer-in, or a quote whose
 * source is a pull-capable external account) is credited only once the production rail provider
 * has collected it (docs/payments.md, "Production: the rail-provider contract"). Never a book
 * transfer: without a provider nothing moves.
 */

const DAY_MS = 86_400_000;

/** The stub rail provider collecting (every pull accepted, then pending) and the production rates (every currency at 0.92 per US dollar). */
const stubProvider = () =>
  stubRailProvider(
    {
      '/rails/collections': { status: 'ACCEPTED' },
      '/rails/collections/status': { status: 'PENDING' },
      '/rails/deposits/list': { deposits: [], nextCursor: null },
    },
    (currency) => (currency === 'USD' ? '1' : '0.92'),
  );

/** A production platform's own USD internal account and a first-party USD bank account money can be pulled from (ACH debit). */
async function productionWorld(c: TestContext) {
  const p = await c.newPlatform('production');
  const own = ((await call(c, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  return { p, accountId: own.id as string, pullable: await pullable(c, p, '98765432101') };
}

async function pullable(c: TestContext, p: TestPlatform, accountNumber: string): Promise<string> {
  const sample = validSamples(c.clock.now()).USD_ACCOUNT!;
  const created = await call(c, p, 'POST', '/platform/external-accounts', { ...sample, ownershipType: 'FIRST_PARTY', accountInfo: { ...sample.accountInfo, accountNumber } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Json).id as string;
}

async function balance(c: TestContext, p: TestPlatform): Promise<{ available: number; total: number }> {
  const own = ((await call(c, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  return { available: own.balance.amount as number, total: own.totalBalance.amount as number };
}

const transaction = async (c: TestContext, p: TestPlatform, id: string) => (await call(c, p, 'GET', `/transactions/${id}`)).json() as Json;

const quoteBody = (source: string, destination: string, amount: number, extra: Json = {}) => ({
  source: { sourceType: 'ACCOUNT', accountId: source },
  destination: { destinationType: 'ACCOUNT', accountId: destination },
  lockedCurrencySide: 'SENDING',
  lockedCurrencyAmount: amount,
  ...extra,
});

/** Nothing was written for the platform's payments, and the pull's ledger account never moved. */
async function expectNothingMoved(c: TestContext, p: TestPlatform) {
  expect(await balance(c, p)).toEqual({ available: 0, total: 0 });
  expect(((await call(c, p, 'GET', '/transactions')).json() as { data: Json[] }).data).toEqual([]);
  expect(await c.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
  expect(await accountBalance(c.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'PULL', currency: 'USD' })).toMatchObject({ total: 0n, available: 0n });
  await expectLedgerConsistent(c.handle.db);
}

describe('a production pull without a rail provider', () => {
  let stub: Awaited<ReturnType<typeof stubProvider>>;
  let prod: TestContext;
  beforeAll(async () => {
    stub = await stubProvider();
    // Rates only: CORRIDOR_RAILS_URL is not set.
    prod = await createTestContext({ env: { CORRIDOR_RATES_URL: `${stub.base}/rates` } });
  }, 120_000);
  afterAll(async () => {
    await prod.close();
    await stub.close();
  });

  it('is refused as a production payout is (501 NOT_IMPLEMENTED), through transfer-in and quotes, and credits nothing', async () => {
    const { p, accountId, pullable } = await productionWorld(prod);

    const transferIn = await call(prod, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId }, amount: 7_500 });
    expect(expectEnvelope(transferIn, 501, 'NOT_IMPLEMENTED').message).toContain('CORRIDOR_RAILS_URL');

    expectEnvelope(await call(prod, p, 'POST', '/quotes', quoteBody(pullable, accountId, 7_500, { immediatelyExecute: true })), 501, 'NOT_IMPLEMENTED');

    const quote = await call(prod, p, 'POST', '/quotes', quoteBody(pullable, accountId, 7_500));
    expect(quote.statusCode, quote.body).toBe(201);
    const executed = await call(prod, p, 'POST', `/quotes/${(quote.json() as Json).id}/execute`);
    expectEnvelope(executed, 501, 'NOT_IMPLEMENTED');
    // The quote was not executed: it still stands.
    expect(((await call(prod, p, 'GET', `/quotes/${(quote.json() as Json).id}`)).json() as Json).status).toBe('PENDING');

    await drainJobs(prod);
    prod.clock.advance(3 * DAY_MS);
    await drainJobs(prod);
    await expectNothingMoved(prod, p);
  });
});

describe('a production pull through the HTTP rail provider', () => {
  let stub: Awaited<ReturnType<typeof stubProvider>>;
  let prod: TestContext;
  beforeAll(async () => {
    stub = await stubProvider();
    prod = await createTestContext({ env: { CORRIDOR_RAILS_URL: `${stub.base}/rails`, CORRIDOR_RAILS_TOKEN: 'rail-secret', CORRIDOR_RATES_URL: `${stub.base}/rates` } });
  }, 120_000);
  afterAll(async () => {
    await prod.close();
    await stub.close();
  });

  const collections = (transactionId: string) => stub.seen.filter((s) => s.path.startsWith('/rails/collections') && s.body.transactionId === transactionId).map((s) => s.path);

  it('transfer-in: asks the provider to collect, credits the account only once it reports the collection settled', async () => {
    const { p, accountId, pullable } = await productionWorld(prod);
    const created = await call(prod, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId }, amount: 7_500 });
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as Json).id as string;
    expect(created.json()).toMatchObject({ type: 'INCOMING', status: 'PENDING' });

    await drainJobs(prod);
    const asked = stub.seen.find((s) => s.path === '/rails/collections' && s.body.transactionId === id);
    expect(asked).toEqual({
      path: '/rails/collections',
      auth: 'Bearer rail-secret',
      body: { transactionId: id, platformId: p.uuid, accountId: pullable, rail: 'ACH', currency: 'USD', amount: '7500', reference: expect.any(String) },
    });
    expect(asked!.body.reference).toBe((await transaction(prod, p, id)).reconciliationInstructions.reference);
    // Handed over, not collected: nothing credited. The money in flight is a hold, counted in
    // totalBalance as pending (DESIGN §6), never in the available balance.
    expect(await transaction(prod, p, id)).toMatchObject({ status: 'PENDING' });
    expect(await balance(prod, p)).toEqual({ available: 0, total: 7_500 });
    expect(collections(id)).toEqual(['/rails/collections']);
    await expectLedgerConsistent(prod.handle.db);

    // At the debit rail's time the provider is asked how it stands; still PENDING: still nothing.
    prod.clock.advance(DAY_MS);
    await drainJobs(prod);
    expect(collections(id)).toEqual(['/rails/collections', '/rails/collections/status']);
    expect(stub.seen.find((s) => s.path === '/rails/collections/status')!.body).toEqual(asked!.body);
    expect(await transaction(prod, p, id)).toMatchObject({ status: 'PENDING' });
    expect(await balance(prod, p)).toEqual({ available: 0, total: 7_500 });

    // Settled at the provider: credited on the next ask (every minute).
    stub.answers['/rails/collections/status'] = { status: 'COLLECTED' };
    prod.clock.advance(60_000);
    await drainJobs(prod);
    expect(await transaction(prod, p, id)).toMatchObject({ type: 'INCOMING', status: 'COMPLETED' });
    expect(await balance(prod, p)).toEqual({ available: 7_500, total: 7_500 });
    expect(collections(id)).toEqual(['/rails/collections', '/rails/collections/status', '/rails/collections/status']);
    expect(await eventTypes(prod, id)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.COMPLETED']);
    // The money came from the pull's settlement account, which the provider's collection stands for.
    expect((await accountBalance(prod.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'PULL', currency: 'USD' })).total).toBe(-7_500n);
    await expectLedgerConsistent(prod.handle.db);

    // Settled once: later jobs change nothing.
    prod.clock.advance(DAY_MS);
    await drainJobs(prod);
    expect(await balance(prod, p)).toEqual({ available: 7_500, total: 7_500 });
    stub.answers['/rails/collections/status'] = { status: 'PENDING' };
  });

  it('a collection the bank takes days over is asked about ever less often, at least hourly, and still credited when collected', async () => {
    const { p, accountId, pullable } = await productionWorld(prod);
    const created = await call(prod, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId }, amount: 2_500 });
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as Json).id as string;
    await drainJobs(prod);
    prod.clock.advance(DAY_MS);
    await drainJobs(prod);
    const asks = () => collections(id).filter((path) => path === '/rails/collections/status').length;
    expect(asks()).toBe(1);
    // The first hour: asked every minute.
    for (let minute = 0; minute < 60; minute++) {
      prod.clock.advance(60_000);
      await drainJobs(prod);
    }
    const firstHour = asks();
    expect(firstHour).toBeGreaterThanOrEqual(59);
    // The next ten hours, looked at every ten minutes: the waits have doubled up to an hour, so a
    // handful of asks, where asking every minute would have asked at each look (60) and spent a
    // 1,000-run job in 1,000 minutes, leaving the payment PENDING with nothing asking.
    for (let look = 0; look < 60; look++) {
      prod.clock.advance(10 * 60_000);
      await drainJobs(prod);
    }
    expect(asks() - firstHour).toBeGreaterThanOrEqual(10);
    expect(asks() - firstHour).toBeLessThanOrEqual(16);
    expect(await transaction(prod, p, id)).toMatchObject({ status: 'PENDING' });
    stub.answers['/rails/collections/status'] = (body) => (body.transactionId === id ? { status: 'COLLECTED' } : { status: 'PENDING' });
    try {
      prod.clock.advance(60 * 60_000);
      await drainJobs(prod);
      expect(await transaction(prod, p, id)).toMatchObject({ status: 'COMPLETED' });
      expect(await balance(prod, p)).toMatchObject({ available: 2_500 });
      await expectLedgerConsistent(prod.handle.db);
    } finally {
      stub.answers['/rails/collections/status'] = { status: 'PENDING' };
    }
  });

  it('a refused or failed collection ends FAILED with nothing credited, through transfer-in and quote execution', async () => {
    const { p, accountId } = await productionWorld(prod);
    const refusedAccount = await pullable(prod, p, '98765432201');
    const failingAccount = await pullable(prod, p, '98765432202');
    stub.answers['/rails/collections'] = (body) => (body.accountId === refusedAccount ? { status: 'REJECTED' } : { status: 'ACCEPTED' });
    stub.answers['/rails/collections/status'] = (body) => (body.accountId === failingAccount ? { status: 'FAILED' } : { status: 'PENDING' });
    try {
      // Refused at once by the provider.
      const refused = await call(prod, p, 'POST', '/transfer-in', { source: { accountId: refusedAccount }, destination: { accountId }, amount: 7_500 });
      expect(refused.statusCode, refused.body).toBe(201);
      const refusedId = (refused.json() as Json).id as string;
      await drainJobs(prod);
      expect(await transaction(prod, p, refusedId)).toMatchObject({ type: 'INCOMING', status: 'FAILED', failureReason: 'COLLECTION_FAILED' });
      expect(await eventTypes(prod, refusedId)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.FAILED']);

      // Accepted, then failed at the provider: a quote executed at once, and a quote executed later.
      const immediate = await call(prod, p, 'POST', '/quotes', quoteBody(failingAccount, accountId, 5_000, { immediatelyExecute: true }));
      expect(immediate.statusCode, immediate.body).toBe(201);
      const quote = await call(prod, p, 'POST', '/quotes', quoteBody(failingAccount, accountId, 6_000));
      expect(quote.statusCode, quote.body).toBe(201);
      const executed = await call(prod, p, 'POST', `/quotes/${(quote.json() as Json).id}/execute`);
      expect(executed.statusCode, executed.body).toBe(200);
      const quoteTransactions = [(immediate.json() as Json).transactionId as string, (quote.json() as Json).transactionId as string];
      await drainJobs(prod);
      for (const id of quoteTransactions) {
        // The debit takes the ACH rail's day, and the payment says so.
        expect(await transaction(prod, p, id)).toMatchObject({ type: 'OUTGOING', status: 'PENDING', expectedSettlementAt: new Date(prod.clock.now().getTime() + DAY_MS).toISOString() });
        expect(collections(id)).toEqual(['/rails/collections']);
        // Handed to the provider: Corridor cannot call it back.
        expectEnvelope(await call(prod, p, 'POST', `/transactions/${id}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
      }
      expect(await balance(prod, p)).toEqual({ available: 0, total: 11_000 });

      prod.clock.advance(DAY_MS);
      await drainJobs(prod);
      for (const id of quoteTransactions) {
        const failed = await transaction(prod, p, id);
        expect(failed).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });
        // Nothing had been taken from anyone: no refund.
        expect(failed.refund).toBeUndefined();
        expect(collections(id)).toEqual(['/rails/collections', '/rails/collections/status']);
        expect(await eventTypes(prod, id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED']);
      }
      expect(await balance(prod, p)).toEqual({ available: 0, total: 0 });
      expect(await accountBalance(prod.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'PULL', currency: 'USD' })).toMatchObject({ total: 0n, available: 0n });
      const catalogue = eventCatalogue();
      for (const event of await prod.handle.db.selectFrom('events').select(['type', 'data']).where('resource_id', 'in', [refusedId, ...quoteTransactions]).execute()) {
        expect(catalogue.validate(event.type, event.data), event.type).toMatchObject({ valid: true });
      }
      await expectLedgerConsistent(prod.handle.db);
    } finally {
      stub.answers['/rails/collections'] = { status: 'ACCEPTED' };
      stub.answers['/rails/collections/status'] = { status: 'PENDING' };
    }
  });

  it('a provider that answers outside the contract is asked again; nothing is credited meanwhile', async () => {
    const { p, accountId, pullable } = await productionWorld(prod);
    stub.answers['/rails/collections'] = { status: 'COLLECTED' };
    try {
      const created = await call(prod, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId }, amount: 2_500 });
      expect(created.statusCode, created.body).toBe(201);
      const id = (created.json() as Json).id as string;
      await drainJobs(prod);
      expect(await transaction(prod, p, id)).toMatchObject({ status: 'PENDING' });
      expect(await balance(prod, p)).toEqual({ available: 0, total: 2_500 });
      stub.answers['/rails/collections'] = { status: 'ACCEPTED' };
      stub.answers['/rails/collections/status'] = { status: 'COLLECTED' };
      prod.clock.advance(DAY_MS);
      await drainJobs(prod);
      expect(await transaction(prod, p, id)).toMatchObject({ status: 'COMPLETED' });
      expect(await balance(prod, p)).toEqual({ available: 2_500, total: 2_500 });
      await expectLedgerConsistent(prod.handle.db);
    } finally {
      stub.answers['/rails/collections'] = { status: 'ACCEPTED' };
      stub.answers['/rails/collections/status'] = { status: 'PENDING' };
    }
  });
});
