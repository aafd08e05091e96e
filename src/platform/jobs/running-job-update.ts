// The one guarded UPDATE a worker writes a running job with: its checkpoints, a handler's
// completion and the worker's outcome (worker.ts).
import { sql, type QueryCreator } from 'kysely';

/**
 * A retry's time as a running job writes it: `at`, counted at the platform clock offset
 * `offsetMs`. The UPDATE moves it back by what the offset grew since (the job's `clock_offset_ms`,
 * which a sandbox clock's advance keeps current while the job runs), so an advance that committed
 * while the job ran moves its retry as it would have moved the queued job.
 */
export interface RetryTime {
  at: Date;
  offsetMs: string | number | bigint;
}

/**
 * The UPDATE of a job this worker runs, guarded so that it changes nothing once the lease ran out
 * and another worker took the job (its attempts moved on): a checkpoint's and an outcome's. Built
 * from `values` (or stand-ins for them), so it compiles once per `shape`, the columns it sets.
 */
export function runningJobUpdate(id: string, attempts: number, set: Record<string, unknown>, retry?: RetryTime) {
  const columns = Object.keys(set);
  return {
    shape: retry ? `${columns.join()},retry` : columns.join(),
    values: [id, 'running', attempts, ...Object.values(set), ...(retry ? [retry.at, String(retry.offsetMs)] : [])],
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    build: (db: QueryCreator<any>, [idValue, statusValue, attemptsValue, ...setValues]: readonly unknown[]) => {
      const [at, offsetMs] = setValues.slice(columns.length);
      return db
        .updateTable('jobs')
        .set({
          ...Object.fromEntries(columns.map((column, i) => [column, setValues[i]])),
          ...(retry ? { run_at: sql`${at}::timestamptz - (clock_offset_ms - ${offsetMs}::bigint) * interval '1 millisecond'` } : {}),
        })
        .where('id', '=', idValue)
        .where('status', '=', statusValue)
        .where('attempts', '=', attemptsValue);
    },
  };
}
