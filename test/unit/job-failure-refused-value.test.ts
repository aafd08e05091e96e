import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { enqueueJob, JobWorker } from '../../src/platform/jobs/index.js';
import { openTestDatabase } from '../helpers/context.js';

/**
 * A job whose handler fails on a value the database refuses (SQLSTATE class 22) records that
 * failure in jobs.last_error, which bulk imports' status, the CLI and /metrics show: the value the
 * database quotes in its message (a birth date, an identifier) must not be kept there, nor in the
 * worker's log line, any more than in the log's error fields.
 */
let handle: DbHandle;
let drop: () => Promise<void>;
const clock = new ManualClock('2026-03-01T00:00:00Z');

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
});
afterAll(() => drop());

describe('a job failing on a data exception', () => {
  it('records and logs the failure without the value the database refused', async () => {
    const lines: string[] = [];
    const worker = new JobWorker(handle.db, clock, createLogger('info', (line) => lines.push(line)));
    const birthDate = '1990-02-30';
    worker.register('test.refused-value', async () => {
      await sql`select ${birthDate}::date`.execute(handle.db);
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.refused-value', payload: null, maxAttempts: 1 });
    expect(await worker.runDue()).toBe(1);
    const row = await handle.db.selectFrom('jobs').select(['status', 'last_error']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.status).toBe('dead');
    expect(row.last_error).not.toContain(birthDate);
    expect(row.last_error).toContain('out of range');
    expect(row.last_error).toContain('[redacted]');
    const failed = lines.filter((line) => line.includes('job failed'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).not.toContain(birthDate);
    expect(failed[0]).toContain('[redacted]');
  });

  it('keeps other failures’ messages whole', async () => {
    const worker = new JobWorker(handle.db, clock, createLogger('silent', () => undefined));
    worker.register('test.other-failure', async () => {
      await sql`select 1 from no_such_table`.execute(handle.db);
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.other-failure', payload: null, maxAttempts: 1 });
    expect(await worker.runDue()).toBe(1);
    const row = await handle.db.selectFrom('jobs').select('last_error').where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.last_error).toBe('relation "no_such_table" does not exist');
  });
});
