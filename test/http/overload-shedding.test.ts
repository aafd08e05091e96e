import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';

/**
 * Load shedding (platform/http/overload.ts). Every database connection is held (PGlite's one, or
 * each of the pool's), so a request admitted waits for one; once it has waited the bound, new
 * requests are refused at once, before any work, while the admitted one and the holders finish.
 * And the event loop kept busy past the bound (as PGlite's statements keep it) refuses the
 * requests read meanwhile. The bound is far above a loaded machine's scheduling noise.
 */
const MAX_WAIT_MS = 1_000;
/** The test context's pool (helpers/context.ts), or PGlite's only connection. */
const CONNECTIONS = onPostgres ? 10 : 1;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_OVERLOAD_WAIT_MS: String(MAX_WAIT_MS) } });
});
afterAll(async () => {
  await ctx?.close();
});
/** Lets the held connections go: also when a test fails while holding them (a request that waited instead of being refused). */
let release = () => {};
afterEach(() => release());

const create = (fullName: string) =>
  ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: { authorization: ctx.platform.auth }, payload: { customerType: 'INDIVIDUAL', fullName } });

describe('a process whose database queue is too far behind', () => {
  it('refuses new requests with 503 OVERLOADED and Retry-After, finishes those admitted, and writes nothing for the refused', async () => {
    const released = new Promise<void>((resolve) => (release = resolve));
    const holders = Array.from({ length: CONNECTIONS }, () => ctx.handle.db.connection().execute(() => released));
    try {
      // Admitted while nothing waits; then waits for a connection.
      const admitted = create('Admitted');
      await vi.waitFor(() => expect(ctx.handle.connectionWaitMs()).toBeGreaterThanOrEqual(MAX_WAIT_MS), { timeout: 10_000 });

      // Answered while every connection is still held: they did not wait for one.
      const refused = await Promise.all(Array.from({ length: 5 }, (_, i) => create(`Refused ${i}`)));
      for (const response of refused) {
        const body = expectEnvelope(response, 503, 'SERVICE_UNAVAILABLE');
        expect(body.details).toEqual({ reason: 'OVERLOADED' });
        expect(response.headers['retry-after']).toBe(String(MAX_WAIT_MS / 1000));
        expect(response.headers['x-should-retry']).toBe('true');
        expect(response.headers['x-request-id']).toBeTypeOf('string');
      }
      // Liveness is answered now; readiness and metrics are admitted (they read the database, so they answer once it is free).
      expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      const ready = ctx.app.inject({ method: 'GET', url: '/readyz' });
      const metrics = ctx.app.inject({ method: 'GET', url: '/metrics' });

      release();
      expect((await admitted).statusCode).toBe(201);
      expect((await ready).statusCode).toBe(200);
      const scraped = await metrics;
      expect(scraped.statusCode).toBe(200);
      expect(scraped.body).toContain('corridor_http_requests_shed_total 5\n');
    } finally {
      release();
      await Promise.all(holders);
    }

    // The queue drained: requests are admitted again, and only the admitted request wrote anything.
    expect(ctx.handle.connectionWaitMs()).toBe(0);
    const list = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?limit=100`, headers: { authorization: ctx.platform.auth } });
    expect(list.statusCode).toBe(200);
    expect((list.json() as { data: Array<{ fullName: string }> }).data.map((customer) => customer.fullName)).toEqual(['Admitted']);
  });

  it('refuses the requests that arrive while the event loop is the bound behind, then admits again', async () => {
    // Busy for longer than a tick's period (100 ms) and the bound together: the tick due is that late.
    const started = performance.now();
    while (performance.now() - started < MAX_WAIT_MS + 300);
    const [late, health] = await Promise.all([create('Late'), ctx.app.inject({ method: 'GET', url: '/healthz' })]);
    expect(expectEnvelope(late, 503, 'SERVICE_UNAVAILABLE').details).toEqual({ reason: 'OVERLOADED' });
    expect(health.statusCode).toBe(200);

    // The loop caught up (its ticks on time again): admitted.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await create('On time')).statusCode).toBe(201);
  });
});
