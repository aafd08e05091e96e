import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { openDatabase } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { isDatabaseUnavailable } from '../../src/platform/db/unavailable.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { onPostgres } from '../helpers/context.js';
import { waitUntil } from '../helpers/process.js';

/**
 * A pooled connection whose backend ends while it is checked out but between statements (a
 * transaction waiting on its caller, when PostgreSQL restarts, fails over or an operator
 * terminates the backend): pg reports the loss as an 'error' event on the client, which pg-pool
 * listens for only while the client is idle. Unheard, that event ended the whole process
 * (test/process/backend-kills.test.ts kills every connection of two processes under traffic).
 */
describe.runIf(onPostgres)('a checked-out PostgreSQL connection lost between statements', () => {
  it('fails its next statement as the database being unavailable, and the pool goes on with a new connection', async () => {
    const handle = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL!, poolSize: 1 });
    const killer = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await killer.connect();
    try {
      const { lostPid, failure } = await handle.db.connection().execute(async (connection) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(connection);
        const pid = rows[0]!.pid;
        await killer.query('select pg_terminate_backend($1)', [pid]);
        // The backend is gone and its FATAL message reached this idle client (an 'error' event).
        await waitUntil('the backend is gone', async () => (await killer.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount === 0, 5_000, 20);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const next = await sql`select 1`.execute(connection).then(
          () => undefined,
          (error: unknown) => error,
        );
        return { lostPid: pid, failure: next };
      });
      expect(isDatabaseUnavailable(failure), String(failure)).toBe(true);
      // The only pooled connection was let go, not pooled again: the next statement gets a new backend.
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db);
      expect(rows[0]!.pid).not.toBe(lostPid);
    } finally {
      await killer.end();
      await handle.close();
    }
  });

  it('a job worker whose LISTEN connection was lost claims due work as soon as it listens again, not at its next poll', async () => {
    // A database of its own: its LISTEN backends are this worker's alone to terminate.
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    const name = `corridor_relisten_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${name}`);
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${name}`;
    const handle = await openDatabase({ databaseUrl: url.toString() });
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    const worker = new JobWorker(handle.db, clock, pino({ level: 'silent' }));
    try {
      await migrate(handle.db);
      const ran: string[] = [];
      worker.register('test.relisten', async (job) => void ran.push(job.id));
      // Polls once at start, then not for ten minutes: only a wake-up can claim before then.
      await worker.start(600_000, (channel, onMessage, onReset, onListening) => handle.listen(channel, onMessage, onReset, onListening));
      const listeners = async () =>
        (await admin.query<{ pid: number }>(`select pid from pg_stat_activity where datname = $1 and query ilike 'listen%'`, [name])).rows.map((r) => r.pid);
      await waitUntil('the worker listens', async () => (await listeners()).length === 1, 5_000, 20);
      // Another process's commit during the gap: its NOTIFY reached nobody here (inserted
      // without one, as if sent while this worker's LISTEN connection was down).
      const now = clock.now();
      const platformId = randomUUID();
      const jobId = randomUUID();
      await handle.db.insertInto('platforms').values({ id: platformId, name: 'Relisten', environment: 'sandbox', identifier_key_version: 1, created_at: now, updated_at: now }).execute();
      await sql`insert into jobs (id, platform_id, kind, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
                values (${jobId}::uuid, ${platformId}::uuid, 'test.relisten', '{}'::jsonb, 'queued', 0, 8, ${now}, ${now}, ${now})`.execute(handle.db);
      const [lost] = await listeners();
      await admin.query('select pg_terminate_backend($1)', [lost]);
      await waitUntil('the worker listens again', async () => (await listeners()).some((pid) => pid !== lost), 10_000, 20);
      await waitUntil('the job ran', () => ran.includes(jobId), 10_000, 20);
    } finally {
      await worker.stop();
      await handle.close();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
    // A database of its own, created and migrated inside the test: seconds on a loaded machine.
  }, 120_000);
});
