import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createPlatform } from '../../src/modules/platforms/service.js';
import { purgeExpiredReceiverLookups } from '../../src/modules/receivers/repo.js';
import { purgeExpiredUmaLookups, purgeSpentNonces } from '../../src/modules/uma/repo.js';
import { purgeSpentOidcTokens } from '../../src/modules/wallet-auth/repo.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { enqueueJob, JobWorker } from '../../src/platform/jobs/index.js';
import { doneJobsPurge, PURGE_BATCH_ROWS, Retention, RETENTION_INTERVAL_MS, RETENTION_JOB, RETENTION_MARGIN_MS, type Purge } from '../../src/platform/retention.js';
import { openTestDatabase } from '../helpers/context.js';

/**
 * Retention (platform/retention.ts): each purge deletes exactly the rows past their rule's
 * window and keeps the rest, to the millisecond; the recurring job stays one however many
 * processes (two workers on one database here) run workers.
 */
let handle: DbHandle;
let drop: () => Promise<void>;
let platformUuid: string;
const clock = new ManualClock('2026-03-01T00:00:00Z');
const HOUR = 3_600_000;
const WEEK = 168 * HOUR;
const LEASE_MS = 60_000;

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
  ({ platformUuid } = await withTx(handle.db, (trx) => createPlatform(trx, clock, { name: 'Retention', environment: 'sandbox' })));
});
afterAll(() => drop());
beforeEach(async () => {
  await sql`delete from jobs`.execute(handle.db);
  await sql`delete from uma_nonces`.execute(handle.db);
});

/** A pino logger whose lines land in `lines`, parsed. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

const silent = pino({ level: 'silent' });

async function insertJob(status: 'queued' | 'running' | 'done' | 'dead', updatedAt: Date): Promise<string> {
  const id = await enqueueJob(handle.db, clock, { kind: 'test.kept', payload: null });
  await handle.db.updateTable('jobs').set({ status, updated_at: updatedAt, run_at: updatedAt }).where('id', '=', id).execute();
  return id;
}

async function jobIds(): Promise<string[]> {
  return (await handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.kept').execute()).map((r) => r.id).sort();
}

async function livePurgeJobs() {
  return handle.db.selectFrom('jobs').selectAll().where('kind', '=', RETENTION_JOB).where('status', 'in', ['queued', 'running']).execute();
}

/** One Corridor process as far as retention goes: a worker with the purge registered, with `purges`. */
function workerWith(purges: Purge[], logger = silent): JobWorker {
  const worker = new JobWorker(handle.db, clock, logger);
  new Retention({ db: handle.db, clock, jobs: worker, logger, purges }).register();
  return worker;
}

/** The worker's first round: its source queues the purge job, due an interval from now. */
async function firstRound(worker: JobWorker): Promise<void> {
  expect(await worker.runDue()).toBe(0);
}

