import { getSignedLnurlpRequestUrl } from '@uma-sdk/core';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { enqueueJob, JobWorker } from '../../src/platform/jobs/index.js';
import { RETENTION_INTERVAL_MS, RETENTION_JOB, RETENTION_MARGIN_MS } from '../../src/platform/retention.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';

/**
 * Retention as the app wires it: every worker keeps one purge job an hour ahead, whose run
 * deletes done jobs past CORRIDOR_JOBS_RETENTION_HOURS and nothing else of the queue, and the
 * expired rows of every table it purges (wallet sessions and daily volumes as the API sees them:
 * retention-wallet-volumes.test.ts); /metrics counts the queue without the done jobs; a UMA nonce
 * still inside its replay window outlives a purge, so its replay is still refused.
 */
let ctx: TestContext;
const logLines: string[] = [];
let fake: FakeVasp;
let domain: string;
const HOUR = 3_600_000;
const RETENTION_HOURS = 24;

beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_JOBS_RETENTION_HOURS: String(RETENTION_HOURS) }, logLines });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  domain = `127.0.0.1:${(ctx.app.server.address() as { port: number }).port}`;
  fake = await startFakeVasp();
}, 120_000);
afterAll(async () => {
  await new Promise((resolve) => fake?.server.close(resolve));
  await ctx?.close();
});

function livePurgeJobs() {
  return ctx.handle.db.selectFrom('jobs').select(['id', 'run_at']).where('kind', '=', RETENTION_JOB).where('status', 'in', ['queued', 'running']).execute();
}

/** The app's hourly purge, run now: its queued job made due and run by the app's worker. */
async function runPurgeNow(): Promise<void> {
  const [job] = await ctx.handle.db.updateTable('jobs').set({ run_at: ctx.clock.now() }).where('kind', '=', RETENTION_JOB).where('status', '=', 'queued').returning('id').execute();
  await ctx.jobs.runDue();
  expect(await ctx.handle.db.selectFrom('jobs').select('status').where('id', '=', job!.id).executeTakeFirstOrThrow()).toEqual({ status: 'done' });
}

async function jobIn(status: 'queued' | 'running' | 'done' | 'dead', updatedAt: Date): Promise<string> {
  const id = await enqueueJob(ctx.handle.db, ctx.clock, { kind: 'test.retained', payload: null });
  await ctx.handle.db.updateTable('jobs').set({ status, updated_at: updatedAt, run_at: updatedAt }).where('id', '=', id).execute();
  return id;
}

