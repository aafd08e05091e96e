// The job queue's API: the jobs table, what a module enqueues with (in its own transaction), and
// the types and errors a handler sees. The worker that runs the jobs is worker.ts.
import type { Generated, RawBuilder, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import type { DbOrTx } from '../db/database.js';
import { deferInsert } from '../db/tx.js';
import { uuidv7 } from '../ids.js';
import { wakeWorkers } from '../wake-ups.js';

export interface JobsTable {
  id: string;
  platform_id: string | null;
  kind: string;
  payload: unknown;
  status: 'queued' | 'running' | 'done' | 'dead';
  attempts: number;
  max_attempts: number;
  run_at: Date;
  /** A running job's lease: until when its worker holds it, on the database's clock (onDatabaseClock, running-job-update.ts). */
  locked_until: Date | null;
  last_error: string | null;
  /**
   * A running job's platform clock offset (migration 0056): the offset when it was claimed, plus
   * every advance of its platform's sandbox clock since. Its retry is moved back by what this grew.
   */
  clock_offset_ms: Generated<string | number | bigint>;
  created_at: Date;
  updated_at: Date;
}

declare module '../db/database.js' {
  interface Database {
    jobs: JobsTable;
  }
}

export type Job = Selectable<JobsTable>;

export interface EnqueueSpec {
  kind: string;
  payload: unknown;
  platformId?: string;
  runAt?: Date;
  maxAttempts?: number;
}

export const DEFAULT_MAX_ATTEMPTS = 8;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 60 * 60_000;

/** Delay before attempt `attempts + 1`: exponential with ±20 % jitter, capped at an hour. */
export function backoffMs(attempts: number, random = Math.random): number {
  const raw = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

/** Adds a job in the caller's transaction, so it exists exactly when the change that needs it does. */
export async function enqueueJob(trx: DbOrTx, clock: Clock, spec: EnqueueSpec): Promise<string> {
  return (await enqueueJobs(trx, clock, [spec]))[0]!;
}

/** Adds several jobs with one statement (and one wake-up), in the caller's transaction. */
export async function enqueueJobs(trx: DbOrTx, clock: Clock, specs: EnqueueSpec[]): Promise<string[]> {
  if (specs.length === 0) return [];
  const now = clock.now();
  const rows = specs.map((spec) => ({
    id: uuidv7(now.getTime()),
    platform_id: spec.platformId ?? null,
    kind: spec.kind,
    payload: JSON.stringify(spec.payload ?? null),
    status: 'queued' as const,
    attempts: 0,
    max_attempts: spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    run_at: spec.runAt ?? now,
    locked_until: null,
    last_error: null,
    created_at: now,
    updated_at: now,
  }));
  // Inside withTx the rows go in with the transaction's other deferred rows, just before COMMIT.
  if (!deferInsert(trx, 'jobs', rows)) await trx.insertInto('jobs').values(rows).execute();
  if (rows.some((r) => r.run_at <= now)) await wakeWorkers(trx, 'jobs');
  return rows.map((r) => r.id);
}

/**
 * Saves a running job's progress: replaces its payload and renews its lease, in the caller's
 * transaction, so the progress commits exactly with the work it records. A job that dies after
 * a checkpoint is claimed again (once its lease runs out) with the saved payload.
 *
 * With `next`, the job is handed on: from that commit on it is a job of `next.kind` at its first
 * attempt (of `next.maxAttempts`), still running under this worker's lease, and the handler goes
 * on to do that kind's work itself; its outcome (done, retry, failure) is recorded as the new
 * kind's. One job row carries a chain of steps (a payment's hand-over to the rail, then its
 * settlement) without inserting and claiming a second job.
 */
export type JobCheckpoint = (trx: DbOrTx, payload: unknown, next?: { kind: string; maxAttempts?: number }) => Promise<void>;

/**
 * Lets a handler record its job done with its own work — in its last statement as a
 * data-modifying CTE, or as a statement of its transaction — instead of the worker's UPDATE after
 * it returns: one statement and one commit less per job (a webhook delivery records its attempt
 * and completes its job at once), and no moment at which the work has committed and the job still
 * runs (the deposit feed's poll hands on to the next poll). `update()` answers that UPDATE,
 * guarded like the worker's own outcome (it changes nothing once another worker took the job);
 * once it has been asked for, the worker records nothing more when the handler returns, so ask
 * for it only for a statement that runs. Should the handler throw after all, its error is
 * recorded as usual, and a job already done stays done.
 */
export interface JobCompletion {
  update(): RawBuilder<unknown>;
}

export type JobHandler = (job: Job, checkpoint: JobCheckpoint, completion: JobCompletion) => Promise<void>;

/** Thrown by a checkpoint when this worker's lease ran out and another worker took the job. */
export class JobTakenOver extends Error {}

/**
 * Thrown by a handler that keeps its own retry schedule (webhook delivery): the job runs again
 * at `at` instead of after the default backoff, unless it has used up its attempts.
 *
 * A job of a platform whose sandbox clock is advanced while it runs comes due as much sooner, as
 * a queued job does: `at` in real time is moved back by every advance since the job was claimed;
 * `at` in the platform's time (`platformTime`) is converted with the offset the clock has when the
 * retry is written, whenever the handler read that time.
 */
export class RetryJobAt extends Error {
  constructor(
    readonly at: Date,
    message: string,
    readonly options: {
      /** Progress to save with the retry (a checkpoint in the same statement); absent: the payload stays. */
      payload?: unknown;
      /** `at` is a time of the job's platform's clock (PlatformClock), not the shared clock's. */
      platformTime?: boolean;
    } = {},
  ) {
    super(message);
    this.name = 'RetryJobAt';
  }
}

export interface JobKindOptions {
  /**
   * At most this many jobs of the kind for one platform run at once in a worker, so one
   * tenant's slow jobs (a dead webhook endpoint) never take every slot. Default: no limit.
   */
  perPlatform?: number;
}

/**
 * Work that turns durable rows into jobs or otherwise drains a table (the outbox relay). A
 * worker runs its sources before each claim; answers how many rows it handled.
 */
export type WorkSource = () => Promise<number>;
