import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { onPostgres, openDatabaseBefore } from '../helpers/context.js';

/**
 * `corridor migrate` run while another process is in the middle of a migration, and that process
 * killed there (its backend terminated, as when the process or its connection dies): the killed
 * migration's transaction rolls back whole (PostgreSQL's DDL is transactional, and no migration
 * runs anything that is not), the waiting command takes the advisory lock and applies it, once.
 * Migration 0052 (idempotency_keys.response_body jsonb → json) is the one interrupted: it is held
 * mid-way by a transaction that reads the table.
 */
describe.runIf(onPostgres)('a migration interrupted by the death of its process (PostgreSQL)', () => {
  const url = process.env.TEST_DATABASE_URL!;
  let handle: DbHandle;
  let drop: () => Promise<void>;
  let first: DbHandle;
  let holder: DbHandle;

  beforeAll(async () => {
    let schema: string | undefined;
    ({ handle, drop, schema } = await openDatabaseBefore(52));
    first = await openDatabase({ databaseUrl: url, schema, poolSize: 1 });
    holder = await openDatabase({ databaseUrl: url, schema, poolSize: 1 });
  }, 120_000);
  afterAll(async () => {
    await first.close();
    await holder.close();
    await drop();
  });

  const locksWaiting = async (locktype: 'relation' | 'advisory') =>
    (await sql<{ pid: number }>`select pid from pg_locks where locktype = ${locktype} and not granted`.execute(handle.db)).rows.map((r) => r.pid);
  async function until(condition: () => Promise<boolean>) {
    while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  it('rolls back whole, and the command waiting behind it applies it once', async () => {
    const platformId = uuidv7();
    await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${platformId}, 'p', 'production', now(), now())`.execute(handle.db);
    await sql`insert into idempotency_keys (platform_id, key, request_hash, status_code, response_body, created_at)
              values (${platformId}, 'k1', 'h', 201, ${JSON.stringify({ id: 'Transaction:1', amount: 12 })}::jsonb, now())`.execute(handle.db);
    const only52 = listMigrations().filter((m) => m.version === 52);
    const firstPid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(first.db)).rows[0]!.pid;

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const holderIn = new Promise<void>((resolve) => (holding = resolve));
    const held = holder.db.transaction().execute(async (trx) => {
      await sql`select count(*) from idempotency_keys`.execute(trx);
      holding();
      await released;
    });
    await holderIn;

    // The first process is inside 0052, under the advisory lock, its ALTER waiting for the table.
    const interrupted = migrate(first.db, only52).then(
      () => 'finished',
      () => 'failed',
    );
    await until(async () => (await locksWaiting('relation')).includes(firstPid));
    // `corridor migrate` (another process) waits for the advisory lock behind it.
    const command = migrate(handle.db, only52);
    await until(async () => (await locksWaiting('advisory')).length > 0);

    await sql`select pg_terminate_backend(${firstPid})`.execute(handle.db);
    // Its migrate() fails: only a lock wait that timed out is tried again (migrate.ts).
    expect(await interrupted).toBe('failed');
    release();
    await held;

    expect(await command).toEqual(['0052_idempotency_response_json']);
    const recorded = await sql<{ n: string }>`select count(*)::text as n from schema_migrations where version = 52`.execute(handle.db);
    expect(recorded.rows[0]!.n).toBe('1');
    const column = await sql<{ type: string }>`select data_type as type from information_schema.columns
      where table_schema = current_schema() and table_name = 'idempotency_keys' and column_name = 'response_body'`.execute(handle.db);
    expect(column.rows[0]!.type).toBe('json');
    const kept = await sql<{ body: unknown }>`select response_body as body from idempotency_keys where platform_id = ${platformId} and key = 'k1'`.execute(handle.db);
    expect(kept.rows[0]!.body).toEqual({ id: 'Transaction:1', amount: 12 });
  }, 60_000);
});
