import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Ledger } from '../../src/modules/ledger/index.js';
import * as idempotency from '../../src/platform/idempotency.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, drainJobs, fundedCustomer, type Json } from '../helpers/payments.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * POST /sandbox/uma/receive retried with its Idempotency-Key after the first request failed
 * past the opening of its payment (the decision's transaction, the answer's, the process): the
 * retry finds that payment — one sender's payment is one INCOMING transaction, credited at most
 * once — where it had opened and credited a second one.
 */
let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx.close();
});
afterEach(async () => {
  vi.restoreAllMocks();
  await receiver?.close();
  await expectLedgerConsistent(ctx.handle.db);
});

/** A platform whose webhook endpoint approves (200), and a customer of it with a USD account and nothing on it. */
async function approvingPlatform(): Promise<{ p: TestPlatform; bob: { customerId: string; umaAddress: string } }> {
  receiver = await WebhookReceiver.start();
  receiver.answer = () => ({ status: 200, body: '{}' });
  const p = await ctx.newPlatform();
  expect((await call(ctx, p, 'PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  const keys = (await call(ctx, p, 'GET', '/webhooks/signing-keys')).json() as { data: Array<{ publicKey: string }> };
  receiver.trust(keys.data.map((k) => k.publicKey));
  const customer = await fundedCustomer(ctx, p, 0);
  const shown = (await call(ctx, p, 'GET', `/customers/${customer.customerId}`)).json() as Json;
  return { p, bob: { customerId: customer.customerId, umaAddress: shown.umaAddress as string } };
}

const sent = (bob: { umaAddress: string }, amount = 1_000) => ({
  senderUmaAddress: '$alice@sender-vasp.example',
  receiverUmaAddress: bob.umaAddress,
  receivingCurrencyCode: 'USD',
  receivingCurrencyAmount: amount,
});
const receive = (p: TestPlatform, body: Json, key: string) => call(ctx, p, 'POST', '/sandbox/uma/receive', body, { 'idempotency-key': key });

/** The platform's INCOMING transactions, oldest first. */
const incomingOf = (p: TestPlatform) =>
  ctx.handle.db.selectFrom('transactions').select(['id', 'status', 'failure_reason']).where('platform_id', '=', p.uuid).where('type', '=', 'INCOMING').orderBy('id').execute();

const lost = () => new Error('connection terminated unexpectedly');

/** The request's answer under `key` cannot be stored (the connection is lost as it commits); the payment's own transactions commit. */
function answerFails(key: string) {
  const store = idempotency.storeAnswer;
  vi.spyOn(idempotency, 'storeAnswer').mockImplementation((trx, scope, claim, response) => (scope.key === key ? Promise.reject(lost()) : store(trx, scope, claim, response)));
}

describe('POST /sandbox/uma/receive retried with its Idempotency-Key after a failure', () => {
  it('the credit’s transaction fails after the platform approved: the retry is 409 retryable naming the one payment, then answers it as its question ended; nothing credited twice, nobody asked twice', async () => {
    const { p, bob } = await approvingPlatform();
    vi.spyOn(Ledger.prototype, 'transfer').mockRejectedValueOnce(lost());
    expectEnvelope(await receive(p, sent(bob), 'credit-fails'), 500, 'INTERNAL_ERROR');
    const [opened] = await incomingOf(p);
    expect(opened!.status).toBe('PENDING');

    const waiting = await receive(p, sent(bob), 'credit-fails');
    expectEnvelope(waiting, 409, 'CONFLICT');
    expect(waiting.headers['x-should-retry']).toBe('true');
    expect((waiting.json() as Json).details).toMatchObject({ idempotencyKey: 'credit-fails', transactionId: `Transaction:${opened!.id}` });
    expect(receiver.of('INCOMING_PAYMENT.PENDING')).toHaveLength(1);

    // Its question stays open until its deadline (the platform's answer was lost with the transaction): then FAILED.
    ctx.clock.advance(10 * 60_000);
    await drainJobs(ctx);
    const answered = await receive(p, sent(bob), 'credit-fails');
    expect(answered.statusCode, answered.body).toBe(200);
    expect(answered.json()).toMatchObject({ id: `Transaction:${opened!.id}`, status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_TIMED_OUT' });
    const replayed = await receive(p, sent(bob), 'credit-fails');
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toBe(answered.body);
    expect(await incomingOf(p)).toHaveLength(1);
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(receiver.of('INCOMING_PAYMENT.PENDING')).toHaveLength(1);
  });

  it('the answer’s transaction fails after the credit committed: the retry at once answers the credited payment; credited once', async () => {
    const { p, bob } = await approvingPlatform();
    answerFails('answer-fails');
    expectEnvelope(await receive(p, sent(bob), 'answer-fails'), 500, 'INTERNAL_ERROR');
    vi.restoreAllMocks();
    const [credited] = await incomingOf(p);
    expect(credited!.status).toBe('COMPLETED');
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 1_000, total: 1_000 });

    const retried = await receive(p, sent(bob), 'answer-fails');
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json()).toMatchObject({ id: `Transaction:${credited!.id}`, status: 'COMPLETED' });
    expect(await incomingOf(p)).toHaveLength(1);
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 1_000, total: 1_000 });
    expect(receiver.of('INCOMING_PAYMENT.PENDING')).toHaveLength(1);
  });

  it('the process dies after the credit (its claim neither answered nor given up): 409 retryable until the claim is abandoned, then the credited payment; credited once', async () => {
    const { p, bob } = await approvingPlatform();
    answerFails('process-dies');
    vi.spyOn(idempotency, 'releaseKey').mockRejectedValueOnce(lost());
    expectEnvelope(await receive(p, sent(bob), 'process-dies'), 500, 'INTERNAL_ERROR');
    vi.restoreAllMocks();
    const [credited] = await incomingOf(p);

    const early = await receive(p, sent(bob), 'process-dies');
    expectEnvelope(early, 409, 'CONFLICT');
    expect(early.headers['x-should-retry']).toBe('true');
    ctx.clock.advance(idempotency.CLAIM_ABANDONED_AFTER_MS);
    const retried = await receive(p, sent(bob), 'process-dies');
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json()).toMatchObject({ id: `Transaction:${credited!.id}`, status: 'COMPLETED' });
    expect(await incomingOf(p)).toHaveLength(1);
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 1_000, total: 1_000 });
  });

  it('the approval question could not be recorded: the retry asks the platform about the payment already opened, and credits it', async () => {
    const { p, bob } = await approvingPlatform();
    vi.spyOn(ctx.app.incomingPayments, 'askPlatform').mockRejectedValueOnce(lost());
    expectEnvelope(await receive(p, sent(bob), 'never-asked'), 500, 'INTERNAL_ERROR');
    const [opened] = await incomingOf(p);
    expect(opened!.status).toBe('PENDING');
    expect(receiver.of('INCOMING_PAYMENT.PENDING')).toHaveLength(0);

    const retried = await receive(p, sent(bob), 'never-asked');
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json()).toMatchObject({ id: `Transaction:${opened!.id}`, status: 'COMPLETED' });
    expect(receiver.of('INCOMING_PAYMENT.PENDING').map((w) => w.body.data!.id)).toEqual([`Transaction:${opened!.id}`]);
    expect(await incomingOf(p)).toHaveLength(1);
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 1_000, total: 1_000 });
  });

  it('a key whose failed request opened a payment, sent with another body: 409 CONFLICT naming the key, no second payment', async () => {
    const { p, bob } = await approvingPlatform();
    answerFails('reused');
    expectEnvelope(await receive(p, sent(bob), 'reused'), 500, 'INTERNAL_ERROR');
    vi.restoreAllMocks();
    const other = await receive(p, sent(bob, 2_000), 'reused');
    expectEnvelope(other, 409, 'CONFLICT');
    expect(other.headers['x-should-retry']).toBe('false');
    expect((other.json() as Json).details).toEqual({ idempotencyKey: 'reused' });
    expect(await incomingOf(p)).toHaveLength(1);
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 1_000, total: 1_000 });
  });
});
