import type { FastifyPluginAsync } from 'fastify';
import { sql } from 'kysely';
import Type from 'typebox';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_WINDOW_MS, type ApprovalRequest, type DecidedApproval } from '../../src/modules/webhooks/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { IdParam } from '../../src/platform/http/schemas.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { approvalQuestion, untilApprovalWindowOpen, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * A test-only consumer of the approval round trip, standing in for the UMA module (which asks)
 * and the transactions module (whose approve/reject routes decide): its hook records every
 * decision it is given, and its routes call decidePendingApproval as theirs will.
 */
const applied: DecidedApproval[] = [];
const CONSUMER = 'test-incoming-payments';

const consumerRoutes: FastifyPluginAsync = async (api) => {
  api.webhooks.approvals.registerConsumer(CONSUMER, async (trx, decided) => {
    // The hook runs inside the deciding transaction.
    await sql`select 1`.execute(trx);
    applied.push(decided);
  });
  for (const action of ['approve', 'reject'] as const) {
    api.post<{ Params: { id: string }; Body: { receiverCustomerInfo?: Record<string, unknown>; reason?: string } | undefined }>(
      `/test/transactions/:id/${action}`,
      { schema: { params: Type.Object({ id: IdParam('Transaction', 'TRANSACTION_NOT_FOUND', 'transaction') }) }, config: { permission: 'TRANSACT' } },
      async (request) => {
        const body = request.body ?? {};
        const decided = await withTx(ctx.handle.db, (trx) =>
          api.webhooks.approvals.decidePendingApproval(
            trx,
            request.principal.platformId,
            request.params.id,
            action === 'approve'
              ? { status: 'APPROVED', ...(body.receiverCustomerInfo ? { receiverCustomerInfo: body.receiverCustomerInfo } : {}) }
              : { status: 'REJECTED', ...(body.reason ? { reason: body.reason } : {}) },
          ),
        );
        return { status: decided.decision.status, via: decided.via };
      },
    );
  }
};

let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ctx = await createTestContext({ extraRoutes: consumerRoutes });
});
afterAll(() => ctx.close());
afterEach(async () => {
  await receiver?.close();
  applied.length = 0;
});

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${url}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function connectedPlatform(): Promise<TestPlatform> {
  const p = await ctx.newPlatform();
  expect((await call(p, 'PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  const keys = (await call(p, 'GET', '/webhooks/signing-keys')).json() as { data: Array<{ publicKey: string }> };
  receiver.trust(keys.data.map((k) => k.publicKey));
  return p;
}

/** An incoming UMA payment waiting for the platform. */
const question = (p: TestPlatform, requested: Array<{ name: string; mandatory: boolean }> = []): ApprovalRequest => approvalQuestion(p.uuid, CONSUMER, requested);

function approvalWebhooks() {
  return receiver.received.filter((w) => w.body.type === 'INCOMING_PAYMENT.PENDING');
}

describe('incoming-payment approval round trip', () => {
  it('200 approves, with the requested receiver information, and the consumer applies it once', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 200, body: JSON.stringify({ receiverCustomerInfo: { NATIONALITY: 'FR', POSTAL_ADDRESS: '1 rue de Rivoli' } }) });
    const asked = question(p, [
      { name: 'NATIONALITY', mandatory: true },
      { name: 'POSTAL_ADDRESS', mandatory: false },
    ]);
    const decided = await ctx.app.webhooks.approvals.request(asked);
    expect(decided).toMatchObject({
      transactionId: asked.transactionId,
      via: 'WEBHOOK',
      decision: { status: 'APPROVED', receiverCustomerInfo: { NATIONALITY: 'FR', POSTAL_ADDRESS: '1 rue de Rivoli' } },
    });
    expect(applied).toEqual([decided]);
    const [sent] = approvalWebhooks();
    expect(sent!.verified).toBe(true);
    expect(sent!.body.data).toMatchObject({ id: asked.transactionId, requestedReceiverCustomerInfoFields: asked.data.requestedReceiverCustomerInfoFields });
    const log = (await call(p, 'GET', '/webhooks/deliveries?eventType=INCOMING_PAYMENT.PENDING')).json() as { data: Array<{ id: string; status: string; resourceId: string }> };
    expect(log.data).toEqual([expect.objectContaining({ id: sent!.body.id, status: 'SUCCEEDED', resourceId: asked.transactionId })]);
    // The decision stands: the API cannot decide it again.
    expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/reject`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
  });

  it('an approval without an optional requested field approves, by the webhook or through the API', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    const requested = [
      { name: 'NATIONALITY', mandatory: true },
      { name: 'POSTAL_ADDRESS', mandatory: false },
    ];
    receiver.answer = () => ({ status: 200, body: JSON.stringify({ receiverCustomerInfo: { NATIONALITY: 'FR' } }) });
    const decided = await ctx.app.webhooks.approvals.request(question(p, requested));
    expect(decided.decision).toEqual({ status: 'APPROVED', receiverCustomerInfo: { NATIONALITY: 'FR' } });

    receiver.answer = () => ({ status: 202 });
    const asked = question(p, requested);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(2);
    const approved = await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, { receiverCustomerInfo: { NATIONALITY: 'DE' } });
    expect(approved.json()).toEqual({ status: 'APPROVED', via: 'API' });
    expect((await waiting).decision).toEqual({ status: 'APPROVED', receiverCustomerInfo: { NATIONALITY: 'DE' } });
  });

  it('an approval without a mandatory requested field is a webhook error', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 200, body: '{}' });
    const decided = await ctx.app.webhooks.approvals.request(question(p, [{ name: 'NATIONALITY', mandatory: true }]));
    expect(decided.decision).toEqual({ status: 'WEBHOOK_ERROR', error: 'approved without the mandatory receiverCustomerInfo fields NATIONALITY' });
    // An empty value is no value.
    receiver.answer = () => ({ status: 200, body: '{"receiverCustomerInfo":{"NATIONALITY":""}}' });
    const empty = await ctx.app.webhooks.approvals.request(question(p, [{ name: 'NATIONALITY', mandatory: true }]));
    expect(empty.decision).toEqual({ status: 'WEBHOOK_ERROR', error: 'approved without the mandatory receiverCustomerInfo fields NATIONALITY' });
  });

  it('403 rejects with its reason; 422 asks for more information; other answers and no answer are webhook errors', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    const answers: Array<[{ status: number; body?: string }, unknown]> = [
      [{ status: 403, body: '{"status":403,"code":"FORBIDDEN","message":"no","reason":"RESTRICTED_JURISDICTION"}' }, { status: 'REJECTED', reason: 'RESTRICTED_JURISDICTION' }],
      [{ status: 403, body: 'not json' }, { status: 'REJECTED' }],
      [{ status: 422, body: '{"requiredFields":["TAX_ID","REGISTRATION_NUMBER"]}' }, { status: 'INFO_REQUIRED', requiredFields: ['TAX_ID', 'REGISTRATION_NUMBER'] }],
      // What is kept of an answer is bounded: the first 50 fields.
      [
        { status: 422, body: JSON.stringify({ requiredFields: Array.from({ length: 60 }, (_, i) => `FIELD_${i}`) }) },
        { status: 'INFO_REQUIRED', requiredFields: Array.from({ length: 50 }, (_, i) => `FIELD_${i}`) },
      ],
      // And each of them: a reason's first 255 characters, a field's first 100.
      [{ status: 403, body: JSON.stringify({ reason: 'R'.repeat(300) }) }, { status: 'REJECTED', reason: 'R'.repeat(255) }],
      [{ status: 422, body: JSON.stringify({ requiredFields: ['F'.repeat(150)] }) }, { status: 'INFO_REQUIRED', requiredFields: ['F'.repeat(100)] }],
      [{ status: 500, body: 'oops' }, { status: 'WEBHOOK_ERROR', error: 'the endpoint answered HTTP 500' }],
    ];
    for (const [answer, expected] of answers) {
      receiver.answer = () => answer;
      const decided = await ctx.app.webhooks.approvals.request(question(p));
      expect(decided.decision, JSON.stringify(answer)).toEqual(expected);
      expect(decided.via).toBe('WEBHOOK');
    }
    await receiver.close();
    const unreachable = await ctx.app.webhooks.approvals.request(question(p));
    expect(unreachable.decision).toEqual({ status: 'WEBHOOK_ERROR', error: 'connection refused' });
    expect(applied.map((a) => a.decision.status)).toEqual(['REJECTED', 'REJECTED', 'INFO_REQUIRED', 'INFO_REQUIRED', 'REJECTED', 'INFO_REQUIRED', 'WEBHOOK_ERROR', 'WEBHOOK_ERROR']);
    // In the delivery log, a question answered 403 or 422 was delivered (the answer decided it); one answered otherwise, or not at all, failed.
    const log = (await call(p, 'GET', '/webhooks/deliveries?eventType=INCOMING_PAYMENT.PENDING')).json() as { data: Array<{ status: string; lastResponseStatus?: number }> };
    expect(log.data.map((d) => [d.lastResponseStatus ?? null, d.status])).toEqual([
      [null, 'FAILED'],
      [500, 'FAILED'],
      ...[422, 403, 422, 422, 403, 403].map((status) => [status, 'SUCCEEDED']),
    ]);
  });

  it('202 lets the platform decide through the API within the window', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const asked = question(p, [{ name: 'NATIONALITY', mandatory: true }]);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    // A decision that lacks what was asked is refused and changes nothing.
    const incomplete = expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, { receiverCustomerInfo: {} }), 400, 'INVALID_INPUT');
    expect(incomplete.details!.errors).toEqual([{ field: 'receiverCustomerInfo.NATIONALITY', message: 'was requested as mandatory' }]);
    // Another platform cannot decide it.
    const other = await ctx.newPlatform();
    expectEnvelope(await call(other, 'POST', `/test/transactions/${asked.transactionId}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    const approved = await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, { receiverCustomerInfo: { NATIONALITY: 'DE' } });
    expect(approved.json()).toEqual({ status: 'APPROVED', via: 'API' });
    const decided = await waiting;
    expect(decided).toMatchObject({ via: 'API', decision: { status: 'APPROVED', receiverCustomerInfo: { NATIONALITY: 'DE' } } });
    expect(applied).toHaveLength(1);
    expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/reject`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
  });

  it('409 (a repeat of the question) waits for the API within the window, as 202 does', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 409 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    await untilApprovalWindowOpen(ctx.handle.db, asked.transactionId, APPROVAL_WINDOW_MS);
    expect((await call(p, 'POST', `/test/transactions/${asked.transactionId}/reject`, { reason: 'LATER' })).json()).toEqual({ status: 'REJECTED', via: 'API' });
    expect(await waiting).toMatchObject({ via: 'API', decision: { status: 'REJECTED', reason: 'LATER' } });
  });

  it('a slow answer still decides: until it comes, the deadline job waits the send timeout and the window', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 200, delayMs: 500 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    // The window has passed while the receiver is still answering, but not the send timeout.
    ctx.clock.advance(APPROVAL_WINDOW_MS + 1);
    while ((await ctx.jobs.runDue(100)) > 0);
    expect(await waiting).toMatchObject({ via: 'WEBHOOK', decision: { status: 'APPROVED' } });
    expect(applied).toHaveLength(1);
  });

  it('202 and no decision within the window times out; the API is then too late', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    await untilApprovalWindowOpen(ctx.handle.db, asked.transactionId, APPROVAL_WINDOW_MS);
    ctx.clock.advance(APPROVAL_WINDOW_MS);
    const decided = await waiting;
    expect(decided).toMatchObject({ via: 'DEADLINE', decision: { status: 'TIMED_OUT' } });
    expect(applied).toEqual([decided]);
    expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
  });

  it('the window is closed at its deadline exactly: the API is then too late', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    await untilApprovalWindowOpen(ctx.handle.db, asked.transactionId, APPROVAL_WINDOW_MS);
    const { deadline } = await ctx.handle.db.selectFrom('webhook_approvals').select('deadline').where('transaction_id', '=', asked.transactionId).executeTakeFirstOrThrow();
    ctx.clock.set(deadline);
    expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expect(await waiting).toMatchObject({ via: 'DEADLINE', decision: { status: 'TIMED_OUT' } });
  });

  it('a durable job times the question out even if nobody is waiting any more', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    // Past the latest deadline: the job, not the waiter, decides (as after a crash of the asker).
    ctx.clock.advance(ctx.config.webhooks.timeoutMs + APPROVAL_WINDOW_MS);
    while ((await ctx.jobs.runDue(100)) > 0);
    expect(applied).toEqual([expect.objectContaining({ via: 'DEADLINE', decision: { status: 'TIMED_OUT' } })]);
    // The waiter learns the decision that stands, and nothing is applied twice.
    expect((await waiting).via).toBe('DEADLINE');
    expect(applied).toHaveLength(1);
  });

  it('follows the sandbox clock: moved past the window, the question times out; another platform’s stays open', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    const other = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const asked = question(p);
    const otherAsked = question(other);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    const otherWaiting = ctx.app.webhooks.approvals.request(otherAsked);
    await expect.poll(() => approvalWebhooks().length).toBe(2);
    await untilApprovalWindowOpen(ctx.handle.db, asked.transactionId, APPROVAL_WINDOW_MS);
    await untilApprovalWindowOpen(ctx.handle.db, otherAsked.transactionId, APPROVAL_WINDOW_MS);
    // The shared clock stands still: only p's own time passes the window.
    const startedAt = ctx.clock.now().getTime();
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: APPROVAL_WINDOW_MS / 1000 })).statusCode).toBe(200);
    const decided = await waiting;
    expect(decided).toMatchObject({ transactionId: asked.transactionId, via: 'DEADLINE', decision: { status: 'TIMED_OUT' } });
    // Decided at the platform's time, past the window.
    expect(decided.decidedAt.getTime()).toBeGreaterThanOrEqual(startedAt + APPROVAL_WINDOW_MS);
    expect(ctx.clock.now().getTime()).toBe(startedAt);
    expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    // The other platform's window is still open: its decision is taken through the API.
    expect((await call(other, 'POST', `/test/transactions/${otherAsked.transactionId}/reject`, { reason: 'NOPE' })).json()).toEqual({ status: 'REJECTED', via: 'API' });
    expect(await otherWaiting).toMatchObject({ via: 'API', decision: { status: 'REJECTED', reason: 'NOPE' } });
    expect(applied.map((a) => [a.transactionId, a.via])).toEqual([
      [asked.transactionId, 'DEADLINE'],
      [otherAsked.transactionId, 'API'],
    ]);
  });

  it('the deadline job follows the sandbox clock too: moved past the latest deadline, it times the question out', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    const seconds = Math.ceil((ctx.config.webhooks.timeoutMs + APPROVAL_WINDOW_MS) / 1000);
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
    // The job came due with the platform's time and decides (the shared clock has not moved).
    while ((await ctx.jobs.runDue(100)) > 0);
    expect(applied).toEqual([expect.objectContaining({ transactionId: asked.transactionId, via: 'DEADLINE', decision: { status: 'TIMED_OUT' } })]);
    expect((await waiting).via).toBe('DEADLINE');
    expect(applied).toHaveLength(1);
  });

  it('with two questions open on one platform, the API decides the one about its transaction only', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202 });
    const first = question(p);
    const second = question(p);
    const firstWaiting = ctx.app.webhooks.approvals.request(first);
    const secondWaiting = ctx.app.webhooks.approvals.request(second);
    await untilApprovalWindowOpen(ctx.handle.db, first.transactionId, APPROVAL_WINDOW_MS);
    await untilApprovalWindowOpen(ctx.handle.db, second.transactionId, APPROVAL_WINDOW_MS);
    expect((await call(p, 'POST', `/test/transactions/${second.transactionId}/approve`, {})).json()).toEqual({ status: 'APPROVED', via: 'API' });
    expect(await secondWaiting).toMatchObject({ transactionId: second.transactionId, via: 'API', decision: { status: 'APPROVED' } });
    // The first is still open, and its own decision is its own.
    expect((await call(p, 'POST', `/test/transactions/${first.transactionId}/reject`, { reason: 'MINE' })).json()).toEqual({ status: 'REJECTED', via: 'API' });
    expect(await firstWaiting).toMatchObject({ transactionId: first.transactionId, via: 'API', decision: { status: 'REJECTED', reason: 'MINE' } });
    expect(applied.map((a) => [a.transactionId, a.decision.status])).toEqual([
      [second.transactionId, 'APPROVED'],
      [first.transactionId, 'REJECTED'],
    ]);
  });

  it('a platform whose sandbox clock is ahead has the whole window on its own time', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: 3600 })).statusCode).toBe(200);
    receiver.answer = () => ({ status: 202 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await untilApprovalWindowOpen(ctx.handle.db, asked.transactionId, APPROVAL_WINDOW_MS);
    expect((await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, {})).json()).toEqual({ status: 'APPROVED', via: 'API' });
    expect(await waiting).toMatchObject({ via: 'API', decision: { status: 'APPROVED' } });
  });

  it('a platform that moves its clock past the latest deadline while its 202 is on the way times the question out: the window never opens later', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 202, delayMs: 1500 });
    const asked = question(p);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await expect.poll(() => approvalWebhooks().length).toBe(1);
    const seconds = Math.ceil((ctx.config.webhooks.timeoutMs + APPROVAL_WINDOW_MS) / 1000) + 1;
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
    const decided = await Promise.race([waiting, new Promise((resolve) => setTimeout(() => resolve('still open'), 10_000))]);
    expect(decided).toMatchObject({ via: 'DEADLINE', decision: { status: 'TIMED_OUT' } });
    expectEnvelope(await call(p, 'POST', `/test/transactions/${asked.transactionId}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    // Decided once.
    expect(applied.map((a) => a.via)).toEqual(['DEADLINE']);
  });

  it('refuses a payload that does not match the catalogue, and an unknown consumer', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    const asked = question(p);
    await expect(ctx.app.webhooks.approvals.request({ ...asked, data: { ...asked.data, direction: 'SIDEWAYS' } })).rejects.toThrow(/does not match its schema/);
    await expect(ctx.app.webhooks.approvals.request({ ...asked, consumer: 'nobody' })).rejects.toThrow(/no approval consumer named nobody/);
    expect(approvalWebhooks()).toEqual([]);
  });
});