describe('what each purge deletes', () => {
  it('done jobs finished before the retention window go; dead, running, queued and later done jobs stay', async () => {
    const now = clock.now();
    const cutoff = now.getTime() - WEEK;
    const month = 30 * 24 * HOUR;
    const doneOld = await insertJob('done', new Date(cutoff - 1));
    const kept = [
      await insertJob('done', new Date(cutoff)),
      await insertJob('done', new Date(now.getTime() - HOUR)),
      await insertJob('dead', new Date(cutoff - month)),
      await insertJob('running', new Date(cutoff - month)),
      await insertJob('queued', new Date(cutoff - month)),
    ];
    expect(await doneJobsPurge(handle.db, WEEK).batch(now, PURGE_BATCH_ROWS)).toBe(1);
    expect(await jobIds()).toEqual(kept.sort());
    expect(await jobIds()).not.toContain(doneOld);
  });

  it('a nonce goes once its message is past the replay window and the margin, whichever VASP sent it', async () => {
    const now = clock.now();
    const window = 300;
    const cutoff = now.getTime() - window * 1000 - RETENTION_MARGIN_MS;
    const nonces = [
      { vasp_domain: 'a.example', nonce: 'stale', expires_at: new Date(cutoff - 1) },
      { vasp_domain: 'a.example', nonce: 'edge', expires_at: new Date(cutoff) },
      { vasp_domain: 'a.example', nonce: 'fresh', expires_at: new Date(now.getTime() + window * 1000) },
      { vasp_domain: 'b.example', nonce: 'stale', expires_at: new Date(cutoff - HOUR) },
      { vasp_domain: 'c.example', nonce: 'stale', expires_at: new Date(cutoff - 1) },
    ];
    await handle.db.insertInto('uma_nonces').values(nonces).execute();
    expect(await purgeSpentNonces(handle.db, now, window, PURGE_BATCH_ROWS)).toBe(3);
    const left = await handle.db.selectFrom('uma_nonces').select(['vasp_domain', 'nonce']).orderBy('nonce').execute();
    expect(left).toEqual([
      { vasp_domain: 'a.example', nonce: 'edge' },
      { vasp_domain: 'a.example', nonce: 'fresh' },
    ]);
  });

  it('a batch of nonces stops at its limit across domains; the next takes the rest', async () => {
    const now = clock.now();
    const stale = new Date(now.getTime() - 2 * RETENTION_MARGIN_MS);
    await handle.db
      .insertInto('uma_nonces')
      .values(['a', 'b', 'c', 'd', 'e'].map((nonce, i) => ({ vasp_domain: `${i % 2}.example`, nonce, expires_at: stale })))
      .execute();
    expect(await purgeSpentNonces(handle.db, now, 300, 3)).toBe(3);
    expect(await purgeSpentNonces(handle.db, now, 300, 3)).toBe(2);
    expect(await purgeSpentNonces(handle.db, now, 300, 3)).toBe(0);
  });

  it('UMA and receiver lookups go once expired for longer than the margin; live and recently expired ones stay', async () => {
    const now = clock.now();
    const expiries = { gone: new Date(now.getTime() - RETENTION_MARGIN_MS - 1), edge: new Date(now.getTime() - RETENTION_MARGIN_MS), live: new Date(now.getTime() + 900_000) };
    const ids = Object.fromEntries(Object.keys(expiries).map((name) => [name, crypto.randomUUID()]));
    for (const [name, expires_at] of Object.entries(expiries)) {
      const base = { platform_id: platformUuid, id: ids[name]!, response: '{}', created_at: now, expires_at };
      await handle.db.insertInto('uma_lookups').values({ ...base, customer_id: crypto.randomUUID(), receiver_uma_address: '$r@vasp.example', counterparty_domain: 'vasp.example' }).execute();
      await handle.db.insertInto('receiver_lookups').values({ ...base, external_account_id: null, sender_customer_id: null }).execute();
    }
    expect(await purgeExpiredUmaLookups(handle.db, now, PURGE_BATCH_ROWS)).toBe(1);
    expect(await purgeExpiredReceiverLookups(handle.db, now, PURGE_BATCH_ROWS)).toBe(1);
    for (const table of ['uma_lookups', 'receiver_lookups'] as const) {
      const left = await handle.db.selectFrom(table).select('id').execute();
      expect(left.map((r) => r.id).sort(), table).toEqual([ids.edge, ids.live].sort());
    }
  });

  it('a used OIDC token is forgotten once it is past its exp and the margin, never before', async () => {
    const now = clock.now();
    const record = (digit: string, expires_at: Date) => ({ token_sha256: digit.repeat(64), platform_id: platformUuid, expires_at, used_at: now });
    await handle.db
      .insertInto('oidc_tokens_used')
      .values([record('a', new Date(now.getTime() - RETENTION_MARGIN_MS - 1)), record('b', new Date(now.getTime() - RETENTION_MARGIN_MS)), record('c', new Date(now.getTime() + 60_000))])
      .execute();
    expect(await purgeSpentOidcTokens(handle.db, now, PURGE_BATCH_ROWS)).toBe(1);
    const left = await handle.db.selectFrom('oidc_tokens_used').select('token_sha256').orderBy('token_sha256').execute();
    expect(left.map((r) => r.token_sha256[0])).toEqual(['b', 'c']);
  });
});

