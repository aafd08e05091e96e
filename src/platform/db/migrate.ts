import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Db } from './database.js';

/**
 * Forward-only migrations: `migrations/NNNN_name.sql`, applied in order, each in its own
 * transaction together with its row in `schema_migrations`. An advisory lock makes concurrent
 * starters (several API processes) apply each file exactly once.
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url));
const LOCK_KEY = 7_301_991_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: readFileSync(`${dir}${file}`, 'utf8'),
    }));
}

export async function migrate(db: Db, migrations = listMigrations()): Promise<string[]> {
  await sql`create table if not exists schema_migrations (
    version integer primary key,
    name text not null,
    applied_at timestamptz not null default now()
  )`.execute(db);
  const applied: string[] = [];
  for (const migration of migrations) {
    const ran = await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
      const done = await sql<{ version: number }>`select version from schema_migrations where version = ${migration.version}`.execute(trx);
      if (done.rows.length > 0) return false;
      await sql.raw(migration.sql).execute(trx);
      await sql`insert into schema_migrations (version, name) values (${migration.version}, ${migration.name})`.execute(trx);
      return true;
    });
    if (ran) applied.push(`${String(migration.version).padStart(4, '0')}_${migration.name}`);
  }
  return applied;
}

/** True when every migration file has been applied (readiness). */
export async function migrationsCurrent(db: Db, migrations = listMigrations()): Promise<boolean> {
  const rows = await sql<{ n: string | number | bigint }>`select count(*) as n from schema_migrations`.execute(db);
  return Number(rows.rows[0]?.n ?? 0) >= migrations.length;
}
