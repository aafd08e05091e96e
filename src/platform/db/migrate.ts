import { readdirSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { packagePath } from '../package-root.js';
import type { Db } from './database.js';

/**
 * Forward-only migrations: `migrations/NNNN_name.sql`, applied in order, each in its own
 * transaction together with its row in `schema_migrations`. An advisory lock makes concurrent
 * starters (several API processes) apply each file exactly once.
 */
const MIGRATIONS_DIR = `${packagePath('migrations')}/`;
const LOCK_KEY = 7_301_991_001;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** A migration file by its name alone: start-up and /readyz need no more unless one is pending. */
interface MigrationFile {
  version: number;
  name: string;
  read: () => string;
}

function migrationFiles(dir: string): MigrationFile[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 4)), name: file.slice(5, -4), read: () => readFileSync(`${dir}${file}`, 'utf8') }));
}

/** The shipped files never change while a process runs: listed once. */
let shipped: MigrationFile[] | undefined;
const shippedMigrations = () => (shipped ??= migrationFiles(MIGRATIONS_DIR));

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return migrationFiles(dir).map(({ version, name, read }) => ({ version, name, sql: read() }));
}

/** The applied versions in one query, or undefined when that cannot be read (no table yet: a new database). */
async function appliedVersions(db: Db): Promise<Set<number> | undefined> {
  try {
    const rows = await sql<{ version: number }>`select version from schema_migrations`.execute(db);
    return new Set(rows.rows.map((r) => Number(r.version)));
  } catch {
    return undefined;
  }
}

/**
 * Applies the pending migrations. On a migrated database (every start but the first after a
 * release) that is one query; otherwise each pending file runs under the advisory lock, which
 * re-checks it, so a concurrent starter that applied it first wins.
 */
export async function migrate(db: Db, migrations?: Migration[]): Promise<string[]> {
  const files: MigrationFile[] = migrations?.map(({ version, name, sql: text }) => ({ version, name, read: () => text })) ?? shippedMigrations();
  const done = await appliedVersions(db);
  const pending = files.filter((m) => !done?.has(m.version));
  if (pending.length === 0) return [];
  // Under the lock too: CREATE TABLE IF NOT EXISTS is not safe against itself. Of two starters
  // running it at once on a new database, the second fails on the catalogue's unique index (pg_type).
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
    await sql`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`.execute(trx);
  });
  const applied: string[] = [];
  for (const migration of pending) {
    const ran = await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
      const already = await sql<{ version: number }>`select version from schema_migrations where version = ${migration.version}`.execute(trx);
      if (already.rows.length > 0) return false;
      await sql.raw(migration.read()).execute(trx);
      await sql`insert into schema_migrations (version, name) values (${migration.version}, ${migration.name})`.execute(trx);
      return true;
    });
    if (ran) applied.push(`${String(migration.version).padStart(4, '0')}_${migration.name}`);
  }
  return applied;
}

/** True when every migration file has been applied (readiness). */
export async function migrationsCurrent(db: Db, migrations: Array<{ version: number }> = shippedMigrations()): Promise<boolean> {
  const rows = await sql<{ n: string | number | bigint }>`select count(*) as n from schema_migrations`.execute(db);
  return Number(rows.rows[0]?.n ?? 0) >= migrations.length;
}
