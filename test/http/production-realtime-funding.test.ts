import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, expectPaymentEventsMatchCatalogue, type Json } from '../helpers/payments.js';

/**
 * Production REALTIME_FUNDING through POST /quotes and the HTTP rail provider: money that reaches
 * the provider for a payment that cannot use it — cancelled, or received at or after the quote's
 * expiresAt — is recorded and sent back through `/deposits/return`, once; it never funds the payment
 * (docs/payments.md, "Production: the rail-provider contract").
 */

/** A stub of the HTTP rail provider (and of the rate provider production quotes need); deposits answered by reference. */
async function stubProvider() {
  const seen: Array<{ path: string; body: Json; at: Date }> = [];
  const deposits: Record<string, Json | ((body: Json) => Promise<Json>)> = {};
  const server: Server = createServer(async (request: IncomingMessage, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const body = JSON.parse(text) as Json;
    seen.push({ path: request.url!, body, at: prod.clock.now() });
    let answer: Json | undefined;
    if (request.url === '/rates') answer = { asOf: new Date().toISOString(), rates: Object.fromEntries(((body.currencies as string[] | undefined) ?? []).map((c) => [c, c === 'USD' ? '1' : '0.92'])) };
    else if (request.url === '/rails/deposits/status') {
      const entry = deposits[body.reference as string];
      answer = typeof entry === 'function' ? await entry(body) : (entry ?? { status: 'PENDING' });
    } else {
      answer = ({ '/rails/payouts': { status: 'ACCEPTED' }, '/rails/payouts/status': { status: 'COMPLETED' }, '/rails/deposits/return': { status: 'RETURNED' }, '/rails/deposits/list': { deposits: [], nextCursor: null } } as Record<string, Json>)[request.url!];
    }
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, seen, deposits, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let stub: Awaited<ReturnType<typeof stubProvider>>;
let prod: TestContext;
let p: TestPlatform;
let eurPayee: string;
beforeAll(async () => {
  stub = await stubProvider();
  prod = await createTestContext({ env: { CORRIDOR_RAILS_URL: `${stub.base}/rails`, CORRIDOR_RAILS_TOKEN: 'rail-secret', CORRIDOR_RATES_URL: `${stub.base}/rates` } });
  p = await prod.newPlatform('production');
  const created = await call(prod, p, 'POST', '/platform/external-accounts', validSamples(prod.clock.now()).EUR_ACCOUNT);
  expect(created.statusCode, created.body).toBe(201);
  eurPayee = (created.json() as Json).id as string;
}, 120_000);
afterAll(async () => {
  await prod.close();
  await stub.close();
});
afterEach(async () => {
  await expectLedgerConsistent(prod.handle.db);
});

/** A production REALTIME_FUNDING quote of 200.00 USD to an EUR external account: its payment waits for the deposit. */
async function realtimeQuote(): Promise<{ quoteId: string; transactionId: string; reference: string; expiresAt: string }> {
  const created = await call(prod, p, 'POST', '/quotes', {
    source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' },
    destination: { destinationType: 'ACCOUNT', accountId: eurPayee },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: 20_000,
  });
  expect(created.statusCode, created.body).toBe(201);
  const q = created.json() as Json;
  expect(q).toMatchObject({ status: 'PENDING', totalSendingAmount: 20_000 });
  const reference = (q.paymentInstructions as Array<{ accountOrWalletInfo: Json }>)[0]!.accountOrWalletInfo.reference as string;
  return { quoteId: q.id as string, transactionId: q.transactionId as string, reference, expiresAt: q.expiresAt as string };
}

const transaction = async (id: string) => (await call(prod, p, 'GET', `/transactions/${id}`)).json() as Json;
const asked = (path: string, transactionId: string) => stub.seen.filter((s) => s.path === `/rails/${path}` && s.body.transactionId === transactionId);
const received = (amount: string, receivedAt: Date | string = prod.clock.now()) => ({ status: 'RECEIVED', amount, receivedAt: typeof receivedAt === 'string' ? receivedAt : receivedAt.toISOString() });
const cancel = (transactionId: string) => call(prod, p, 'POST', `/transactions/${transactionId}/cancel`);

/** Runs the platform's jobs over `seconds` of time, 10 s at a time (the provider is asked every 10 s). */
async function runFor(seconds: number) {
  for (let s = 0; s < seconds; s += 10) {
    prod.clock.advance(10_000);
    await drainJobs(prod);
  }
}

/** The money of a payment came from Corridor's collection account and went back to it: nothing is left on the way. */
async function expectNothingKept() {
  expect((await accountBalance(prod.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'REALTIME_FUNDING', currency: 'USD' })).total).toBe(0n);
}

describe('a cancelled production REALTIME_FUNDING payment', () => {
  it('returns money that reached the provider before the cancel, once, and credits nothing', async () => {
    const q = await realtimeQuote();
    await drainJobs(prod);
    expect(asked('deposits/status', q.transactionId)).toHaveLength(1);
    // The money arrives between two asks; the platform cancels before Corridor has heard of it.
    stub.deposits[q.reference] = received('20000');
    const cancelled = await cancel(q.transactionId);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });
    expect((cancelled.json() as Json).refund).toBeUndefined();

    await runFor(400);
    // Corridor asked again, learned of the money and told the provider to send it back: once.
    expect(asked('deposits/return', q.transactionId).map((s) => s.body)).toEqual([expect.objectContaining({ reference: q.reference, amount: '20000', expiresAt: q.expiresAt })]);
    expect(asked('payouts', q.transactionId)).toEqual([]);
    const after = await transaction(q.transactionId);
    expect(after).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'COMPLETED', reason: 'USER_CANCELLATION' } });
    expect(await eventTypes(prod, q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    // Nothing more is asked once the money is recorded.
    const asks = asked('deposits/status', q.transactionId).length;
    await runFor(100);
    expect(asked('deposits/status', q.transactionId)).toHaveLength(asks);
    expect(asked('deposits/return', q.transactionId)).toHaveLength(1);
    await expectNothingKept();
  });

  it('keeps asking until expiresAt after a cancel: money that arrives meanwhile is returned; nothing arriving leaves nothing to do', async () => {
    const paid = await realtimeQuote();
    const unpaid = await realtimeQuote();
    await drainJobs(prod);
    expect((await cancel(paid.transactionId)).statusCode).toBe(200);
    expect((await cancel(unpaid.transactionId)).statusCode).toBe(200);
    await runFor(20);
    expect(asked('deposits/return', paid.transactionId)).toEqual([]);
    // Arrived after the cancel, before the deadline.
    stub.deposits[paid.reference] = received('20000');
    await runFor(10);
    expect(asked('deposits/return', paid.transactionId)).toHaveLength(1);
    expect(await transaction(paid.transactionId)).toMatchObject({ status: 'FAILED', refund: { status: 'COMPLETED', reason: 'USER_CANCELLATION' } });

    // The unpaid one is asked about until its deadline (the last ask at or after it), then no more.
    await runFor(400);
    const asks = asked('deposits/status', unpaid.transactionId);
    expect(asks.at(-1)!.body.expiresAt).toBe(unpaid.expiresAt);
    expect(asks.at(-1)!.at.getTime()).toBeGreaterThanOrEqual(new Date(unpaid.expiresAt).getTime());
    const count = asks.length;
    await runFor(100);
    expect(asked('deposits/status', unpaid.transactionId)).toHaveLength(count);
    expect(asked('deposits/return', unpaid.transactionId)).toEqual([]);
    expect(await transaction(unpaid.transactionId)).toMatchObject({ status: 'FAILED' });
    expect((await transaction(unpaid.transactionId)).refund).toBeUndefined();
    await expectNothingKept();
  });

  it('a cancel that lands after the provider answered RECEIVED but before Corridor funds the payment: returned, not funded', async () => {
    const q = await realtimeQuote();
    // The provider's answer is on its way when the platform cancels.
    stub.deposits[q.reference] = async () => {
      const cancelled = await cancel(q.transactionId);
      expect(cancelled.statusCode, cancelled.body).toBe(200);
      stub.deposits[q.reference] = received('20000');
      return received('20000');
    };
    await drainJobs(prod);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'FAILED', refund: { reason: 'USER_CANCELLATION' } });
    await runFor(400);
    expect(asked('deposits/return', q.transactionId)).toHaveLength(1);
    expect(asked('payouts', q.transactionId)).toEqual([]);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'FAILED', refund: { status: 'COMPLETED', reason: 'USER_CANCELLATION' } });
    await expectNothingKept();
  });
});

