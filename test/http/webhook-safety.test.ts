import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { notifyChanged } from '../../src/platform/cache.js';
import { refusedRange } from '../../src/platform/address-guard.js';
import { IDLE_CONNECTION_MS } from '../../src/modules/webhooks/sender.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

let ctx: TestContext;
let receivers: WebhookReceiver[] = [];
const logLines: string[] = [];
/** DNS answers for production deliveries, by host name. */
const dns = new Map<string, LookupAddress[]>();

beforeAll(async () => {
  ctx = await createTestContext({
    env: { CORRIDOR_WEBHOOK_TIMEOUT_MS: '3000', CORRIDOR_WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' },
    logLines,
    webhookResolver: async (host) => {
      const answer = dns.get(host);
      if (!answer) throw Object.assign(new Error(`no DNS answer for ${host}`), { code: 'ENOTFOUND' });
      return answer;
    },
  });
});
afterAll(() => ctx.close());
afterEach(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  receivers = [];
});

async function receiver(): Promise<WebhookReceiver> {
  const r = await WebhookReceiver.start();
  receivers.push(r);
  return r;
}

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${url}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function drain(): Promise<void> {
  while ((await ctx.jobs.runDue(100)) > 0);
}

interface Attempt {
  outcome: string;
  error?: string;
  responseStatus?: number;
}

async function lastAttempt(p: TestPlatform): Promise<Attempt> {
  const [latest] = ((await call(p, 'GET', '/webhooks/deliveries')).json() as { data: Array<{ id: string }> }).data;
  const detail = (await call(p, 'GET', `/webhooks/deliveries/${latest!.id}`)).json() as { attemptLog: Attempt[] };
  return detail.attemptLog.at(-1)!;
}

async function productionPlatform(endpoint: string): Promise<TestPlatform> {
  const p = await ctx.newPlatform('production');
  expect((await call(p, 'PATCH', '/config', { webhookEndpoint: endpoint })).statusCode).toBe(200);
  return p;
}

