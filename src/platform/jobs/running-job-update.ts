// The one guarded UPDATE a worker writes a running job with: its checkpoints, a handler's
// completion and the worker's outcome (worker.ts).
import type { QueryCreator } from 'kysely';

/**
 * The UPDATE of a job this worker runs, guarded so that it changes nothing once the lease ran out
 * and another worker took the job (its attempts moved on): a checkpoint's and an outcome's. Built
 * from `values` (or stand-ins for them), so it compiles once per `shape`, the columns it sets.
 */
export function runningJobUpdate(id: string, attempts: number, set: Record<string, unknown>) {
  const columns = Object.keys(set);
  return {
    shape: columns.join(),
    values: [id, 'running', attempts, ...Object.values(set)],
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    build: (db: QueryCreator<any>, [idValue, statusValue, attemptsValue, ...setValues]: readonly unknown[]) =>
      db
        .updateTable('jobs')
        .set(Object.fromEntries(columns.map((column, i) => [column, setValues[i]])))
        .where('id', '=', idValue)
        .where('status', '=', statusValue)
        .where('attempts', '=', attemptsValue),
  };
}
