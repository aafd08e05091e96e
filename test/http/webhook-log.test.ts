import { createPublicKey, verify } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTEMPT_LOG_LIMIT } from '../../src/modules/webhooks/deliveries.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await receiver?.close();
});

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${url}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

interface Key {
  id: string;
  status: string;
  algorithm: string;
  publicKey: string;
  activatesAt: string;
  retiresAt?: string;
}
interface Delivery {
  id: string;
  type: string;
  resourceId?: string;
  status: string;
  attempts: number;
  lastResponseStatus?: number;
  lastLatencyMs?: number;
  nextAttemptAt?: string;
  deliveredAt?: string;
  data?: Record<string, unknown>;
  attemptLog: Array<{ number: number; outcome: string; responseStatus?: number; responseBody?: string }>;
}

async function keys(p: TestPlatform): Promise<Key[]> {
  const response = await call(p, 'GET', '/webhooks/signing-keys');
  expect(response.statusCode).toBe(200);
  return (response.json() as { data: Key[] }).data;
}

async function drain(): Promise<void> {
  while ((await ctx.jobs.runDue(100)) > 0);
}

async function connectedPlatform(): Promise<TestPlatform> {
  const p = await ctx.newPlatform();
  expect((await call(p, 'PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  receiver.trust((await keys(p)).map((k) => k.publicKey));
  return p;
}

async function createCustomer(p: TestPlatform, fullName: string): Promise<string> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName });
  expect(response.statusCode).toBe(201);
  return (response.json() as { id: string }).id;
}

