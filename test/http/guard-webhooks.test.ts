import dns, { type LookupAddress } from 'node:dns';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifyChanged } from '../../src/platform/cache.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The production address guard runs when a connection opens (sender.ts), so a production
 * delivery must never ride a kept-alive socket a sandbox delivery opened: sandbox endpoints may
 * be the platform's own machine. A mutation audit found no test reaching it (one shared pool for
 * both passed every test). Here a host name resolves to loopback for both: the sandbox reaches it
 * through the system resolver (stubbed in this process for that one name), production through the
 * guarded resolver, which must refuse it although a sandbox socket to the same host and port is idle.
 */
const HOST = 'pooled.guard.example.test';
let ctx: TestContext;
let receiver: WebhookReceiver;
const systemLookup = dns.lookup;

beforeAll(async () => {
  const stubbed = ((host: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (host !== HOST) return (systemLookup as (...args: unknown[]) => void)(host, options, callback);
    return all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4);
  }) as typeof dns.lookup;
  dns.lookup = stubbed;
  ctx = await createTestContext({
    webhookResolver: async (host): Promise<LookupAddress[]> => {
      if (host === HOST) return [{ address: '127.0.0.1', family: 4 }];
      throw Object.assign(new Error(`no DNS answer for ${host}`), { code: 'ENOTFOUND' });
    },
  });
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  dns.lookup = systemLookup;
  await receiver?.close();
  await ctx?.close();
});

const call = (p: TestPlatform, method: 'POST' | 'PATCH', url: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${url}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('production webhook deliveries and sandbox connections', () => {
  it('refuses a production delivery to a loopback host although a sandbox delivery left a connection to it open: nothing reaches the host', async () => {
    const endpoint = `http://${HOST}:${receiver.port}/hooks`;
    const sandbox = await ctx.newPlatform();
    expect((await call(sandbox, 'PATCH', '/config', { webhookEndpoint: endpoint })).statusCode).toBe(200);
    const delivered = await call(sandbox, 'POST', '/sandbox/webhooks/test');
    expect(delivered.statusCode, delivered.body).toBe(200);
    const reached = receiver.received.length;
    expect(reached).toBeGreaterThan(0);

    // Stored directly: PATCH takes only https endpoints for production; the guard is what is tested.
    const production = await ctx.newPlatform('production');
    await sql`update platform_configs set webhook_endpoint = ${endpoint} where platform_id = ${production.uuid}`.execute(ctx.handle.db);
    await notifyChanged(ctx.handle.db, 'corridor_platform_config_changed', production.uuid);
    const refused = expectEnvelope(await call(production, 'POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
    expect(refused.details!.error).toMatch(/127\.0\.0\.1, a loopback address/);
    expect(receiver.received.length).toBe(reached);
  });
});
