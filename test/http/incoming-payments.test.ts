import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_WINDOW_MS } from '../../src/modules/webhooks/index.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, drainJobs, eventTypes, expectPaymentEventsMatchCatalogue, fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';
import { untilApprovalWindowOpen, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Incoming payments through POST /sandbox/uma/receive: the approval round trip decides, the
 * ledger credits the receiver only once approved, and a completed payment can be refunded.
 */
let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  // Every INCOMING_PAYMENT event these flows recorded matches the catalogue (the refunds' included);
  // PENDING is the approval question, sent by the round trip, which checks it against the catalogue itself.
  const seen = await expectPaymentEventsMatchCatalogue(ctx);
  expect([...seen].filter((t) => t.startsWith('INCOMING_PAYMENT.')).sort()).toEqual([
    'INCOMING_PAYMENT.COMPLETED',
    'INCOMING_PAYMENT.FAILED',
    'INCOMING_PAYMENT.REFUND_COMPLETED',
    'INCOMING_PAYMENT.REFUND_FAILED',
    'INCOMING_PAYMENT.REFUND_PENDING',
  ]);
  await ctx.close();
});
afterEach(async () => {
  await receiver?.close();
  await expectLedgerConsistent(ctx.handle.db);
});

async function connectedPlatform(): Promise<TestPlatform> {
  receiver = await WebhookReceiver.start();
  const p = await ctx.newPlatform();
  const patched = await ctx.app.inject({ method: 'PATCH', url: '/2025-10-13/config', headers: { authorization: p.auth }, payload: { webhookEndpoint: receiver.url } });
  expect(patched.statusCode, patched.body).toBe(200);
  const keys = (await call(ctx, p, 'GET', '/webhooks/signing-keys')).json() as { data: Array<{ publicKey: string }> };
  receiver.trust(keys.data.map((k) => k.publicKey));
  return p;
}

async function receiverCustomer(p: TestPlatform) {
  const customer = await fundedCustomer(ctx, p, 0);
  const shown = (await call(ctx, p, 'GET', `/customers/${customer.customerId}`)).json() as Json;
  return { ...customer, umaAddress: shown.umaAddress as string };
}

const receive = (p: TestPlatform, body: Json) => call(ctx, p, 'POST', '/sandbox/uma/receive', body);
const sent = (customer: { umaAddress: string }, amount = 12_345) => ({
  senderUmaAddress: '$alice@sender-vasp.example',
  receiverUmaAddress: customer.umaAddress,
  receivingCurrencyCode: 'USD',
  receivingCurrencyAmount: amount,
});

