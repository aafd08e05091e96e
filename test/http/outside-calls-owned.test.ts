import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * Work that waits on another system runs with no database transaction open: on the embedded
 * engine (one connection for every request) a transaction held across a call that hangs would
 * stall every other request for as long; on PostgreSQL it would hold a pooled connection and its
 * row locks. Here the other system accepts the connection and never answers, and another request
 * is answered while the call still waits for its deadline.
 */
const UMA_TIMEOUT_MS = 3000;
const WEBHOOK_TIMEOUT_MS = 3000;

let ctx: TestContext;
let silent: Server;
let silentHost: string;
let hits = 0;
let bystander: TestPlatform;

const call = (platform: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: platform.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const until = async (what: () => boolean) => {
  const end = Date.now() + 10_000;
  while (!what()) {
    if (Date.now() > end) throw new Error('the other system was never called');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

/** Answers whether `waiting` is still unsettled once another platform's read (which needs the database) has been answered 200. */
async function stillWaitingAfterAnotherRequest(waiting: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void waiting.then(
    () => (settled = true),
    () => (settled = true),
  );
  const read = await call(bystander, 'GET', '/customers');
  expect(read.statusCode, read.body).toBe(200);
  return !settled;
}

beforeAll(async () => {
  silent = createServer(() => {
    hits++;
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentHost = `127.0.0.1:${(silent.address() as { port: number }).port}`;
  ctx = await createTestContext({ env: { CORRIDOR_UMA_TIMEOUT_MS: String(UMA_TIMEOUT_MS), CORRIDOR_WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS) } });
  bystander = await ctx.newPlatform('sandbox');
}, 120_000);

afterAll(async () => {
  silent?.closeAllConnections();
  await new Promise((resolve) => silent?.close(resolve));
  await ctx?.close();
});

describe(`a call to another system that never answers holds no transaction (${onPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('a UMA lookup of a receiving VASP that never answers: other requests are served while it waits', async () => {
    const platform = ctx.platform;
    const usd = { currencyCode: 'USD', minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
    expect((await call(platform, 'PATCH', '/config', { umaDomain: 'sender.example', supportedCurrencies: [usd] })).statusCode).toBe(200);
    const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
    const created = await call(platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'sam', fullName: 'Sam Sender', currencies: ['USD'], endUserTermsConsent: consent });
    expect(created.statusCode, created.body).toBe(201);
    const sender = created.json() as { id: string };

    hits = 0;
    const lookup = call(platform, 'GET', `/receiver/uma/${encodeURIComponent(`$carol@${silentHost}`)}?customerId=${sender.id}`);
    await until(() => hits > 0);
    expect(await stillWaitingAfterAnotherRequest(lookup)).toBe(true);
    // Bounded: the VASP's deadline (CORRIDOR_UMA_TIMEOUT_MS) ends it as the receiver's failure.
    expectEnvelope(await lookup, 400, 'LOOKUP_REQUEST_FAILED');
  }, 60_000);

  it('a webhook delivery to an endpoint that never answers: other requests are served while it waits', async () => {
    const platform = await ctx.newPlatform('sandbox');
    expect((await call(platform, 'PATCH', '/config', { webhookEndpoint: `http://${silentHost}/hooks` })).statusCode).toBe(200);
    hits = 0;
    const delivering = ctx.jobs.runDue(50);
    await until(() => hits > 0);
    expect(await stillWaitingAfterAnotherRequest(delivering)).toBe(true);
    // Bounded: the endpoint's deadline (CORRIDOR_WEBHOOK_TIMEOUT_MS) ends the attempt, which is logged as failed.
    await delivering;
    const listed = (await call(platform, 'GET', '/webhooks/deliveries')).json() as { data: Array<{ status: string }> };
    expect(listed.data.length).toBeGreaterThan(0);
    expect(listed.data.every((d) => typeof d.status === 'string' && d.status !== 'SUCCEEDED')).toBe(true);
  }, 60_000);
});