describe('a production REALTIME_FUNDING deposit and the deadline', () => {
  it('asks with the quote’s expiresAt; money received at or after it does not fund the payment: EXPIRED, returned once', async () => {
    const q = await realtimeQuote();
    await drainJobs(prod);
    expect(asked('deposits/status', q.transactionId).map((s) => s.body)).toEqual([expect.objectContaining({ expiresAt: q.expiresAt, amount: '20000', reference: q.reference })]);
    const deadline = new Date(q.expiresAt);
    // The provider reports the money only once the deadline has passed, received at the deadline.
    stub.deposits[q.reference] = async () => (prod.clock.now() >= deadline ? received('20000', deadline) : { status: 'PENDING' });
    await runFor(400);
    expect(asked('payouts', q.transactionId)).toEqual([]);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED', refund: { status: 'COMPLETED', reason: 'TIMEOUT' } });
    expect(asked('deposits/return', q.transactionId).map((s) => s.body)).toEqual([expect.objectContaining({ amount: '20000', expiresAt: q.expiresAt })]);
    expect(await eventTypes(prod, q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED', 'OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    expect(((await call(prod, p, 'GET', `/quotes/${q.quoteId}`)).json() as Json).status).toBe('EXPIRED');
    await runFor(100);
    expect(asked('deposits/return', q.transactionId)).toHaveLength(1);
    await expectNothingKept();
    await expectPaymentEventsMatchCatalogue(prod);
  });

  it('a RECEIVED answer without receivedAt is outside the contract: asked again, nothing funded; in time, the money funds the payment even when asked after the deadline', async () => {
    const q = await realtimeQuote();
    await drainJobs(prod);
    const deadline = new Date(q.expiresAt);
    const arrived = new Date(deadline.getTime() - 1_000);
    stub.deposits[q.reference] = { status: 'RECEIVED', amount: '20000' };
    await runFor(30);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'PENDING' });
    expect((await transaction(q.transactionId)).refund).toBeUndefined();
    for (const bad of [{ ...received('20000'), receivedAt: 'yesterday' }, { ...received('20000'), receivedAt: 17 }]) {
      stub.deposits[q.reference] = bad;
      await runFor(30);
      expect(await transaction(q.transactionId)).toMatchObject({ status: 'PENDING' });
    }
    // Still unanswered at the deadline: the payment does not expire while the provider is off-contract.
    await runFor(400);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'PENDING' });
    stub.deposits[q.reference] = received('20000', arrived);
    // The off-contract answers backed the job off (up to an hour, with jitter).
    prod.clock.advance(2 * 3_600_000);
    await drainJobs(prod);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'PROCESSING' });
    expect(asked('deposits/return', q.transactionId)).toEqual([]);
    // The payout's rail (SEPA: a day) settles it.
    prod.clock.advance(3 * 86_400_000);
    await drainJobs(prod);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'COMPLETED' });
  });
});
