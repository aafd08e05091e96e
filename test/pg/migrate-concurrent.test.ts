import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { onPostgres } from '../helpers/context.js';

/**
 * DESIGN.md §8: any number of processes start at once on one database. Each migrates on start,
 * each through its own pool (two handles here, as two processes have). On a new database both
 * created schema_migrations outside the advisory lock, and the second CREATE TABLE IF NOT
 * EXISTS failed on pg_type's unique index: one process of every pair refused to start.
 */
describe.runIf(onPostgres)('two processes migrating a new database at once', () => {
  it('both start, and every migration is applied exactly once', async () => {
    const url = process.env.TEST_DATABASE_URL!;
    const admin = await openDatabase({ databaseUrl: url, poolSize: 1 });
    try {
      // The collision is a matter of milliseconds: a few rounds make it all but certain before the fix.
      for (let round = 0; round < 4; round++) {
        const schema = `migrate_race_${randomBytes(4).toString('hex')}`;
        await admin.db.schema.createSchema(schema).execute();
        const first = await openDatabase({ databaseUrl: url, schema, poolSize: 2 });
        const second = await openDatabase({ databaseUrl: url, schema, poolSize: 2 });
        try {
          const [a, b] = await Promise.all([migrate(first.db), migrate(second.db)]);
          expect([...a, ...b].sort()).toEqual(listMigrations().map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`));
          const applied = await sql<{ n: string }>`select count(*)::text as n from schema_migrations`.execute(first.db);
          expect(Number(applied.rows[0]!.n)).toBe(listMigrations().length);
        } finally {
          await first.close();
          await second.close();
          await admin.db.schema.dropSchema(schema).cascade().execute();
        }
      }
    } finally {
      await admin.close();
    }
  }, 120_000);
});