describe('webhook signing keys', () => {
  it('publishes one P-256 key per platform that verifies with node:crypto, and a rotation overlaps both keys', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    const [first] = await keys(p);
    expect(first).toMatchObject({ id: expect.stringMatching(/^WebhookSigningKey:/), status: 'ACTIVE', algorithm: 'ECDSA_P256_SHA256' });
    expect(createPublicKey(first!.publicKey).asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
    expect(await keys(p)).toEqual([first]);
    const other = await ctx.newPlatform();
    expect((await keys(other))[0]!.publicKey).not.toBe(first!.publicKey);

    // Rotate with a one-hour overlap: both published, the old one still signs.
    const rotated = await call(p, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 3600 });
    expect(rotated.statusCode).toBe(200);
    const during = (rotated.json() as { data: Key[] }).data;
    expect(during.map((k) => k.status)).toEqual(['ACTIVE', 'NEXT']);
    const next = during[1]!;
    expect(next.activatesAt).toBe(new Date(ctx.clock.now().getTime() + 3_600_000).toISOString());
    expect(during[0]!.retiresAt).toBe(next.activatesAt);
    expectEnvelope(await call(p, 'POST', '/webhooks/signing-keys/rotate', {}), 409, 'CONFLICT');
    // The receiver rolls over: it trusts every published key.
    receiver.trust(during.map((k) => k.publicKey));

    await drain();
    const beforeSwitch = receiver.received.at(-1)!;
    expect(beforeSwitch.headers['x-service-signature-key-id']).toBe(first!.id);
    const raw = Buffer.from(beforeSwitch.raw);
    const signature = Buffer.from(String(beforeSwitch.headers['x-service-signature']), 'base64');
    expect(verify('sha256', raw, createPublicKey(first!.publicKey), signature)).toBe(true);
    expect(verify('sha256', raw, createPublicKey(next.publicKey), signature)).toBe(false);

    // After the overlap the new key signs and the old one is no longer published.
    ctx.clock.advance(3_600_000);
    expect((await keys(p)).map((k) => [k.id, k.status])).toEqual([[next.id, 'ACTIVE']]);
    await createCustomer(p, 'After Rotation');
    await drain();
    const afterSwitch = receiver.received.at(-1)!;
    expect(afterSwitch.headers['x-service-signature-key-id']).toBe(next.id);
    expect(verify('sha256', Buffer.from(afterSwitch.raw), createPublicKey(next.publicKey), Buffer.from(String(afterSwitch.headers['x-service-signature']), 'base64'))).toBe(true);
    expect(receiver.received.every((w) => w.verified)).toBe(true);
  });

  it('switches at once with overlapSeconds 0, even during a rotation, and validates the body', async () => {
    const p = await ctx.newPlatform();
    const [first] = await keys(p);
    // Without overlapSeconds, the next key signs in one day.
    const rotated = (await call(p, 'POST', '/webhooks/signing-keys/rotate', {})).json() as { data: Key[] };
    expect(rotated.data.map((k) => [k.status, k.activatesAt])).toEqual([
      ['ACTIVE', first!.activatesAt],
      ['NEXT', new Date(ctx.clock.now().getTime() + 86_400_000).toISOString()],
    ]);
    const emergency = await call(p, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 0 });
    expect(emergency.statusCode).toBe(200);
    const now = (emergency.json() as { data: Key[] }).data;
    expect(now).toHaveLength(1);
    expect(now[0]).toMatchObject({ status: 'ACTIVE' });
    expect(now[0]!.id).not.toBe(first!.id);
    const bad = expectEnvelope(await call(p, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: -1, extra: true }), 400, 'INVALID_INPUT');
    expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['extra', 'overlapSeconds']);
    // At most 30 days of overlap.
    expectEnvelope(await call(p, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 30 * 86_400 + 1 }), 400, 'INVALID_INPUT');
    const viewer = await ctx.newToken(p, ['VIEW']);
    expectEnvelope(await call(viewer, 'POST', '/webhooks/signing-keys/rotate', {}), 403, 'FORBIDDEN');
    expect((await call(viewer, 'GET', '/webhooks/signing-keys')).statusCode).toBe(200);
  });

  it('a rotation after an immediate switch publishes the signing key and the next one only: a retired key stays retired, and other platforms keep theirs', async () => {
    const p = await ctx.newPlatform();
    const other = await ctx.newPlatform();
    const [otherKey] = await keys(other);
    const [first] = await keys(p);
    const switched = (await call(p, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 0 })).json() as { data: Key[] };
    expect(switched.data.map((k) => k.id)).not.toContain(first!.id);
    ctx.clock.advance(1000);
    const rotated = await call(p, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 3600 });
    expect(rotated.statusCode).toBe(200);
    const during = (rotated.json() as { data: Key[] }).data;
    expect(during.map((k) => [k.id === switched.data[0]!.id, k.status])).toEqual([
      [true, 'ACTIVE'],
      [false, 'NEXT'],
    ]);
    expect(await keys(p)).toEqual(during);
    // Another platform's key is neither retired nor replaced by p's rotations.
    expect(await keys(other)).toEqual([otherKey]);
    expect(otherKey).not.toHaveProperty('retiresAt');
    ctx.clock.advance(3_600_000);
    expect(await keys(other)).toEqual([otherKey]);
  });
});

