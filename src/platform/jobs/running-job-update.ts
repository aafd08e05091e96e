// The one guarded UPDATE a worker writes a running job with: its checkpoints, a handler's
// completion and the worker's outcome (worker.ts).
import { sql, type QueryCreator, type RawBuilder } from 'kysely';

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
 * A lease time of a worker on the database's clock (DESIGN.md §8): `at`, a time of the worker's
 * Clock, less how far the host's clock (`hostNow`, read with it) is ahead of the database's, to
 * the second. Every process writes and judges leases so: one whose host clock runs seconds ahead
 * would otherwise find the leases of every other process's running jobs expired, and run those
 * jobs a second time while they still run. A skew under half a second counts as none (a worker
 * renews its leases with three quarters of them, 1.5 s at least, still to run), so that a test
 * that moves its worker's Clock moves its leases and reads them as written.
 */
export function onDatabaseClock(at: unknown, hostNow: unknown): RawBuilder<Date> {
  return sql<Date>`(${at}::timestamptz - round(extract(epoch from ${hostNow}::timestamptz - clock_timestamp())) * interval '1 second')`;
}

/** A renewed lease as a running job writes it: its end on the worker's Clock, and the host's time read with it (onDatabaseClock). */
export interface LeaseTime {
  until: Date;
  hostNow: Date;
}

/**
 * The UPDATE of a job this worker runs, guarded so that it changes nothing once the lease ran out
 * and another worker took the job (its attempts moved on): a checkpoint's and an outcome's. Built
 * from `values` (or stand-ins for them), so it compiles once per `shape`, the columns it sets.
 */
export function runningJobUpdate(id: string, attempts: number, set: Record<string, unknown>, retry?: RetryTime, lease?: LeaseTime) {
  const columns = Object.keys(set);
  return {
    shape: [columns.join(), ...(retry ? ['retry'] : []), ...(lease ? ['lease'] : [])].join(),
    values: [id, 'running', attempts, ...Object.values(set), ...(retry ? [retry.at, String(retry.offsetMs)] : []), ...(lease ? [lease.until, lease.hostNow] : [])],
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    build: (db: QueryCreator<any>, [idValue, statusValue, attemptsValue, ...setValues]: readonly unknown[]) => {
      const [at, offsetMs] = setValues.slice(columns.length);
      const [until, hostNow] = setValues.slice(columns.length + (retry ? 2 : 0));
      return db
        .updateTable('jobs')
        .set({
          ...Object.fromEntries(columns.map((column, i) => [column, setValues[i]])),
          ...(retry ? { run_at: sql`${at}::timestamptz - (clock_offset_ms - ${offsetMs}::bigint) * interval '1 millisecond'` } : {}),
          ...(lease ? { locked_until: onDatabaseClock(until, hostNow) } : {}),
        })
        .where('id', '=', idValue)
        .where('status', '=', statusValue)
        .where('attempts', '=', attemptsValue);
    },
  };
}
