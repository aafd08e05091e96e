import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { call, fundedCustomer, type Json } from '../helpers/payments.js';
import { WebhookReceiver, type Answer } from '../helpers/webhook-receiver.js';

/**
 * What a receiver answers is outside Corridor's control: text PostgreSQL cannot store (U+0000,
 * a lone surrogate) in it must neither fail an approval nor stall a delivery, and a delivery
 * whose job dies of something other than the endpoint's answer ends FAILED, not PENDING.
 */
let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await receiver?.close();
  await sql`drop trigger if exists refuse_attempts on webhook_attempts`.execute(ctx.handle.db);
});

interface Delivery {
  id: string;
  type: string;
  status: string;
  attempts: number;
  lastError?: string;
  attemptLog: Array<{ outcome: string; responseStatus?: number; responseBody?: string; error?: string }>;
}

async function connectedPlatform(): Promise<TestPlatform> {
  receiver = await WebhookReceiver.start();
  const p = await ctx.newPlatform();
  const patched = await ctx.app.inject({ method: 'PATCH', url: '/2025-10-13/config', headers: { authorization: p.auth }, payload: { webhookEndpoint: receiver.url } });
  expect(patched.statusCode, patched.body).toBe(200);
  const keys = (await call(ctx, p, 'GET', '/webhooks/signing-keys')).json() as { data: Array<{ publicKey: string }> };
  receiver.trust(keys.data.map((k) => k.publicKey));
  return p;
}

async function drain(): Promise<void> {
  while ((await ctx.jobs.runDue(100)) > 0);
}

async function deliveries(p: TestPlatform, query = ''): Promise<Delivery[]> {
  const list = (await call(ctx, p, 'GET', `/webhooks/deliveries${query}`)).json() as { data: Array<{ id: string }> };
  return Promise.all(list.data.map(async (d) => (await call(ctx, p, 'GET', `/webhooks/deliveries/${d.id}`)).json() as Delivery));
}

/** Makes logging an attempt fail for platform `p`: always, only when an answer's body is kept, or for any attempt but a delivery's first. */
async function refuseAttempts(p: TestPlatform, only: 'always' | 'with a body' | 'after the first'): Promise<void> {
  const condition = { always: 'true', 'with a body': 'new.response_body is not null', 'after the first': 'new.number > 1' }[only];
  await sql
    .raw(
      `create or replace function refuse_attempt() returns trigger language plpgsql as $$
       begin
         if new.platform_id = '${p.uuid}' and ${condition} then raise exception 'attempts refused by the test'; end if;
         return new;
       end $$`,
    )
    .execute(ctx.handle.db);
  await sql`create trigger refuse_attempts before insert on webhook_attempts for each row execute function refuse_attempt()`.execute(ctx.handle.db);
}

const receive = (p: TestPlatform, umaAddress: string) =>
  call(ctx, p, 'POST', '/sandbox/uma/receive', { senderUmaAddress: '$alice@sender-vasp.example', receiverUmaAddress: umaAddress, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 1_000 });

async function umaCustomer(p: TestPlatform): Promise<string> {
  const customer = await fundedCustomer(ctx, p, 0);
  return ((await call(ctx, p, 'GET', `/customers/${customer.customerId}`)).json() as Json).umaAddress as string;
}

