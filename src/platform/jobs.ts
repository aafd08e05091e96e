import { sql, type Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Db, DbOrTx } from './db/database.js';
import { uuidv7 } from './ids.js';

interface JobsTable {
  id: string;
  platform_id: string | null;
  kind: string;
  payload: unknown;
  status: 'queued' | 'running' | 'done' | 'dead';
  attempts: number;
  max_attempts: number;
  run_at: Date;
  locked_until: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

declare module './db/database.js' {
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

/** Adds a job in the caller's transaction, so it exists exactly when the change that needs it does. */
export async function enqueueJob(trx: DbOrTx, clock: Clock, spec: EnqueueSpec): Promise<string> {
  const now = clock.now();
  const id = uuidv7(now.getTime());
  await trx
    .insertInto('jobs')
    .values({
      id,
      platform_id: spec.platformId ?? null,
      kind: spec.kind,
      payload: JSON.stringify(spec.payload ?? null),
      status: 'queued',
      attempts: 0,
      max_attempts: spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      run_at: spec.runAt ?? now,
      locked_until: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/**
 * Saves a running job's progress: replaces its payload and renews its lease, in the caller's
 * transaction, so the progress commits exactly with the work it records. A job that dies after
 * a checkpoint is claimed again (once its lease runs out) with the saved payload.
 */
export type JobCheckpoint = (trx: DbOrTx, payload: unknown) => Promise<void>;

export type JobHandler = (job: Job, checkpoint: JobCheckpoint) => Promise<void>;

/** Thrown by a checkpoint when this worker's lease ran out and another worker took the job. */
export class JobTakenOver extends Error {}

const DEFAULT_MAX_ATTEMPTS = 8;
/** How long a claimed job is reserved; a worker that dies mid-job frees it after this. */
const LEASE_MS = 60_000;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 60 * 60_000;

/** Delay before attempt `attempts + 1`: exponential with ±20 % jitter, capped at an hour. */
export function backoffMs(attempts: number, random = Math.random): number {
  const raw = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

/**
 * Claims due jobs with `FOR UPDATE SKIP LOCKED`, so any number of processes can run workers
 * without two of them taking the same job. A failed job is retried with backoff until
 * `max_attempts`, then parked as `dead` with its last error.
 */
export class JobWorker {
  private readonly handlers = new Map<string, JobHandler>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = true;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  register(kind: string, handler: JobHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Claims up to `limit` due jobs and runs them; returns how many ran. */
  async runDue(limit = 10): Promise<number> {
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return 0;
    const now = this.clock.now();
    const leaseUntil = new Date(now.getTime() + LEASE_MS);
    const claimed = await sql<Job>`
      update jobs set status = 'running', attempts = attempts + 1, locked_until = ${leaseUntil}, updated_at = ${now}
      where id in (
        select id from jobs
        where kind = any(${kinds})
          and ((status = 'queued' and run_at <= ${now}) or (status = 'running' and locked_until < ${now}))
        order by run_at
        limit ${limit}
        for update skip locked
      )
      returning *`.execute(this.db);
    for (const job of claimed.rows) await this.runOne(job);
    return claimed.rows.length;
  }

  private async runOne(job: Job): Promise<void> {
    const handler = this.handlers.get(job.kind)!;
    const checkpoint: JobCheckpoint = async (trx, payload) => {
      const now = this.clock.now();
      const saved = await trx
        .updateTable('jobs')
        .set({ payload: JSON.stringify(payload ?? null), locked_until: new Date(now.getTime() + LEASE_MS), updated_at: now })
        .where('id', '=', job.id)
        .where('status', '=', 'running')
        .where('attempts', '=', job.attempts)
        .executeTakeFirst();
      if (Number(saved.numUpdatedRows) !== 1) throw new JobTakenOver(`job ${job.id} was taken over by another worker`);
    };
    try {
      await handler(job, checkpoint);
      await this.finish(job, { status: 'done', last_error: null, locked_until: null });
    } catch (error) {
      // The worker that took the job over carries on from the last checkpoint and records the outcome.
      if (error instanceof JobTakenOver) return;
      const message = error instanceof Error ? error.message : String(error);
      const dead = job.attempts >= job.max_attempts;
      this.logger.warn({ jobId: job.id, kind: job.kind, attempts: job.attempts, dead, err: message }, 'job failed');
      await this.finish(job, {
        status: dead ? 'dead' : 'queued',
        last_error: message.slice(0, 2000),
        locked_until: null,
        run_at: dead ? job.run_at : new Date(this.clock.now().getTime() + backoffMs(job.attempts)),
      });
    }
  }

  private async finish(job: Job, changes: Partial<Pick<JobsTable, 'status' | 'last_error' | 'locked_until' | 'run_at'>>): Promise<void> {
    // Guarded by attempts: if our lease ran out and another worker took the job, its outcome wins.
    await this.db
      .updateTable('jobs')
      .set({ ...changes, updated_at: this.clock.now() })
      .where('id', '=', job.id)
      .where('status', '=', 'running')
      .where('attempts', '=', job.attempts)
      .execute();
  }

  start(pollMs: number): void {
    this.stopped = false;
    const tick = async () => {
      if (this.stopped) return;
      try {
        this.running = this.runDue();
        const ran = await this.running;
        if (!this.stopped) this.timer = setTimeout(tick, ran > 0 ? 0 : pollMs);
      } catch (error) {
        this.logger.error({ err: error }, 'job worker tick failed');
        if (!this.stopped) this.timer = setTimeout(tick, pollMs);
      }
    };
    this.timer = setTimeout(tick, pollMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => {});
  }
}

/** Jobs per status, for /metrics. */
export async function jobQueueDepth(db: Db): Promise<Record<string, number>> {
  const rows = await db.selectFrom('jobs').select(['status', (eb) => eb.fn.countAll<string>().as('n')]).groupBy('status').execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
