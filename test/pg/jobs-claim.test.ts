import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { onPostgres, openTestDatabase } from '../helpers/context.js';
import { captureStatements, pagesRead } from '../helpers/explain.js';

/**
 * A claim reads the jobs it takes, not the backlog behind them (migration 0035). Behind by
 * thousands of due jobs, the claim as a plain statement read and sorted all of them on every
 * claim (a bitmap scan chosen for a table never analysed), and its UPDATE scanned the whole
 * table, so a worker that fell behind fell further behind. The worker's own claim statement is
 * caught on its way to PostgreSQL and run again under EXPLAIN (ANALYZE, BUFFERS) in a transaction
 * that is rolled back: what it read is counted in pages, not timed.
 */
describe.runIf(onPostgres)('a job claim on PostgreSQL whatever the backlog', () => {
  const BACKLOG = 20_000;
  const clock = new ManualClock('2026-03-01T00:00:00Z');
  const platformId = randomUUID();
  let handle: DbHandle;
  let schema: string;
  let drop: () => Promise<void>;
  let capture: ReturnType<typeof captureStatements>;

  beforeAll(async () => {
    const opened = await openTestDatabase();
    ({ handle, drop } = opened);
    schema = opened.schema!;
    const now = clock.now();
    await handle.db.insertInto('platforms').values({ id: platformId, name: 'Backlog', environment: 'sandbox', identifier_key_version: 1, created_at: now, updated_at: now }).execute();
    // The backlog, due over the last hour, and work waiting for its day (a payment's settlement).
    await sql`
      insert into jobs (id, platform_id, kind, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
      select gen_random_uuid(), ${platformId}::uuid, 'test.backlog', '{}'::jsonb, 'queued', 0, 8,
             ${now}::timestamptz - (g || ' ms')::interval * 180, ${now}::timestamptz, ${now}::timestamptz
        from generate_series(1, ${BACKLOG}::integer) g
      union all
      select gen_random_uuid(), ${platformId}::uuid, 'test.backlog', '{}'::jsonb, 'queued', 0, 8,
             ${now}::timestamptz + (g || ' s')::interval, ${now}::timestamptz, ${now}::timestamptz
        from generate_series(1, 2000) g`.execute(handle.db);
    capture = captureStatements((text) => text.includes('jobs_claim('));
  });
  afterAll(async () => {
    capture?.restore();
    await drop?.();
  });

  it(`takes the oldest due jobs and reads a few pages with ${BACKLOG.toLocaleString('en')} due jobs waiting`, async () => {
    const worker = new JobWorker(handle.db, clock, pino({ level: 'silent' }));
    const ran: string[] = [];
    worker.register('test.backlog', async (job) => void ran.push(job.id), { perPlatform: 8 });
    expect(await worker.runDue(4)).toBe(4);
    const oldest = await handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.backlog').orderBy('run_at').limit(4).execute();
    expect(ran.sort()).toEqual(oldest.map((j) => j.id).sort());

    expect(capture.statements).toHaveLength(1);
    // 61 pages (index descents, the four rows and their index entries); the claim as a plain
    // statement read 484 here: every due job, and the whole table again for its UPDATE.
    // The second run counts: the first compiles the function and plans it.
    expect(await pagesRead(schema, capture.statements[0]!, { runs: 2 })).toBeLessThan(100);
  });
});