describe('an approval answer with text PostgreSQL cannot store', () => {
  const cases: Array<{ name: string; answer: Answer; status: string; failureReason?: string; outcome: Record<string, unknown>; logged: string }> = [
    { name: '200 with a raw NUL after the JSON', answer: { status: 200, body: '{"ok":true}\u0000' }, status: 'COMPLETED', outcome: {}, logged: '{"ok":true}\ufffd' },
    {
      name: '403 with an escaped NUL in the reason',
      answer: { status: 403, body: '{"reason":"a\\u0000b"}' },
      status: 'REJECTED',
      failureReason: 'COMPLIANCE_REJECTED',
      outcome: { reason: 'a\ufffdb' },
      logged: '{"reason":"a\\u0000b"}',
    },
    {
      name: '200 with a lone surrogate in receiverCustomerInfo (value and name)',
      answer: { status: 200, body: '{"receiverCustomerInfo":{"X":"\\ud800","\\udc00Y":"ok"}}' },
      status: 'COMPLETED',
      outcome: { receiverCustomerInfo: { X: '\ufffd', '\ufffdY': 'ok' } },
      logged: '{"receiverCustomerInfo":{"X":"\\ud800","\\udc00Y":"ok"}}',
    },
    {
      name: '422 with a NUL as the required field',
      answer: { status: 422, body: '{"requiredFields":["\\u0000","TAX_ID"]}' },
      status: 'FAILED',
      failureReason: 'PAY_REQUEST_FAILED',
      outcome: { requiredFields: ['\ufffd', 'TAX_ID'] },
      logged: '{"requiredFields":["\\u0000","TAX_ID"]}',
    },
  ];

  it.each(cases)('$name: decided as answered, the answer logged', async ({ answer, status, failureReason, outcome, logged }) => {
    const p = await connectedPlatform();
    const uma = await umaCustomer(p);
    receiver.answer = () => answer;
    const response = await receive(p, uma);
    expect(response.statusCode, response.body).toBe(200);
    const tx = response.json() as Json;
    expect(tx).toMatchObject({ status, ...(failureReason ? { failureReason } : {}) });
    const approval = await ctx.handle.db.selectFrom('webhook_approvals').selectAll().where('transaction_id', '=', tx.id).executeTakeFirstOrThrow();
    expect(approval).toMatchObject({ decided_via: 'WEBHOOK', outcome });
    const [asked] = await deliveries(p, '?eventType=INCOMING_PAYMENT.PENDING');
    expect(asked).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(asked!.attemptLog).toEqual([expect.objectContaining({ outcome: 'SUCCEEDED', responseStatus: answer.status, responseBody: logged })]);
  });

  it('the decision stands when the answer cannot be logged at all', async () => {
    const p = await connectedPlatform();
    const uma = await umaCustomer(p);
    await drain();
    receiver.answer = () => ({ status: 403, body: '{"reason":"NO"}' });
    await refuseAttempts(p, 'with a body');
    // The attempt is logged without the body.
    let tx = (await receive(p, uma)).json() as Json;
    expect(tx).toMatchObject({ status: 'REJECTED', failureReason: 'COMPLIANCE_REJECTED' });
    const [asked] = await deliveries(p, '?eventType=INCOMING_PAYMENT.PENDING');
    expect(asked).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(asked!.attemptLog[0]).not.toHaveProperty('responseBody');
    expect(asked!.attemptLog[0]!.error).toMatch(/answer could not be logged/);
    // Not even without it: the platform's answer still decides.
    await sql`drop trigger refuse_attempts on webhook_attempts`.execute(ctx.handle.db);
    await refuseAttempts(p, 'always');
    receiver.answer = () => ({ status: 200, body: '{}' });
    tx = (await receive(p, uma)).json() as Json;
    expect(tx).toMatchObject({ status: 'COMPLETED' });
  });
});

