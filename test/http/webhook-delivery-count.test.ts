import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

let ctx: TestContext;
let receiver: WebhookReceiver;

beforeAll(async () => {
  ctx = await createTestContext();
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await receiver.close();
  await ctx.close();
});

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${url}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

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

describe('GET /webhooks/deliveries totalCount', () => {
  it('is the platform’s number of deliveries on the unfiltered list, on every page, and absent under a filter', async () => {
    const p = await ctx.newPlatform();
    const other = await ctx.newPlatform();
    for (const platform of [p, other]) {
      expect((await call(platform, 'PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
    }
    expect((await list(p)).totalCount).toBe(0);

    for (let i = 0; i < 3; i++) {
      expect((await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Counted ${i}` })).statusCode).toBe(201);
    }
    expect((await call(other, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Elsewhere' })).statusCode).toBe(201);
    // A TEST delivery is in the log too, and counted.
    expect((await call(p, 'POST', '/sandbox/webhooks/test')).statusCode).toBe(200);
    while ((await ctx.jobs.runDue(100)) > 0);

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
