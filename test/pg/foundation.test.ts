import type { FastifyPluginAsync } from 'fastify';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/platform/db/tx.js';
import { sendWrite } from '../../src/platform/http/write.js';
import { RequestFingerprints } from '../../src/platform/idempotency.js';
import { enqueueJob, JobWorker } from '../../src/platform/jobs/index.js';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';

/** What only a real PostgreSQL server with several connections (and processes) can show. */
describe.runIf(onPostgres)('on PostgreSQL', () => {
  let ctx: TestContext;
  let executions = 0;
  const fingerprints = new RequestFingerprints(randomBytes(32));

  const slowWrite: FastifyPluginAsync = async (api) => {
    api.post('/test/slow', { config: { permission: 'MANAGE' } }, async (request, reply) =>
      sendWrite(
        { db: ctx.handle.db, clock: ctx.clock, fingerprints },
        request,
        reply,
        async () => {
          executions++;
          await new Promise((r) => setTimeout(r, 100));
          return { statusCode: 201, body: { n: executions } };
        },
        { idempotent: true },
      ),
    );
  };

  beforeAll(async () => {
    ctx = await createTestContext({ extraRoutes: slowWrite });
  });
  afterAll(() => ctx.close());

  it('a token deleted through one process stops working in another (LISTEN/NOTIFY)', async () => {
    const other = await ctx.secondApp();
    const victim = await ctx.newToken(ctx.platform, ['VIEW']);
    const read = () => other.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: victim.auth } });
    expect((await read()).statusCode).toBe(200);
    expect((await read()).statusCode).toBe(200); // now served from the other process's cache
    const deleted = await ctx.app.inject({ method: 'DELETE', url: `${BASE}/tokens/${victim.tokenId}`, headers: { authorization: ctx.platform.auth } });
    expect(deleted.statusCode).toBe(204);
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await read()).statusCode;
      if (status === 200) await new Promise((r) => setTimeout(r, 10));
    }
    expect(status).toBe(401);
  });

  it('a config change through one process is read by another at once (LISTEN/NOTIFY)', async () => {
    const other = await ctx.secondApp();
    const read = async () =>
      ((await other.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: ctx.platform.auth } })).json() as { umaDomain?: string }).umaDomain;
    expect(await read()).toBeUndefined();
    const patched = await ctx.app.inject({
      method: 'PATCH', url: `${BASE}/config`, headers: { authorization: ctx.platform.auth }, payload: { umaDomain: 'pay.example.com' },
    });
    expect(patched.statusCode).toBe(200);
    let seen: string | undefined;
    for (let i = 0; i < 50 && seen === undefined; i++) {
      seen = await read();
      if (seen === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(seen).toBe('pay.example.com');
  });

  it('runs concurrent requests with one Idempotency-Key exactly once', async () => {
    executions = 0;
    const send = () =>
      ctx.app.inject({
        method: 'POST', url: `${BASE}/test/slow`,
        headers: { authorization: ctx.platform.auth, 'idempotency-key': 'concurrent-key' },
        payload: { same: true },
      });
    const responses = await Promise.all([send(), send(), send(), send()]);
    expect(responses.map((r) => r.statusCode)).toEqual([201, 201, 201, 201]);
    expect(new Set(responses.map((r) => r.body)).size).toBe(1);
    expect(executions).toBe(1);
  });

  it('two workers never run the same job (FOR UPDATE SKIP LOCKED)', async () => {
    const logger = pino({ level: 'silent' });
    const runs = new Map<string, number>();
    const make = () => {
      const worker = new JobWorker(ctx.handle.db, ctx.clock, logger);
      worker.register('pg.count', async (job) => {
        const key = (job.payload as { i: number }).i.toString();
        runs.set(key, (runs.get(key) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 2));
      });
      return worker;
    };
    for (let i = 0; i < 60; i++) await enqueueJob(ctx.handle.db, ctx.clock, { kind: 'pg.count', payload: { i } });
    const [a, b] = [make(), make()];
    const drain = async (w: JobWorker) => {
      let total = 0;
      for (let n = await w.runDue(5); n > 0; n = await w.runDue(5)) total += n;
      return total;
    };
    const [ranA, ranB] = await Promise.all([drain(a), drain(b)]);
    expect(ranA + ranB).toBe(60);
    expect(ranA).toBeGreaterThan(0);
    expect(ranB).toBeGreaterThan(0);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(60);
  });

  it('a claim passes over a due job another transaction holds locked, without waiting for it (SKIP LOCKED)', async () => {
    const logger = pino({ level: 'silent' });
    const worker = new JobWorker(ctx.handle.db, ctx.clock, logger);
    const ran: string[] = [];
    worker.register('pg.skip', async (job) => void ran.push(job.id));
    const locked = await enqueueJob(ctx.handle.db, ctx.clock, { kind: 'pg.skip', payload: null });
    const free = await enqueueJob(ctx.handle.db, ctx.clock, { kind: 'pg.skip', payload: null });
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let isLocked = () => {};
    const lockTaken = new Promise<void>((resolve) => (isLocked = resolve));
    const holder = ctx.handle.db.transaction().execute(async (trx) => {
      await sql`select id from jobs where id = ${locked} for update`.execute(trx);
      isLocked();
      await released;
    });
    try {
      await lockTaken;
      const claimed = worker.runDue();
      const answer = await Promise.race([claimed, new Promise((resolve) => setTimeout(() => resolve('waited for the lock'), 3_000))]);
      expect(answer).toBe(1);
      expect(ran).toEqual([free]);
    } finally {
      release();
      await holder;
    }
    expect(await worker.runDue()).toBe(1);
    expect(ran).toEqual([free, locked]);
  });

  it('withTx retries a real serialization failure until both writers commit', async () => {
    await sql`create table counters (id int primary key, n int not null)`.execute(ctx.handle.db);
    await sql`insert into counters values (1, 0)`.execute(ctx.handle.db);
    let attempts = 0;
    const increment = () =>
      withTx(
        ctx.handle.db,
        async (trx) => {
          attempts++;
          const row = await sql<{ n: number }>`select n from counters where id = 1`.execute(trx);
          await new Promise((r) => setTimeout(r, 50));
          await sql`update counters set n = ${row.rows[0]!.n + 1} where id = 1`.execute(trx);
        },
        { isolation: 'serializable' },
      );
    await Promise.all([increment(), increment()]);
    const final = await sql<{ n: number }>`select n from counters where id = 1`.execute(ctx.handle.db);
    expect(final.rows[0]!.n).toBe(2);
    expect(attempts).toBeGreaterThan(2);
  });
});
