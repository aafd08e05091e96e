import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';

/**
 * Load shedding (platform/http/overload.ts). Every database connection is held (PGlite's one, or
 * each of the pool's), so a request admitted waits for one; once it has waited the bound, new
 * requests are refused at once, before any work, while the admitted one and the holders finish.
 * And the event loop kept busy past the bound (as PGlite's statements keep it) refuses the
 * requests read meanwhile. On PostgreSQL, reads stalled on the pipelined read connections (which
 * take no pooled connection) refuse new requests the same way. The bound is far above a loaded
 * machine's scheduling noise.
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
const get = (path: string) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth } });

describe('a process whose database queue is too far behind', () => {
  it('refuses new requests with 503 OVERLOADED and Retry-After, finishes those admitted, and writes nothing for the refused', async () => {
    // The loop caught up with the set-up first (PGlite's migrations run on it; on a loaded machine past the bound), so the admitted request is admitted.
    await new Promise((resolve) => setTimeout(resolve, 300));
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
    // Once the loop has caught up too: on PGlite the work released at once ran on it, which on a
    // loaded machine (several test files at once) can keep it busy past the bound.
    await new Promise((resolve) => setTimeout(resolve, 300));
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

  it('says Retry-After as the bound in seconds rounded up', async () => {
    const other = await createTestContext({ env: { CORRIDOR_OVERLOAD_WAIT_MS: '1200' } });
    try {
      const started = performance.now();
      while (performance.now() - started < 1_200 + 300);
      const late = await other.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: { authorization: other.platform.auth }, payload: { customerType: 'INDIVIDUAL', fullName: 'Late' } });
      expect(expectEnvelope(late, 503, 'SERVICE_UNAVAILABLE').details).toEqual({ reason: 'OVERLOADED' });
      expect(late.headers['retry-after']).toBe('2');
    } finally {
      await other.close();
    }
    // The busy loop was this process's too: the shared context's loop catches up before the next test.
    await new Promise((resolve) => setTimeout(resolve, 300));
  });

  // The point reads and list pages go on the pipelined read connections, not the pool
  // (platform/db/pipelined-reads.ts): PostgreSQL stalled (here by a lock) grows their queues while
  // every pooled connection is free.
  it.runIf(onPostgres)('refuses new requests while the pipelined reads wait the bound behind a stalled PostgreSQL, then serves them again', async () => {
    const created = await create('Read');
    expect(created.statusCode).toBe(201);
    const read = () => get(`/customers/${(created.json() as { id: string }).id}`);
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // On one pooled connection: the other nine stay free, so the pool's queue stays empty.
    const lock = ctx.handle.db.transaction().execute(async (trx) => {
      await sql`lock table customers in access exclusive mode`.execute(trx);
      locked();
      await released;
    });
    try {
      await Promise.race([isLocked, lock]);
      // Admitted while nothing waits; their reads of customers then wait for the lock.
      const admitted = [read(), get('/customers?limit=20'), read()];
      await vi.waitFor(() => expect(ctx.handle.connectionWaitMs()).toBeGreaterThanOrEqual(MAX_WAIT_MS), { timeout: 10_000 });

      // Answered while the lock is still held: they did not queue behind the stalled reads.
      const refused = await Promise.all([read(), get('/customers?limit=20')]);
      for (const response of refused) {
        expect(expectEnvelope(response, 503, 'SERVICE_UNAVAILABLE').details).toEqual({ reason: 'OVERLOADED' });
        expect(response.headers['retry-after']).toBe(String(MAX_WAIT_MS / 1000));
      }
      expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      const scraped = await ctx.app.inject({ method: 'GET', url: '/metrics' });
      const gauge = /^corridor_db_connection_wait_seconds (\S+)$/m.exec(scraped.body);
      expect(Number(gauge?.[1])).toBeGreaterThanOrEqual(MAX_WAIT_MS / 1000);

      release();
      for (const response of await Promise.all(admitted)) expect(response.statusCode).toBe(200);
    } finally {
      release();
      await lock;
    }

    // Every read answered: the wait is 0 again and reads are served.
    expect(ctx.handle.connectionWaitMs()).toBe(0);
    expect((await read()).statusCode).toBe(200);
    expect((await get('/customers?limit=20')).statusCode).toBe(200);
  });
});
