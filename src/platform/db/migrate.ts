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
/**
 * How long a migration waits for a table's lock before it lets go (55P03, everything of it rolled
 * back) and tries again after as long a pause. A lock request waits behind every transaction
 * already on the table, and every later statement on the table, reads included, waits behind the
 * request: on a live database, a migration that holds its lock for milliseconds (ADD COLUMN with
 * a default) otherwise stopped all traffic on the table for as long as the longest transaction
 * there ran (docs/development.md, Upgrading). After the last attempt the migration fails,
 * applied to nothing, and the next start or `corridor migrate` tries again.
 */
const LOCK_WAIT_MS = 2_000;
const LOCK_ATTEMPTS = 30;
const LOCK_NOT_AVAILABLE = '55P03';

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
    if (await applyOne(db, migration)) applied.push(migrationName(migration.version, migration.name));
  }
  return applied;
}

const migrationName = (version: number, name: string) => `${String(version).padStart(4, '0')}_${name}`;

/** One migration under the advisory lock, unless a concurrent starter applied it first (false). */
async function applyOne(db: Db, migration: MigrationFile): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
        const already = await sql<{ version: number }>`select version from schema_migrations where version = ${migration.version}`.execute(trx);
        if (already.rows.length > 0) return false;
        // After the advisory lock: a starter waits for another's migration however long it runs.
        await sql.raw(`set local lock_timeout = ${LOCK_WAIT_MS}`).execute(trx);
        await sql.raw(migration.read()).execute(trx);
        await sql`insert into schema_migrations (version, name) values (${migration.version}, ${migration.name})`.execute(trx);
        return true;
      });
    } catch (error) {
      if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
      if (attempt === LOCK_ATTEMPTS) {
        throw new Error(
          `migration ${migrationName(migration.version, migration.name)} found its tables locked ${LOCK_ATTEMPTS} times for ${LOCK_WAIT_MS} ms ` +
            '(a long transaction holds them: see pg_stat_activity); nothing of it was applied, start again to retry',
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, LOCK_WAIT_MS));
    }
  }
}

/**
 * The applied migrations this release does not ship: the database was migrated by a newer release.
 * This release still runs there (a rolling deploy starts and restarts processes of both), but what
 * those migrations changed may break what it calls (README, Upgrades).
 */
export async function migrationsAhead(db: Db, migrations: Array<{ version: number }> = shippedMigrations()): Promise<string[]> {
  const shippedVersions = new Set(migrations.map((m) => m.version));
  const rows = await sql<{ version: number; name: string }>`select version, name from schema_migrations order by version`.execute(db);
  return rows.rows.filter((r) => !shippedVersions.has(Number(r.version))).map((r) => migrationName(Number(r.version), r.name));
}

/**
 * True when every migration file has been applied (readiness). Counted by version: rows of a newer
 * release's migrations do not make up for one of ours that is missing.
 */
export async function migrationsCurrent(db: Db, migrations: Array<{ version: number }> = shippedMigrations()): Promise<boolean> {
  if (migrations.length === 0) return true;
  const versions = migrations.map((m) => m.version);
  const rows = await sql<{ n: string | number | bigint }>`select count(*) as n from schema_migrations where version in (${sql.join(versions)})`.execute(db);
  return Number(rows.rows[0]?.n ?? 0) === versions.length;
}
