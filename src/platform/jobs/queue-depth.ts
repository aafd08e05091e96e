import { sql } from 'kysely';
import type { Db } from '../db/database.js';

/**
 * Jobs queued, running and dead, for /metrics: the queue and what an operator must look at.
 * Done jobs, most of the table until the retention purge deletes them, are not counted: each
 * count reads its own partial index (jobs_due, jobs_dead of migration 0046), whose predicates
 * the statuses match as literals (a parameter would hide the match from a generic plan).
 */
export async function jobQueueDepth(db: Db): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: string | number }>`
    select status, count(*) as n from jobs where status in ('queued', 'running') group by status
    union all
    select 'dead', count(*) from jobs where status = 'dead'`.execute(db);
  return Object.fromEntries(rows.rows.map((r) => [r.status, Number(r.n)]));
}