describe('the retention job as the app runs it', () => {
  it('is one job an hour ahead, however many processes run workers; its run deletes only done jobs past the window and queues the next', async () => {
    const start = ctx.clock.now();
    await ctx.jobs.runDue();
    expect(await livePurgeJobs()).toEqual([{ id: expect.any(String), run_at: new Date(start.getTime() + RETENTION_INTERVAL_MS) }]);
    // Another process's worker on the same database finds it and queues none.
    const silent = pino({ level: 'silent' });
    const otherJobs = new JobWorker(ctx.handle.db, ctx.clock, silent);
    const other = await buildApp({ db: ctx.handle.db, handle: ctx.handle, clock: ctx.clock, config: ctx.config, jobs: otherJobs, logger: silent });
    await otherJobs.runDue();
    await other.close();
    expect(await livePurgeJobs()).toHaveLength(1);

    const runAt = start.getTime() + RETENTION_INTERVAL_MS;
    const cutoff = runAt - RETENTION_HOURS * HOUR;
    const gone = await jobIn('done', new Date(cutoff - 1));
    const kept = [await jobIn('done', new Date(cutoff + 1)), await jobIn('dead', new Date(cutoff - 30 * 24 * HOUR)), await jobIn('running', new Date(cutoff - HOUR))];
    ctx.clock.advance(RETENTION_INTERVAL_MS);
    expect(await ctx.jobs.runDue()).toBe(1);
    const left = await ctx.handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.retained').execute();
    expect(left.map((r) => r.id).sort()).toEqual(kept.sort());
    expect(left.map((r) => r.id)).not.toContain(gone);
    expect(await livePurgeJobs()).toEqual([{ id: expect.any(String), run_at: new Date(ctx.clock.now().getTime() + RETENTION_INTERVAL_MS) }]);
  });

  it('deletes the expired rows of every table it purges, keeps the others, and logs how many went from each', async () => {
    const now = ctx.clock.now();
    const stale = new Date(now.getTime() - RETENTION_MARGIN_MS - 1);
    const live = new Date(now.getTime() + HOUR);
    for (const [name, expires_at] of [['stale', stale], ['live', live]] as const) {
      const base = { platform_id: ctx.platform.uuid, id: crypto.randomUUID(), response: JSON.stringify({ name }), created_at: now, expires_at };
      await ctx.handle.db.insertInto('uma_lookups').values({ ...base, customer_id: crypto.randomUUID(), receiver_uma_address: '$r@vasp.example', counterparty_domain: 'vasp.example' }).execute();
      await ctx.handle.db.insertInto('receiver_lookups').values({ ...base, id: crypto.randomUUID(), external_account_id: null, sender_customer_id: null }).execute();
      await ctx.handle.db.insertInto('oidc_tokens_used').values({ token_sha256: (name === 'stale' ? 'a' : 'b').repeat(64), platform_id: ctx.platform.uuid, expires_at, used_at: now }).execute();
    }
    // A wallet session that ended (expired) past the margin and one still active, on a platform account.
    const account = await ctx.handle.db.selectFrom('internal_accounts').select('id').where('platform_id', '=', ctx.platform.uuid).executeTakeFirstOrThrow();
    const credentialId = crypto.randomUUID();
    await sql`
      insert into auth_credentials (id, platform_id, account_id, type, nickname, created_at, updated_at)
      values (${credentialId}, ${ctx.platform.uuid}, ${account.id}, 'EMAIL_OTP', 'r@example.com', ${now}, ${now})`.execute(ctx.handle.db);
    for (const [key, expires_at] of [['2', stale], ['3', live]] as const) {
      const session = { id: crypto.randomUUID(), platform_id: ctx.platform.uuid, account_id: account.id, credential_id: credentialId, created_at: now, updated_at: now, revoked_at: null };
      await ctx.handle.db.insertInto('auth_sessions').values({ ...session, public_key: `0${key}${'c'.repeat(64)}`, expires_at }).execute();
    }
    // Its OTP challenges: one out of the 15-minute rate window and expired past the margin, and the latest.
    const outOfWindow = new Date(stale.getTime() - 15 * 60_000);
    for (const [created_at, expires_at] of [[outOfWindow, stale], [now, live]] as const) {
      const challenge = { id: crypto.randomUUID(), platform_id: ctx.platform.uuid, credential_id: credentialId, code_hash: 'h', sealed_target_key: 'k', target_bundle: 'b' };
      await ctx.handle.db.insertInto('otp_challenges').values({ ...challenge, expires_at, settle_at: created_at, created_at }).execute();
    }
    // A customer's daily volume of a day that ended past the margin, and of today.
    const day = (at: number) => new Date(at).toISOString().slice(0, 10);
    const [staleDay, today] = [day(now.getTime() - RETENTION_MARGIN_MS - 24 * HOUR), day(now.getTime())];
    const customerId = crypto.randomUUID();
    for (const d of [staleDay, today]) await ctx.handle.db.insertInto('daily_volumes').values({ platform_id: ctx.platform.uuid, customer_id: customerId, day: d, currency: 'USD', amount: 1n }).execute();
    logLines.length = 0;
    await runPurgeNow();
    for (const table of ['uma_lookups', 'receiver_lookups', 'oidc_tokens_used', 'auth_sessions', 'otp_challenges'] as const) {
      const left = await ctx.handle.db.selectFrom(table).select('expires_at').execute();
      expect(left, table).toEqual([{ expires_at: live }]);
    }
    const days = await ctx.handle.db.selectFrom('daily_volumes').select(sql<string>`day::text`.as('day')).execute();
    expect(days).toEqual([{ day: today }]);
    const logged = logLines.map((line) => JSON.parse(line) as { msg: string; removed?: Record<string, number> }).filter((line) => line.msg === 'retention: rows purged');
    expect(logged).toEqual([
      expect.objectContaining({ removed: { jobs: 0, uma_nonces: 0, uma_lookups: 1, receiver_lookups: 1, oidc_tokens_used: 1, auth_sessions: 1, otp_challenges: 1, daily_volumes: 1 } }),
    ]);
  });

  it('/metrics reports the queued, running and dead jobs, not the done ones', async () => {
    await jobIn('done', ctx.clock.now());
    await jobIn('dead', ctx.clock.now());
    const rows = await ctx.handle.db.selectFrom('jobs').select(['status', (eb) => eb.fn.countAll<string>().as('n')]).groupBy('status').execute();
    const inDatabase = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    expect(inDatabase.done).toBeGreaterThan(0);
    const text = (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body;
    const reported = Object.fromEntries([...text.matchAll(/^corridor_jobs\{status="(\w+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
    for (const status of ['queued', 'running', 'dead']) expect(reported[status], status).toBe(inDatabase[status] ?? 0);
    const total = Object.values(reported).reduce((sum, n) => sum + n, 0);
    expect(total).toBe((inDatabase.queued ?? 0) + (inDatabase.running ?? 0) + (inDatabase.dead ?? 0));
  });
});

describe('a UMA nonce and the purge', () => {
  it('a nonce inside its replay window survives a purge run, and its replay is still refused', async () => {
    const auth = { authorization: ctx.platform.auth };
    expect((await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: auth, payload: { umaDomain: domain } })).statusCode).toBe(200);
    const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: auth, payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'bob', fullName: 'Bob Receiver' } });
    expect(created.statusCode, created.body).toBe(201);
    const receiver = (created.json() as { umaAddress: string }).umaAddress;
    // The SDK stamps the request with the system time; the clock that judges it follows.
    ctx.clock.set(new Date());
    const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: receiver, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
    const send = () => ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });
    expect((await send()).statusCode).toBe(200);
    await ctx.handle.db.insertInto('uma_nonces').values({ vasp_domain: 'long-gone.example', nonce: 'old', expires_at: new Date(ctx.clock.now().getTime() - 2 * HOUR - 600_000) }).execute();

    // The replay comes at the last moment its timestamp is still accepted, to a process whose
    // clock is half an hour behind the one that ran the purge.
    const window = ctx.config.uma.timestampWindowSeconds;
    const lastAccepted = (Number(url.searchParams.get('timestamp')) + window) * 1000;
    ctx.clock.set(new Date(lastAccepted + 30 * 60_000));
    await runPurgeNow();
    expect(await ctx.handle.db.selectFrom('uma_nonces').select('vasp_domain').where('nonce', 'not like', 'signed-in-lnurlp:%').execute()).toEqual([{ vasp_domain: fake.domain }]);
    ctx.clock.set(new Date(lastAccepted));
    expectEnvelope(await send(), 400, 'INVALID_NONCE');
  });
});