describe('webhook delivery log', () => {
  it('lists deliveries newest first with status, answer, latency and next retry; filters by type and status; pages', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    await drain();
    receiver.answer = (w) => (w.body.data?.fullName === 'Failing Fay' ? { status: 503, body: 'down' } : { status: 200 });
    const ok = await createCustomer(p, 'Okay Otto');
    const failing = await createCustomer(p, 'Failing Fay');
    await drain();

    const all = (await call(p, 'GET', '/webhooks/deliveries')).json() as { data: Delivery[]; hasMore: boolean };
    expect(all.data.filter((d) => d.type !== 'INTERNAL_ACCOUNT.STATUS_UPDATED').map((d) => [d.type, d.resourceId ?? null, d.status])).toEqual([
      ['CUSTOMER.KYC_APPROVED', failing, 'PENDING'],
      ['CUSTOMER.KYC_APPROVED', ok, 'SUCCEEDED'],
      ['TEST', expect.stringMatching(/^PlatformConfig:/), 'SUCCEEDED'],
    ]);
    const [pending, succeeded] = all.data.filter((d) => d.type === 'CUSTOMER.KYC_APPROVED');
    expect(pending).toMatchObject({ attempts: 1, lastResponseStatus: 503, nextAttemptAt: expect.any(String) });
    expect(pending!.lastLatencyMs).toBeGreaterThanOrEqual(0);
    expect(succeeded).toMatchObject({ attempts: 1, lastResponseStatus: 200, deliveredAt: ctx.clock.now().toISOString() });
    expect(succeeded).not.toHaveProperty('nextAttemptAt');

    const byStatus = (await call(p, 'GET', '/webhooks/deliveries?status=PENDING')).json() as { data: Delivery[] };
    expect(byStatus.data.map((d) => d.id)).toEqual([pending!.id]);
    const byType = (await call(p, 'GET', '/webhooks/deliveries?eventType=TEST')).json() as { data: Delivery[] };
    expect(byType.data.map((d) => d.type)).toEqual(['TEST']);
    const pages: Delivery[] = [];
    let cursor = '';
    for (;;) {
      const page = (await call(p, 'GET', `/webhooks/deliveries?limit=2${cursor}`)).json() as { data: Delivery[]; hasMore: boolean; nextCursor?: string };
      pages.push(...page.data);
      if (!page.hasMore) break;
      cursor = `&cursor=${page.nextCursor}`;
    }
    expect(pages.map((d) => d.id)).toEqual(all.data.map((d) => d.id));
    expect(pages.length).toBeGreaterThan(2);

    const detail = (await call(p, 'GET', `/webhooks/deliveries/${pending!.id}`)).json() as Delivery;
    expect(detail.data).toMatchObject({ id: failing, fullName: 'Failing Fay' });
    expect(detail.attemptLog).toEqual([expect.objectContaining({ number: 1, outcome: 'FAILED', responseStatus: 503, responseBody: 'down' })]);

    const bad = expectEnvelope(await call(p, 'GET', '/webhooks/deliveries?status=LOST&eventType=lower.case'), 400, 'INVALID_INPUT');
    expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['eventType', 'status']);
    // An event type longer than any, and a parameter the list does not know, are refused too.
    const tooLong = expectEnvelope(await call(p, 'GET', `/webhooks/deliveries?eventType=${'A'.repeat(101)}&sort=oldest`), 400, 'INVALID_INPUT');
    expect((tooLong.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['eventType', 'sort']);
  });

  it('re-sends one webhook now with its original id: success delivers it, failure keeps its schedule', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    await drain();
    receiver.answer = (w) => ({ status: w.body.type === 'CUSTOMER.KYC_APPROVED' ? 500 : 200 });
    await createCustomer(p, 'Resent Rita');
    await drain();
    const [pending] = ((await call(p, 'GET', '/webhooks/deliveries?status=PENDING')).json() as { data: Delivery[] }).data;
    expect(pending!.type).toBe('CUSTOMER.KYC_APPROVED');

    let resent = await call(p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`);
    expect(resent.statusCode).toBe(200);
    let body = resent.json() as Delivery;
    expect(body).toMatchObject({ status: 'PENDING', attempts: 2, nextAttemptAt: pending!.nextAttemptAt });

    receiver.answer = (w) => (w.body.id === pending!.id ? { status: 409 } : { status: 200 });
    resent = await call(p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`);
    body = resent.json() as Delivery;
    expect(body).toMatchObject({ status: 'SUCCEEDED', attempts: 3, lastResponseStatus: 409 });
    expect(body.attemptLog.map((a) => a.outcome)).toEqual(['FAILED', 'FAILED', 'SUCCEEDED']);
    expect(new Set(receiver.received.filter((w) => w.body.type === 'CUSTOMER.KYC_APPROVED').map((w) => w.body.id))).toEqual(new Set([pending!.id]));
    expect(receiver.received.every((w) => w.verified)).toBe(true);

    // The scheduled retry finds it delivered and sends nothing more.
    const sent = receiver.received.length;
    ctx.clock.set(pending!.nextAttemptAt!);
    await drain();
    expect(receiver.received).toHaveLength(sent);
    // A delivered webhook may still be re-sent (the receiver lost it).
    // It stays delivered when it was first acknowledged, not when a re-send was.
    expect(body.deliveredAt).toEqual(expect.any(String));
    expect((await call(p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`)).json()).toMatchObject({ status: 'SUCCEEDED', attempts: 4, deliveredAt: body.deliveredAt });
    // With no endpoint there is nowhere to send it: said so, and nothing is attempted.
    expect((await call(p, 'PATCH', '/config', { webhookEndpoint: null })).statusCode).toBe(200);
    expectEnvelope(await call(p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`), 400, 'WEBHOOK_ENDPOINT_NOT_SET');
    expect(((await call(p, 'GET', `/webhooks/deliveries/${pending!.id}`)).json() as Delivery).attempts).toBe(4);
  });

  it('shows the latest ATTEMPT_LOG_LIMIT attempts of a delivery re-sent more often than that, and counts them all', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    await drain();
    const [test] = ((await call(p, 'GET', '/webhooks/deliveries?eventType=TEST')).json() as { data: Delivery[] }).data;
    const resends = ATTEMPT_LOG_LIMIT + 5;
    for (let i = 0; i < resends; i++) expect((await call(p, 'POST', `/webhooks/deliveries/${test!.id}/resend`)).statusCode).toBe(200);
    const detail = (await call(p, 'GET', `/webhooks/deliveries/${test!.id}`)).json() as Delivery;
    expect(detail.attempts).toBe(1 + resends);
    // Oldest first, the first six left out.
    expect(detail.attemptLog.map((a) => a.number)).toEqual(Array.from({ length: ATTEMPT_LOG_LIMIT }, (_, i) => i + 7));
  });

  it('a failed re-send leaves the delivery as its job left it meanwhile, not as it was when the re-send began', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    await drain();
    receiver.answer = (w) => ({ status: w.body.type === 'CUSTOMER.KYC_APPROVED' ? 500 : 200 });
    await createCustomer(p, 'Raced Rosa');
    await drain();
    const [pending] = ((await call(p, 'GET', '/webhooks/deliveries?status=PENDING')).json() as { data: Delivery[] }).data;
    expect(pending!.type).toBe('CUSTOMER.KYC_APPROVED');

    // While the re-send waits for its answer, the delivery's job makes its last attempt and gives up.
    const uuid = pending!.id.slice('Webhook:'.length);
    receiver.answer = () => ({ status: 500, delayMs: 300 });
    const resending = call(p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`);
    await expect.poll(() => receiver.received.filter((w) => w.body.id === pending!.id).length).toBe(2);
    await ctx.handle.db.updateTable('webhook_deliveries').set({ status: 'FAILED', next_attempt_at: null }).where('id', '=', uuid).execute();
    const resent = await resending;
    expect(resent.statusCode).toBe(200);
    expect(resent.json()).toMatchObject({ status: 'FAILED', attempts: 2 });
    expect((resent.json() as Delivery).nextAttemptAt).toBeUndefined();
    // Not PENDING again: no job is left to send it, so it would stay PENDING for ever.
    expect(await ctx.handle.db.selectFrom('webhook_deliveries').select(['status', 'next_attempt_at']).where('id', '=', uuid).executeTakeFirst()).toEqual({
      status: 'FAILED',
      next_attempt_at: null,
    });
  });

  it('a success stands: the job’s failed attempt logged after a re-send delivered it neither reopens it nor forgets when it was delivered', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    await drain();
    receiver.answer = (w) => ({ status: w.body.type === 'CUSTOMER.KYC_APPROVED' ? 500 : 200 });
    await createCustomer(p, 'Settled Sara');
    await drain();
    const [pending] = ((await call(p, 'GET', '/webhooks/deliveries?status=PENDING')).json() as { data: Delivery[] }).data;
    expect(pending!.type).toBe('CUSTOMER.KYC_APPROVED');

    // The job's retry is answered slowly, and 500; the re-send sent meanwhile is answered 200 at once.
    let sent = 0;
    receiver.answer = (w) => (w.body.id === pending!.id && ++sent === 1 ? { status: 500, delayMs: 400 } : { status: 200 });
    ctx.clock.set(pending!.nextAttemptAt!);
    const retrying = drain();
    await expect.poll(() => receiver.received.filter((w) => w.body.id === pending!.id).length).toBe(2);
    const resent = (await call(p, 'POST', `/webhooks/deliveries/${pending!.id}/resend`)).json() as Delivery;
    expect(resent).toMatchObject({ status: 'SUCCEEDED', deliveredAt: ctx.clock.now().toISOString() });
    await retrying;
    const after = (await call(p, 'GET', `/webhooks/deliveries/${pending!.id}`)).json() as Delivery;
    expect(after).toMatchObject({ status: 'SUCCEEDED', attempts: 3, deliveredAt: resent.deliveredAt, lastResponseStatus: 500 });
    expect(after).not.toHaveProperty('nextAttemptAt');
  });

  it('keeps platforms apart: another platform’s webhook is 404, and so is a malformed id', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    await drain();
    const [mine] = ((await call(p, 'GET', '/webhooks/deliveries')).json() as { data: Delivery[] }).data;
    const other = await ctx.newPlatform();
    expectEnvelope(await call(other, 'GET', `/webhooks/deliveries/${mine!.id}`), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(other, 'POST', `/webhooks/deliveries/${mine!.id}/resend`), 404, 'REFERENCE_NOT_FOUND');
    expect(((await call(other, 'GET', '/webhooks/deliveries')).json() as { data: unknown[] }).data).toEqual([]);
    expectEnvelope(await call(p, 'GET', '/webhooks/deliveries/Customer:019542f5-b3e7-1d02-0000-000000000001'), 404, 'REFERENCE_NOT_FOUND');
  });

  it('counts deliveries by outcome and their latency in /metrics', async () => {
    receiver = await WebhookReceiver.start();
    await connectedPlatform();
    await drain();
    const metrics = (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^corridor_webhook_attempts_total\{outcome="SUCCEEDED"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^corridor_webhook_deliveries_total\{outcome="delivered"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^corridor_webhook_attempt_duration_seconds_bucket\{outcome="SUCCEEDED",le="\+Inf"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^corridor_webhook_delivery_lag_seconds_count [1-9]\d*$/m);
  });
});

describe('GET /webhooks/deliveries totalCount', () => {
  interface DeliveryPage {
    data: Array<{ id: string; type: string; status: string }>;
    hasMore: boolean;
    nextCursor?: string;
    totalCount?: number;
  }
  async function list(p: TestPlatform, query = ''): Promise<DeliveryPage> {
    const response = await call(p, 'GET', `/webhooks/deliveries${query}`);
    expect(response.statusCode).toBe(200);
    return response.json() as DeliveryPage;
  }
  async function storedDeliveries(p: TestPlatform): Promise<number> {
    const { rows } = await sql<{ n: string | number }>`select count(*) as n from webhook_deliveries where platform_id = ${p.uuid}`.execute(ctx.handle.db);
    return Number(rows[0]!.n);
  }

  it('is the platform’s number of deliveries on the unfiltered list, on every page, and absent under a filter', async () => {
    receiver = await WebhookReceiver.start();
    const p = await connectedPlatform();
    const other = await connectedPlatform();
    expect((await list(p)).totalCount).toBe(0);

    for (let i = 0; i < 3; i++) await createCustomer(p, `Counted ${i}`);
    await createCustomer(other, 'Elsewhere');
    // A TEST delivery is in the log too, and counted.
    expect((await call(p, 'POST', '/sandbox/webhooks/test')).statusCode).toBe(200);
    await drain();

    const stored = await storedDeliveries(p);
    expect(stored).toBeGreaterThanOrEqual(4);
    const first = await list(p, '?limit=2');
    expect(first.totalCount).toBe(stored);
    expect(first.hasMore).toBe(true);
    const second = await list(p, `?limit=2&cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(second.totalCount).toBe(stored);
    expect((await list(other)).totalCount).toBe(await storedDeliveries(other));

    // A status or a type cannot be counted without reading every match: no total.
    const byStatus = await list(p, '?status=SUCCEEDED');
    expect(byStatus.data.length).toBeGreaterThan(0);
    expect(byStatus).not.toHaveProperty('totalCount');
    const byType = await list(p, '?eventType=TEST');
    expect(byType.data.length).toBeGreaterThan(0);
    expect(byType.data.every((d) => d.type === 'TEST')).toBe(true);
    expect(byType).not.toHaveProperty('totalCount');
  });
});