describe('the recurring purge job', () => {
  it('stays one live job however many processes run workers, and each run queues the next an interval later', async () => {
    const first = workerWith([]);
    const second = workerWith([]);
    // Both workers' first rounds at once: each looks for a live purge job, and one queues it.
    expect(await Promise.all([first.runDue(), second.runDue()])).toEqual([0, 0]);
    let live = await livePurgeJobs();
    expect(live).toHaveLength(1);
    expect(live[0]!.run_at).toEqual(new Date(clock.now().getTime() + RETENTION_INTERVAL_MS));
    // The database itself refuses a second live one.
    await expect(enqueueJob(handle.db, clock, { kind: RETENTION_JOB, payload: null })).rejects.toMatchObject({ code: '23505' });

    for (let run = 0; run < 2; run++) {
      const previous = live[0]!.id;
      clock.advance(RETENTION_INTERVAL_MS);
      const ran = await Promise.all([first.runDue(), second.runDue()]);
      expect(ran[0] + ran[1]).toBe(1);
      live = await livePurgeJobs();
      expect(live).toHaveLength(1);
      expect(live[0]!.id).not.toBe(previous);
      expect(live[0]!.run_at).toEqual(new Date(clock.now().getTime() + RETENTION_INTERVAL_MS));
      expect(await handle.db.selectFrom('jobs').select('status').where('id', '=', previous).executeTakeFirstOrThrow()).toEqual({ status: 'done' });
    }
  });

  it('a chain that ended dead is started again within an interval, without a restart', async () => {
    const worker = workerWith([]);
    await firstRound(worker);
    await handle.db.updateTable('jobs').set({ status: 'dead' }).where('kind', '=', RETENTION_JOB).execute();
    // Within the interval the worker does not look again.
    expect(await worker.runDue()).toBe(0);
    expect(await livePurgeJobs()).toHaveLength(0);
    clock.advance(RETENTION_INTERVAL_MS);
    expect(await worker.runDue()).toBe(0);
    expect(await livePurgeJobs()).toEqual([expect.objectContaining({ status: 'queued', run_at: new Date(clock.now().getTime() + RETENTION_INTERVAL_MS) })]);
  });

  it('deletes in batches of at most PURGE_BATCH_ROWS until all are gone, and logs how many rows each purge removed', async () => {
    const total = 2 * PURGE_BATCH_ROWS + 500;
    const finished = new Date(clock.now().getTime() - WEEK - HOUR);
    await sql`
      insert into jobs (id, platform_id, kind, payload, status, attempts, max_attempts, run_at, locked_until, last_error, created_at, updated_at)
      select gen_random_uuid(), null, 'test.old', '{}'::jsonb, 'done', 1, 8, ${finished}, null, null, ${finished}, ${finished}
        from generate_series(1, ${total}::integer)`.execute(handle.db);
    const jobs = doneJobsPurge(handle.db, WEEK);
    const batches: number[] = [];
    const counted: Purge = { table: 'jobs', batch: async (now, limit) => jobs.batch(now, limit).then((n) => (batches.push(n), n)) };
    const nothing: Purge = { table: 'nothing_due', batch: async () => 0 };
    const { logger, lines } = capturingLogger();
    const worker = workerWith([counted, nothing], logger);
    await firstRound(worker);
    clock.advance(RETENTION_INTERVAL_MS);
    expect(await worker.runDue()).toBe(1);
    expect(batches).toEqual([PURGE_BATCH_ROWS, PURGE_BATCH_ROWS, 500]);
    expect(await handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.old').execute()).toEqual([]);
    const logged = lines.filter((line) => line.msg === 'retention: rows purged');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 30, removed: { jobs: total, nothing_due: 0 } });
  });

  it('a failing purge is logged and the others still run; the chain goes on', async () => {
    const { logger, lines } = capturingLogger();
    let ran = 0;
    const failing: Purge = { table: 'broken', batch: async () => Promise.reject(new Error('lock timeout')) };
    const working: Purge = { table: 'working', batch: async () => (ran++, 0) };
    const worker = workerWith([failing, working], logger);
    await firstRound(worker);
    clock.advance(RETENTION_INTERVAL_MS);
    expect(await worker.runDue()).toBe(1);
    expect(ran).toBe(1);
    expect(lines.find((line) => line.msg === 'retention: a purge failed')).toMatchObject({ level: 40, table: 'broken', err: { message: 'lock timeout' } });
    expect(lines.find((line) => line.msg === 'retention: rows purged')).toMatchObject({ removed: { working: 0 } });
    expect(await livePurgeJobs()).toEqual([expect.objectContaining({ status: 'queued', run_at: new Date(clock.now().getTime() + RETENTION_INTERVAL_MS) })]);
  });

  it('a run that another worker took over (its lease ran out) leaves the next run to that worker, quietly', async () => {
    let release!: () => void;
    let began!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const started = new Promise<void>((resolve) => (began = resolve));
    const slow: Purge = { table: 'slow', batch: async () => (began(), await gate, 0) };
    const { logger, lines } = capturingLogger();
    const stalled = workerWith([slow], logger);
    const other = workerWith([]);
    await firstRound(stalled);
    clock.advance(RETENTION_INTERVAL_MS);
    const stalledRun = stalled.runDue();
    await started;
    // The stalled worker never renewed its lease (not started): past it, the other worker takes the run.
    clock.advance(LEASE_MS + 1);
    expect(await other.runDue()).toBe(1);
    const next = await livePurgeJobs();
    expect(next).toEqual([expect.objectContaining({ status: 'queued', run_at: new Date(clock.now().getTime() + RETENTION_INTERVAL_MS) })]);
    release();
    expect(await stalledRun).toBe(1);
    expect(await livePurgeJobs()).toEqual(next);
    expect(lines.filter((line) => Number(line.level) >= 40)).toEqual([]);
  });
});

describe('CORRIDOR_JOBS_RETENTION_HOURS', () => {
  const base = { CORRIDOR_MASTER_KEY: '00'.repeat(32) };

  it('keeps finished jobs a week by default, or the whole hours it says', () => {
    expect(loadConfig(base).jobs.retentionHours).toBe(168);
    expect(loadConfig({ ...base, CORRIDOR_JOBS_RETENTION_HOURS: '1' }).jobs.retentionHours).toBe(1);
    expect(loadConfig({ ...base, CORRIDOR_JOBS_RETENTION_HOURS: '720' }).jobs.retentionHours).toBe(720);
  });

  it('refuses anything else, naming the setting', () => {
    expect(() => loadConfig({ ...base, CORRIDOR_JOBS_RETENTION_HOURS: '0' })).toThrow(new ConfigError('CORRIDOR_JOBS_RETENTION_HOURS must be between 1 and 87600, got 0'));
    expect(() => loadConfig({ ...base, CORRIDOR_JOBS_RETENTION_HOURS: '87601' })).toThrow(/CORRIDOR_JOBS_RETENTION_HOURS must be between 1 and 87600/);
    expect(() => loadConfig({ ...base, CORRIDOR_JOBS_RETENTION_HOURS: '7d' })).toThrow(/CORRIDOR_JOBS_RETENTION_HOURS must be a whole number/);
  });
});