describe('production webhook endpoints', () => {
  it('are refused at PATCH when they are literally a loopback, private, link-local or metadata address: 400 naming the field, nothing changed', async () => {
    const p = await ctx.newPlatform('production');
    const before = (await call(p, 'GET', '/config')).json();
    const cases: Array<[string, RegExp]> = [
      ['https://127.0.0.1/hooks', /loopback address \(127\.0\.0\.1\)/],
      ['https://[::1]:8443/hooks', /loopback address \(::1\)/],
      ['https://169.254.169.254/latest/meta-data', /link-local \(includes the cloud metadata service\) address \(169\.254\.169\.254\)/],
      ['https://localhost/hooks', /loopback address \(localhost\)/],
      ['https://hooks.LOCALHOST./in', /loopback address \(hooks\.localhost\)/],
      ['https://10.0.0.7/hooks', /private address \(10\.0\.0\.7\)/],
      ['https://[fd00:ec2::254]/hooks', /private \(unique local, includes cloud metadata\) address/],
      // Spellings the URL parser turns into the same addresses.
      ['https://2130706433/hooks', /loopback address \(127\.0\.0\.1\)/],
      ['https://0x7f.1/hooks', /loopback address \(127\.0\.0\.1\)/],
      ['https://[0:0:0:0:0:ffff:7f00:1]/hooks', /loopback address \(::ffff:7f00:1\)/],
    ];
    for (const [webhookEndpoint, reason] of cases) {
      const refused = expectEnvelope(await call(p, 'PATCH', '/config', { webhookEndpoint }), 400, 'INVALID_INPUT');
      const errors = refused.details!.errors as Array<{ field: string; message: string }>;
      expect(errors.map((e) => e.field), webhookEndpoint).toEqual(['webhookEndpoint']);
      expect(errors[0]!.message, webhookEndpoint).toMatch(reason);
    }
    expect((await call(p, 'GET', '/config')).json()).toEqual(before);
    // A public address, and a host name (judged when it is resolved), are taken.
    for (const webhookEndpoint of ['https://93.184.216.34/hooks', 'https://[2606:4700:4700::1111]/hooks', 'https://hooks.example.test/in']) {
      const taken = await call(p, 'PATCH', '/config', { webhookEndpoint });
      expect(taken.statusCode, taken.body).toBe(200);
    }
  });

  it('are refused at send time when they resolve to loopback, private, link-local or metadata addresses, and nothing is sent', async () => {
    const r = await receiver();
    dns.set('loopback.example.test', [{ address: '127.0.0.1', family: 4 }]);
    dns.set('loopback-v6.example.test', [{ address: '::1', family: 6 }]);
    dns.set('mapped-short.example.test', [{ address: '::ffff:127.0.0.1', family: 6 }]);
    dns.set('localhost.example.test', [{ address: '127.0.0.1', family: 4 }]);
    dns.set('internal.example.test', [{ address: '10.0.0.7', family: 4 }]);
    dns.set('metadata.example.test', [{ address: '169.254.169.254', family: 4 }]);
    dns.set('mapped.example.test', [{ address: '::ffff:7f00:1', family: 6 }]);
    dns.set('ula.example.test', [{ address: 'fd00:ec2::254', family: 6 }]);
    // The same loopback address, IPv4-mapped in its long spelling; and ranges that carry an IPv4 address onward.
    dns.set('mapped-long.example.test', [{ address: '0:0:0:0:0:ffff:7f00:1', family: 6 }]);
    dns.set('6to4.example.test', [{ address: '2002:7f00:1::1', family: 6 }]);
    dns.set('teredo.example.test', [{ address: '2001:0:4136:e378:8000:63bf:3fff:fdd2', family: 6 }]);
    dns.set('siit.example.test', [{ address: '::ffff:0:7f00:1', family: 6 }]);
    dns.set('relay.example.test', [{ address: '192.88.99.1', family: 4 }]);
    // One bad address among good ones is enough: the socket could be handed either.
    dns.set('mixed.example.test', [
      { address: '93.184.216.34', family: 4 },
      { address: '192.168.1.20', family: 4 },
    ]);
    const cases: Array<[string, RegExp]> = [
      [`https://loopback.example.test:${r.port}/hooks`, /127\.0\.0\.1, a loopback address/],
      [`https://loopback-v6.example.test:${r.port}/hooks`, /::1, a loopback address/],
      [`https://localhost.example.test:${r.port}/hooks`, /127\.0\.0\.1, a loopback address/],
      ['https://internal.example.test/hooks', /10\.0\.0\.7, a private address/],
      ['https://metadata.example.test/latest/meta-data', /169\.254\.169\.254, a link-local \(includes the cloud metadata service\) address/],
      ['https://mapped.example.test/hooks', /::ffff:7f00:1, a loopback address/],
      ['https://ula.example.test/hooks', /fd00:ec2::254, a private \(unique local, includes cloud metadata\) address/],
      ['https://mapped-long.example.test/hooks', /0:0:0:0:0:ffff:7f00:1, a loopback address/],
      ['https://6to4.example.test/hooks', /2002:7f00:1::1, a tunnel \(6to4, carries an IPv4 address\) address/],
      ['https://teredo.example.test/hooks', /2001:0:4136:e378:8000:63bf:3fff:fdd2, a tunnel \(Teredo, carries an IPv4 address\) address/],
      ['https://siit.example.test/hooks', /::ffff:0:7f00:1, a reserved \(IPv4-translated\) address/],
      ['https://relay.example.test/hooks', /192\.88\.99\.1, a reserved \(6to4 relay anycast\) address/],
      [`https://mapped-short.example.test:${r.port}/hooks`, /::ffff:127\.0\.0\.1, a loopback address/],
      ['https://mixed.example.test/hooks', /192\.168\.1\.20, a private address/],
    ];
    for (const [endpoint, reason] of cases) {
      const p = await productionPlatform(endpoint);
      await drain();
      const attempt = await lastAttempt(p);
      expect(attempt.outcome, endpoint).toBe('REFUSED');
      expect(attempt.error, endpoint).toMatch(reason);
      const test = expectEnvelope(await call(p, 'POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
      expect(test.details!.error, endpoint).toMatch(reason);
    }
    expect(r.received).toEqual([]);
    const metrics = (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^corridor_webhook_attempts_total\{outcome="REFUSED"\} [1-9]\d*$/m);
  });

  it('stored as a literal address before PATCH refused it are still refused at send time', async () => {
    const r = await receiver();
    const p = await ctx.newPlatform('production');
    await sql`update platform_configs set webhook_endpoint = ${`https://127.0.0.1:${r.port}/hooks`} where platform_id = ${p.uuid}`.execute(ctx.handle.db);
    await notifyChanged(ctx.handle.db, 'corridor_platform_config_changed', p.uuid);
    const test = expectEnvelope(await call(p, 'POST', '/sandbox/webhooks/test'), 400, 'WEBHOOK_DELIVERY_ERROR');
    expect(test.details!.error).toMatch(/127\.0\.0\.1, a loopback address/);
    expect(r.received).toEqual([]);
  });

  it('still retry a refused endpoint on the schedule: the platform may fix its DNS', async () => {
    dns.set('fixable.example.test', [{ address: '10.1.2.3', family: 4 }]);
    const p = await productionPlatform('https://fixable.example.test/hooks');
    await drain();
    const [delivery] = ((await call(p, 'GET', '/webhooks/deliveries')).json() as { data: Array<{ status: string; nextAttemptAt?: string }> }).data;
    expect(delivery).toMatchObject({ status: 'PENDING', nextAttemptAt: expect.any(String) });
  });

  it('let sandbox platforms deliver to their own machine', async () => {
    const r = await receiver();
    const p = await ctx.newPlatform();
    await call(p, 'PATCH', '/config', { webhookEndpoint: r.url });
    await drain();
    expect(r.received.map((w) => w.body.type)).toContain('TEST');
  });
});

describe('the address guard (refusedRange)', () => {
  it('judges an address however it is spelled, and the IPv4 address an IPv6 one leads to', () => {
    const refused: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::FFFF:7F00:1', 'loopback'],
      ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
      ['0000:0000:0000:0000:0000:ffff:a9fe:a9fe', 'link-local (includes the cloud metadata service)'],
      ['0:0:0:0:0:0:0:1', 'loopback'],
      ['64:ff9b::10.0.0.1', 'private'],
      ['0064:ff9b:0000:0000:0000:0000:7f00:0001', 'loopback'],
      ['fe80::1%eth0', 'link-local'],
      ['::7f00:1', 'reserved (IPv4-compatible)'],
      ['::ffff:0:7f00:1', 'reserved (IPv4-translated)'],
      ['2002:7f00:1::1', 'tunnel (6to4, carries an IPv4 address)'],
      ['2002:5db8:d822::1', 'tunnel (6to4, carries an IPv4 address)'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'tunnel (Teredo, carries an IPv4 address)'],
      ['192.88.99.1', 'reserved (6to4 relay anycast)'],
      ['3fff::1', 'documentation'],
      ['5f00::1', 'reserved (not global unicast)'],
      ['4000::1', 'reserved (not global unicast)'],
      ['64:ff9b:0:0:1::1', 'reserved (not global unicast)'],
      ['not-an-address', 'not an IP address'],
    ];
    for (const [address, range] of refused) expect(refusedRange(address), address).toBe(range);
    // Public addresses, in any spelling, are reached.
    for (const address of ['93.184.216.34', '::ffff:93.184.216.34', '0:0:0:0:0:ffff:5db8:d822', '64:ff9b::93.184.216.34', '2606:4700:4700::1111', '2A00:1450:4001:80B::200E', '2001:4860:4860::8888']) {
      expect(refusedRange(address), address).toBeUndefined();
    }
  });
});

describe('CORRIDOR_WEBHOOK_GUARD_SANDBOX=true', () => {
  let guarded: TestContext;
  beforeAll(async () => {
    guarded = await createTestContext({
      env: { CORRIDOR_WEBHOOK_GUARD_SANDBOX: 'true' },
      webhookResolver: async (host) => {
        if (host === 'receiver.example.test') return [{ address: '127.0.0.1', family: 4 }];
        throw Object.assign(new Error(`no DNS answer for ${host}`), { code: 'ENOTFOUND' });
      },
    });
  });
  afterAll(() => guarded?.close());

  const patchEndpoint = (p: TestPlatform, webhookEndpoint: string) =>
    guarded.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: { webhookEndpoint } });

  it('refuses sandbox endpoints that are literally a refused address at PATCH, as for production', async () => {
    const r = await receiver();
    const p = await guarded.newPlatform();
    for (const endpoint of [r.url, `http://localhost:${r.port}/webhooks`]) {
      const refused = expectEnvelope(await patchEndpoint(p, endpoint), 400, 'INVALID_INPUT');
      expect((refused.details!.errors as Array<{ field: string; message: string }>)[0]).toMatchObject({ field: 'webhookEndpoint', message: expect.stringMatching(/loopback address/) });
    }
  });

  it('guards sandbox platforms’ deliveries too', async () => {
    const r = await receiver();
    const p = await guarded.newPlatform();
    const patch = await patchEndpoint(p, `http://receiver.example.test:${r.port}/webhooks`);
    expect(patch.statusCode, patch.body).toBe(200);
    while ((await guarded.jobs.runDue(100)) > 0);
    const test = expectEnvelope(await guarded.app.inject({ method: 'POST', url: `${BASE}/sandbox/webhooks/test`, headers: { authorization: p.auth } }), 400, 'WEBHOOK_DELIVERY_ERROR');
    expect(test.details!.error).toMatch(/127\.0\.0\.1, a loopback address/);
    const log = (await guarded.app.inject({ method: 'GET', url: `${BASE}/webhooks/deliveries`, headers: { authorization: p.auth } })).json() as { data: Array<{ type: string; status: string; lastError?: string }> };
    expect(log.data.find((d) => d.type === 'TEST' && d.status === 'PENDING')).toMatchObject({ lastError: expect.stringMatching(/^refused: /) });
    expect(r.received).toEqual([]);
  });
});

