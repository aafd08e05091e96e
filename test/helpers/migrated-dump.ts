import { openDatabase } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';

/**
 * A new embedded database migrated to this version, as a dump of its data directory: what a
 * test's database starts from instead of initialising and migrating its own (seconds of CPU).
 * Made once per run on PGlite (global-setup.ts), once per worker where a PostgreSQL run needs
 * one (process.ts).
 */
export async function migratedDump(): Promise<Blob> {
  const handle = await openDatabase({});
  try {
    await migrate(handle.db);
    return await handle.dumpDataDir!();
  } finally {
    await handle.close();
  }
}
