import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate, migrationsAhead, migrationsCurrent } from '../../src/platform/db/migrate.js';
import { openDatabaseBefore } from '../helpers/context.js';

/**
 * A process of an older release starting on a database a newer release migrated (a rolling
 * deploy, or a rollback without restoring the backup): it runs, since refusing would turn every
 * restart of an old process during the overlap into a crash loop, but the migrations it does not
 * know are named (migrationsAhead) so that its start can warn. Readiness counts this release's
 * own migrations: a newer release's rows did not make up for one of ours that was missing.
 */
let handle: DbHandle;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ handle, drop } = await openDatabaseBefore(Number.MAX_SAFE_INTEGER));
}, 120_000);
afterAll(() => drop());

describe('a database migrated by a newer release', () => {
  it('applies nothing, names the migrations this release does not ship, and stays current', async () => {
    await sql`insert into schema_migrations (version, name) values (9998, 'from_a_later_release'), (9999, 'and_another')`.execute(handle.db);

    expect(await migrate(handle.db)).toEqual([]);
    expect(await migrationsAhead(handle.db)).toEqual(['9998_from_a_later_release', '9999_and_another']);
    expect(await migrationsCurrent(handle.db)).toBe(true);
  });

  it('is not current while one of this release’s migrations is missing, however many rows it holds', async () => {
    const shipped = listMigrations();
    const last = shipped[shipped.length - 1]!;
    const withoutLast = shipped.slice(0, -1);
    // The release before the last one: every migration but the last, and two rows it does not know.
    expect(await migrationsCurrent(handle.db, withoutLast)).toBe(true);
    expect(await migrationsAhead(handle.db, withoutLast)).toEqual([`${String(last.version).padStart(4, '0')}_${last.name}`, '9998_from_a_later_release', '9999_and_another']);

    await sql`delete from schema_migrations where version = ${last.version}`.execute(handle.db);
    expect(await migrationsCurrent(handle.db)).toBe(false);
  });
});