describe('an event delivery answered with text PostgreSQL cannot store', () => {
  it('is delivered once and logged: no re-sends, nothing left PENDING', async () => {
    const p = await connectedPlatform();
    receiver.answer = () => ({ status: 200, body: '{"ok":true}\u0000' });
    await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Nul Answer' });
    await drain();
    const log = await deliveries(p);
    expect(log.length).toBeGreaterThanOrEqual(2);
    for (const d of log) {
      expect(d).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      expect(d.attemptLog[0]!.responseBody).toBe('{"ok":true}\ufffd');
    }
    expect(receiver.received).toHaveLength(log.length);
  });

  it('POST /sandbox/webhooks/test reports the answer instead of failing, and leaves no PENDING row', async () => {
    const p = await connectedPlatform();
    await drain();
    receiver.answer = () => ({ status: 200, body: 'fine\u0000' });
    const ok = await call(ctx, p, 'POST', '/sandbox/webhooks/test');
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ response_status: 200, response_body: 'fine\u0000' });
    receiver.answer = () => ({ status: 500, body: '{"error":"\\ud800"}\u0000' });
    const refused = expectEnvelope(await call(ctx, p, 'POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
    expect(refused.details).toMatchObject({ responseStatus: 500 });
    const tests = (await deliveries(p)).filter((d) => d.type === 'TEST');
    expect(tests.map((d) => d.status).sort()).toEqual(['FAILED', 'SUCCEEDED', 'SUCCEEDED']);
  });

  it('whose job dies of an error that is not the endpoint’s answer ends FAILED with that error', async () => {
    const p = await connectedPlatform();
    await drain();
    const earlier = new Set((await deliveries(p)).map((d) => d.id));
    await refuseAttempts(p, 'always');
    await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Never Logged' });
    for (let i = 0; i < 40; i++) {
      await drain();
      const pending = await ctx.handle.db.selectFrom('jobs').select('id').where('platform_id', '=', p.uuid).where('status', '=', 'queued').execute();
      if (pending.length === 0) break;
      ctx.clock.advance(2 * 3600_000);
    }
    const failed = (await deliveries(p)).filter((d) => !earlier.has(d.id));
    expect(failed.length).toBeGreaterThanOrEqual(1);
    for (const d of failed) {
      expect(d).toMatchObject({ status: 'FAILED', attempts: 0, lastError: expect.stringMatching(/attempts refused by the test/) });
      expect(d).not.toHaveProperty('nextAttemptAt');
    }
  });
  it('a delivery a re-send delivered while its own sending failed stays SUCCEEDED', async () => {
    const p = await connectedPlatform();
    await drain();
    // The TEST's own sending is answered late; the re-send sent meanwhile is answered at once and
    // logged first, so the late answer's attempt (the second) is the one that cannot be logged.
    let sendings = 0;
    receiver.answer = () => (++sendings === 1 ? { status: 200, delayMs: 2_000 } : { status: 200 });
    await refuseAttempts(p, 'after the first');
    const tested = call(ctx, p, 'POST', '/sandbox/webhooks/test');
    let pending: Delivery | undefined;
    for (let i = 0; i < 50 && !pending; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      pending = (await deliveries(p)).find((d) => d.type === 'TEST');
    }
    expect(pending).toMatchObject({ status: 'PENDING' });
    const resent = await call(ctx, p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`);
    expect(resent.statusCode, resent.body).toBe(200);
    expect(resent.json()).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect((await tested).statusCode).toBeGreaterThanOrEqual(500);
    expect(sendings).toBe(2);
    // The failed sending is Corridor's, not the endpoint's: it must not fail what was delivered.
    const [test] = (await deliveries(p)).filter((d) => d.type === 'TEST');
    expect(test).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(test).not.toHaveProperty('lastError');
  });
});

describe('POST /webhooks/deliveries/{id}/resend', () => {
  it('refuses an approval question (409 CONFLICT): re-asking decides nothing', async () => {
    const p = await connectedPlatform();
    const uma = await umaCustomer(p);
    receiver.answer = () => ({ status: 500 });
    expect((await receive(p, uma)).json()).toMatchObject({ status: 'FAILED', failureReason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR' });
    const [asked] = await deliveries(p, '?eventType=INCOMING_PAYMENT.PENDING');
    const before = receiver.received.length;
    receiver.answer = () => ({ status: 200, body: '{}' });
    const refused = expectEnvelope(await call(ctx, p, 'POST', `/webhooks/deliveries/${asked!.id}/resend`), 409, 'CONFLICT');
    expect(refused.details).toMatchObject({ reason: 'APPROVAL_NOT_RESENDABLE' });
    expect(receiver.received).toHaveLength(before);
    expect((await deliveries(p, '?eventType=INCOMING_PAYMENT.PENDING'))[0]).toMatchObject({ status: 'FAILED', attempts: 1 });
  });

  it('sends a TEST again: a ping of the endpoint', async () => {
    const p = await connectedPlatform();
    await drain();
    receiver.answer = () => ({ status: 503 });
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
    const test = (await deliveries(p)).find((d) => d.type === 'TEST' && d.status === 'FAILED')!;
    receiver.answer = () => ({ status: 200 });
    const resent = await call(ctx, p, 'POST', `/webhooks/deliveries/${test.id}/resend`);
    expect(resent.statusCode, resent.body).toBe(200);
    expect(resent.json()).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
  });
});