describe('POST /sandbox/uma/receive', () => {
  it('200 approves: the customer is credited, COMPLETED, with its events in the same transaction as the credit', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    receiver.answer = () => ({ status: 200, body: '{}' });
    const response = await receive(p, sent(bob));
    expect(response.statusCode, response.body).toBe(200);
    const tx = response.json() as Json;
    expect(tx).toMatchObject({
      type: 'INCOMING',
      direction: 'CREDIT',
      status: 'COMPLETED',
      customerId: bob.customerId,
      source: { sourceType: 'UMA_ADDRESS', umaAddress: '$alice@sender-vasp.example' },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress, currency: 'USD' },
      receivedAmount: { amount: 12_345, currency: { code: 'USD' } },
    });
    expect(tx.settledAt).toEqual(expect.any(String));
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 12_345, total: 12_345 });
    // The platform was asked with the transaction as it stood: PENDING.
    const asked = receiver.of('INCOMING_PAYMENT.PENDING');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.verified).toBe(true);
    expect(asked[0]!.body.data).toMatchObject({ id: tx.id, status: 'PENDING', type: 'INCOMING' });
    expect(await eventTypes(ctx, tx.id)).toEqual(['INCOMING_PAYMENT.COMPLETED']);
    await drainJobs(ctx);
    await expect.poll(() => receiver.of('INCOMING_PAYMENT.COMPLETED').map((w) => w.body.data!.id)).toEqual([tx.id]);
    // GET answers the same, and the list finds it by type and by either account identifier.
    expect((await call(ctx, p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ status: 'COMPLETED', type: 'INCOMING' });
    const listed = (await call(ctx, p, 'GET', `/transactions?type=INCOMING&accountIdentifier=${encodeURIComponent(bob.umaAddress)}`)).json() as { data: Json[] };
    expect(listed.data.map((t) => t.id)).toEqual([tx.id]);
  });

  it('names the receiver by customerId as well', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    const response = await receive(p, { senderUmaAddress: '$alice@sender-vasp.example', customerId: bob.customerId, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 500 });
    expect(response.json()).toMatchObject({ status: 'COMPLETED', destination: { umaAddress: bob.umaAddress } });
    expect((await balances(ctx, p, bob.customerId)).available).toBe(500);
  });

  it('403 rejects: REJECTED (COMPLIANCE_REJECTED), nothing credited', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    receiver.answer = () => ({ status: 403, body: '{"reason":"RESTRICTED"}' });
    const tx = (await receive(p, sent(bob))).json() as Json;
    expect(tx).toMatchObject({ status: 'REJECTED', failureReason: 'COMPLIANCE_REJECTED' });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await eventTypes(ctx, tx.id)).toEqual(['INCOMING_PAYMENT.FAILED']);
  });

  it('422 (more information): FAILED PAY_REQUEST_FAILED; an unusable answer or none: PAYMENT_APPROVAL_WEBHOOK_ERROR', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    receiver.answer = () => ({ status: 422, body: '{"requiredFields":["TAX_ID"]}' });
    expect((await receive(p, sent(bob))).json()).toMatchObject({ status: 'FAILED', failureReason: 'PAY_REQUEST_FAILED' });
    receiver.answer = () => ({ status: 500, body: 'oops' });
    expect((await receive(p, sent(bob))).json()).toMatchObject({ status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR' });
    // A platform without a webhook endpoint cannot approve anything.
    const silent = await ctx.newPlatform();
    const carol = await receiverCustomer(silent);
    expect((await receive(silent, sent(carol))).json()).toMatchObject({ status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR' });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await balances(ctx, silent, carol.customerId)).toEqual({ available: 0, total: 0 });
  });

  /** 700 sent to a new receiver whose platform answered 202: the payment waits for the platform's decision. */
  async function awaitingApproval() {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    receiver.answer = () => ({ status: 202 });
    const waiting = receive(p, sent(bob, 700));
    await expect.poll(() => receiver.of('INCOMING_PAYMENT.PENDING').length).toBe(1);
    const id = receiver.of('INCOMING_PAYMENT.PENDING')[0]!.body.data!.id as string;
    return { p, bob, waiting, id };
  }

  it('202, then POST /transactions/{id}/approve within the window: credited', async () => {
    const { p, bob, waiting, id } = await awaitingApproval();
    const approved = await call(ctx, p, 'POST', `/transactions/${id}/approve`, {});
    expect(approved.statusCode, approved.body).toBe(200);
    // The decision and the credit are one transaction: the approve call answers it credited.
    expect(approved.json()).toMatchObject({ id, status: 'COMPLETED' });
    expect((await waiting).json()).toMatchObject({ id, status: 'COMPLETED' });
    expect((await balances(ctx, p, bob.customerId)).available).toBe(700);
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${id}/reject`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
  });

  it('202, then reject: REJECTED; 202 and no decision in the window: FAILED PAYMENT_APPROVAL_TIMED_OUT', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    receiver.answer = () => ({ status: 202 });
    const rejecting = receive(p, sent(bob));
    await expect.poll(() => receiver.of('INCOMING_PAYMENT.PENDING').length).toBe(1);
    const first = receiver.of('INCOMING_PAYMENT.PENDING')[0]!.body.data!.id as string;
    expect((await call(ctx, p, 'POST', `/transactions/${first}/reject`, { reason: 'no' })).json()).toMatchObject({ status: 'REJECTED', failureReason: 'COMPLIANCE_REJECTED' });
    expect((await rejecting).json()).toMatchObject({ status: 'REJECTED' });

    const timing = receive(p, sent(bob));
    await expect.poll(() => receiver.of('INCOMING_PAYMENT.PENDING').length).toBe(2);
    const second = receiver.of('INCOMING_PAYMENT.PENDING')[1]!.body.data!.id as string;
    await untilApprovalWindowOpen(ctx.handle.db, second, APPROVAL_WINDOW_MS);
    ctx.clock.advance(APPROVAL_WINDOW_MS);
    expect((await timing).json()).toMatchObject({ id: second, status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_TIMED_OUT' });
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${second}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await eventTypes(ctx, second)).toEqual(['INCOMING_PAYMENT.FAILED']);
  });

  it('202, the receiver deleted, then approve: FAILED OFFRAMP_FAILED, nobody credited', async () => {
    const { p, bob, waiting, id } = await awaitingApproval();
    expect((await call(ctx, p, 'DELETE', `/customers/${bob.customerId}`)).statusCode).toBe(200);
    const approved = await call(ctx, p, 'POST', `/transactions/${id}/approve`, {});
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toMatchObject({ id, status: 'FAILED', failureReason: 'OFFRAMP_FAILED' });
    expect((await waiting).json()).toMatchObject({ id, status: 'FAILED', failureReason: 'OFFRAMP_FAILED' });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await eventTypes(ctx, id)).toEqual(['INCOMING_PAYMENT.FAILED']);
  });

  it('202, then the receiver deleted and the payment approved at once: either it is credited and the deletion refused, or neither', async () => {
    const { p, bob, waiting, id } = await awaitingApproval();
    const [deleted, approved] = await Promise.all([call(ctx, p, 'DELETE', `/customers/${bob.customerId}`), call(ctx, p, 'POST', `/transactions/${id}/approve`, {})]);
    await waiting;
    const credited = (await balances(ctx, p, bob.customerId)).available === 700;
    expect([deleted.statusCode, approved.json().status]).toEqual(credited ? [409, 'COMPLETED'] : [200, 'FAILED']);
  });

  it('403 USER_NOT_READY for a customer whose review was REJECTED, by address or id: nothing opened, no approval asked', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    let asked = 0;
    receiver.answer = () => {
      asked++;
      return { status: 200, body: '{}' };
    };
    // The platform runs its own KYC, so it may set the review's outcome.
    expect((await call(ctx, p, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    const rejected = await call(ctx, p, 'PATCH', `/customers/${bob.customerId}`, { customerType: 'INDIVIDUAL', kycStatus: 'REJECTED' });
    expect(rejected.statusCode, rejected.body).toBe(200);
    expectEnvelope(await receive(p, sent(bob)), 403, 'USER_NOT_READY');
    const { receiverUmaAddress: _address, ...byId } = sent(bob);
    expectEnvelope(await receive(p, { ...byId, customerId: bob.customerId }), 403, 'USER_NOT_READY');
    expect(asked).toBe(0);
    expect(((await call(ctx, p, 'GET', `/transactions?customerId=${bob.customerId}&type=INCOMING`)).json() as { data: Json[] }).data).toEqual([]);
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
  });

  it('validates the request: receiver named once, known, currency received, amount in range; sandbox only', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    expectEnvelope(await receive(p, { ...sent(bob), customerId: bob.customerId }), 400, 'INVALID_INPUT');
    const { receiverUmaAddress: _r, ...nobody } = sent(bob);
    expectEnvelope(await receive(p, nobody), 400, 'INVALID_INPUT');
    const sender = expectEnvelope(await receive(p, { ...sent(bob), senderUmaAddress: 'alice' }), 400, 'INVALID_UMA_ADDRESS');
    expect(sender.details).toEqual({ field: 'senderUmaAddress', value: 'alice' });
    const malformedReceiver = expectEnvelope(await receive(p, { ...sent(bob), receiverUmaAddress: 'bob@nowhere.example' }), 400, 'INVALID_UMA_ADDRESS');
    expect(malformedReceiver.details).toEqual({ field: 'receiverUmaAddress', value: 'bob@nowhere.example' });
    expectEnvelope(await receive(p, { ...sent(bob), receiverUmaAddress: '$nobody@nowhere.example' }), 404, 'UMA_NOT_FOUND');
    expectEnvelope(await receive(p, { ...sent(bob), receivingCurrencyCode: 'EUR' }), 400, 'INVALID_CURRENCY');
    expectEnvelope(await receive(p, { ...sent(bob), receivingCurrencyAmount: 200_000_000 }), 400, 'AMOUNT_OUT_OF_RANGE');
    expectEnvelope(await receive(p, { ...sent(bob), receivingCurrencyAmount: 0 }), 400, 'INVALID_INPUT');
    const production = await ctx.newPlatform('production');
    expectEnvelope(await receive(production, sent(bob)), 403, 'FORBIDDEN');
    expect(receiver.of('INCOMING_PAYMENT.PENDING')).toEqual([]);
  });
});

describe('refund of an incoming payment', () => {
  it('REFUND_PENDING, then the credit is reversed: REFUNDED with REFUND_COMPLETED', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    const tx = (await receive(p, sent(bob, 900))).json() as Json;
    const started = await call(ctx, p, 'POST', `/sandbox/transactions/${tx.id}/refund`);
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json()).toMatchObject({ status: 'COMPLETED', refund: { status: 'PENDING', reason: 'TRANSACTION_FAILED' } });
    expectEnvelope(await call(ctx, p, 'POST', `/sandbox/transactions/${tx.id}/refund`), 409, 'CONFLICT');
    await drainJobs(ctx);
    expect((await call(ctx, p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ status: 'REFUNDED', refund: { status: 'COMPLETED', settledAt: expect.any(String) } });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await eventTypes(ctx, tx.id)).toEqual(['INCOMING_PAYMENT.COMPLETED', 'INCOMING_PAYMENT.REFUND_PENDING', 'INCOMING_PAYMENT.REFUND_COMPLETED']);
    expectEnvelope(await call(ctx, p, 'POST', `/sandbox/transactions/${tx.id}/refund`), 409, 'CONFLICT');
  });

  it('three refunds started at once: one starts, the others are 409, and the money goes back once', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    const tx = (await receive(p, sent(bob, 900))).json() as Json;
    const started = await Promise.all([1, 2, 3].map(() => call(ctx, p, 'POST', `/sandbox/transactions/${tx.id}/refund`)));
    expect(started.map((r) => r.statusCode).sort()).toEqual([200, 409, 409]);
    await Promise.all([drainJobs(ctx), drainJobs(ctx)]);
    expect((await call(ctx, p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ status: 'REFUNDED', refund: { status: 'COMPLETED' } });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    expect(await eventTypes(ctx, tx.id)).toEqual(['INCOMING_PAYMENT.COMPLETED', 'INCOMING_PAYMENT.REFUND_PENDING', 'INCOMING_PAYMENT.REFUND_COMPLETED']);
  });

  it('REFUND_FAILED when the customer no longer has the money: nothing moves, the payment stays COMPLETED', async () => {
    const p = await connectedPlatform();
    const bob = await receiverCustomer(p);
    const tx = (await receive(p, sent(bob, 10_075))).json() as Json;
    // Bob spends it: an outgoing payment holds the whole balance.
    await startPayment(ctx, paymentInput(p, bob));
    expect((await balances(ctx, p, bob.customerId)).available).toBe(0);
    await call(ctx, p, 'POST', `/sandbox/transactions/${tx.id}/refund`);
    await drainJobs(ctx);
    expect((await call(ctx, p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ status: 'COMPLETED', refund: { status: 'FAILED' } });
    expect(await eventTypes(ctx, tx.id)).toEqual(['INCOMING_PAYMENT.COMPLETED', 'INCOMING_PAYMENT.REFUND_PENDING', 'INCOMING_PAYMENT.REFUND_FAILED']);
  });

  it('refuses outgoing payments, unknown ids, other platforms and production platforms', async () => {
    const p = await connectedPlatform();
    const alice = await fundedCustomer(ctx, p, 20_000);
    const outgoing = await startPayment(ctx, paymentInput(p, alice));
    expectEnvelope(await call(ctx, p, 'POST', `/sandbox/transactions/${outgoing.id}/refund`), 409, 'CONFLICT');
    const other = await ctx.newPlatform();
    expectEnvelope(await call(ctx, other, 'POST', `/sandbox/transactions/${outgoing.id}/refund`), 404, 'TRANSACTION_NOT_FOUND');
    // A sandbox operation, like every other (upstream §5.8: 403 outside sandbox).
    const production = await ctx.newPlatform('production');
    expectEnvelope(await call(ctx, production, 'POST', `/sandbox/transactions/${outgoing.id}/refund`), 403, 'FORBIDDEN');
  });
});
