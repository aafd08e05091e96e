import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { onPostgres, openDatabaseBefore } from '../helpers/context.js';

/**
 * An upgrade on a live database (DESIGN.md §8): a migration's lock request waits behind every
 * transaction already on its table, and every later statement there, reads included, waits
 * behind the request. Migration 0056 adds a column to jobs, a change of milliseconds, yet while a
 * transaction that read jobs stayed open, the processes' reads of jobs queued behind it until that
 * transaction ended. Here the transaction ends only once a read of jobs begun after the
 * migration's lock request has answered: before the migration gave up its request after a
 * bounded wait (migrate.ts, lock_timeout), the three waited on each other and the test never ended.
 */
describe.runIf(onPostgres)('a migration waiting for a table lock on a live database (PostgreSQL)', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  let traffic: DbHandle;
  let holder: DbHandle;

  beforeAll(async () => {
    let schema: string | undefined;
    ({ handle, drop, schema } = await openDatabaseBefore(56));
    traffic = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL!, schema, poolSize: 1 });
    holder = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL!, schema, poolSize: 1 });
  }, 120_000);
  afterAll(async () => {
    await traffic.close();
    await holder.close();
    await drop();
  });

  it('lets the table’s traffic through while it waits, then applies once the table is free', async () => {
    let readAnswered!: () => void;
    const trafficThrough = new Promise<void>((resolve) => (readAnswered = resolve));
    let holding!: () => void;
    const holderIn = new Promise<void>((resolve) => (holding = resolve));
    // A transaction on jobs that lasts until the read below has its answer.
    const held = holder.db.transaction().execute(async (trx) => {
      await sql`select count(*) from jobs`.execute(trx);
      holding();
      await trafficThrough;
    });
    await holderIn;

    const migrating = migrate(handle.db, listMigrations().filter((m) => m.version === 56));
    // The migration's request for the table's lock is queued behind the open transaction.
    for (;;) {
      const waiting = await sql<{ n: string }>`select count(*)::text as n from pg_locks l join pg_class c on c.oid = l.relation
        where c.relname = 'jobs' and c.relnamespace = current_schema()::regnamespace and l.mode = 'AccessExclusiveLock' and not l.granted`.execute(traffic.db);
      if (waiting.rows[0]!.n !== '0') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    const read = await sql<{ n: string }>`select count(*)::text as n from jobs`.execute(traffic.db);
    expect(read.rows[0]!.n).toBe('0');
    readAnswered();
    await held;

    expect(await migrating).toEqual(['0056_jobs_clock_offset']);
    const column = await sql`select 1 from information_schema.columns where table_schema = current_schema() and table_name = 'jobs' and column_name = 'clock_offset_ms'`.execute(handle.db);
    expect(column.rows).toHaveLength(1);
    const recorded = await sql<{ n: string }>`select count(*)::text as n from schema_migrations where version = 56`.execute(handle.db);
    expect(recorded.rows[0]!.n).toBe('1');
  }, 60_000);
});