describe('delivery safety', () => {
  it('never logs the endpoint, the signature or the payload', async () => {
    const r = await receiver();
    const p = await ctx.newPlatform();
    logLines.length = 0;
    await call(p, 'PATCH', '/config', { webhookEndpoint: `${r.url}?token=s3cr3t-t0ken` });
    await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Private Person' });
    await drain();
    expect(r.received.map((w) => w.body.type)).toContain('CUSTOMER.KYC_APPROVED');
    const log = logLines.join('\n');
    expect(log).toContain('webhook attempt');
    expect(log).not.toContain('s3cr3t-t0ken');
    expect(log).not.toContain('Private Person');
    for (const w of r.received) expect(log).not.toContain(String(w.headers['x-service-signature']));
  });

  it('closes a connection the receiver keeps open once it has been idle for IDLE_CONNECTION_MS: no endpoint holds sockets for ever', async () => {
    let open = 0;
    // A receiver that never closes an idle keep-alive connection itself.
    const server = createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()));
    server.keepAliveTimeout = 0;
    server.on('connection', (socket) => {
      open++;
      socket.on('close', () => open--);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const p = await ctx.newPlatform();
      await call(p, 'PATCH', '/config', { webhookEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` });
      expect((await call(p, 'POST', '/sandbox/webhooks/test')).statusCode).toBe(200);
      expect(open).toBe(1);
      await expect.poll(() => open, { timeout: IDLE_CONNECTION_MS + 5_000, interval: 250 }).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('one hung endpoint holds only its share of a worker: another platform’s webhook goes out at once', async () => {
    const hung = await receiver();
    hung.answer = () => ({ status: 200, hang: true });
    const healthy = await receiver();
    const slow = await ctx.newPlatform();
    const fine = await ctx.newPlatform();
    await call(slow, 'PATCH', '/config', { webhookEndpoint: hung.url });
    for (let i = 0; i < 6; i++) await call(slow, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Waiting ${i}` });
    await ctx.jobs.start(60_000, (channel, onMessage) => ctx.handle.listen(channel, onMessage));
    try {
      // The worker is busy with the hung endpoint when the other platform's event commits.
      await expect.poll(() => hung.received.length, { timeout: 10_000 }).toBe(2);
      await call(fine, 'PATCH', '/config', { webhookEndpoint: healthy.url });
      await expect.poll(() => healthy.received.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      // Delivered while the hung platform's first two attempts were still waiting for an answer.
      expect(hung.received).toHaveLength(2);
      const attempts = await ctx.handle.db.selectFrom('webhook_attempts').select('number').where('platform_id', '=', slow.uuid).execute();
      expect(attempts).toEqual([]);
    } finally {
      await ctx.jobs.stop();
    }
    // Each hung attempt timed out and was logged for a retry.
    const log = ((await call(slow, 'GET', '/webhooks/deliveries?status=PENDING')).json() as { data: Array<{ lastError?: string }> }).data;
    expect(log.filter((d) => d.lastError === 'no answer within 3000 ms').length).toBeGreaterThanOrEqual(2);
  });
});
