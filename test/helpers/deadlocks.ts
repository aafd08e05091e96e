import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/database.js';
import { onPostgres } from './context.js';

/**
 * Deadlocks PostgreSQL has detected in the test's database so far (0 on PGlite, one connection),
 * after waiting out the second within which backends report their counters to
 * pg_stat_database: compare the counts before and after concurrent work.
 */
export async function deadlocksDetected(db: Db): Promise<number> {
  if (!onPostgres) return 0;
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const { rows } = await sql<{ n: string }>`select deadlocks as n from pg_stat_database where datname = current_database()`.execute(db);
  return Number(rows[0]!.n);
}
