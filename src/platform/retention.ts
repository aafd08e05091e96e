import { sql, type RawBuilder } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Db, DbOrTx, Tx } from './db/database.js';
import { withTx } from './db/tx.js';
import { violatedUniqueIndex } from './db/unique-violation.js';
import { enqueueJob, type JobCompletion, type JobWorker } from './jobs/index.js';

export const RETENTION_JOB = 'retention.purge';
/** How often the purge runs. */
export const RETENTION_INTERVAL_MS = 60 * 60_000;
/**
 * Most rows one purge statement deletes: each batch is a statement of its own (its own short
 * transaction), so a purge never holds many row locks for long and request traffic runs
 * between its batches.
 */
export const PURGE_BATCH_ROWS = 1000;
/**
 * How long past the moment a row stops mattering a purge still keeps it. The processes sharing
 * a database read different clocks, and while a setting (a window, a TTL) is being changed
 * across them they disagree on it; an hour covers both, for an hour more of rows.
 */
export const RETENTION_MARGIN_MS = 60 * 60_000;

/** Migration 0046: the database refuses a second queued or running purge job. */
const ONE_LIVE_PURGE_INDEX = 'jobs_one_live_retention';

/** Rows of one table that nothing needs any more, deleted a batch at a time. */
export interface Purge {
  /** The table it deletes from, as the run's log line names it. */
  table: string;
  /**
   * Deletes, in one statement, at most `limit` rows that no rule needs any more at `now`;
   * answers how many it deleted. Fewer than `limit`: nothing more is due. Most are one
   * `deleteOldest`.
   */
  batch(now: Date, limit: number): Promise<number>;
}

export interface RetentionDeps {
  db: Db;
  clock: Clock;
  jobs: JobWorker;
  logger: Logger;
  purges: Purge[];
}

/** `now` less RETENTION_MARGIN_MS: rows that stopped mattering before it may go. */
export function pastMargin(now: Date): Date {
  return new Date(now.getTime() - RETENTION_MARGIN_MS);
}

/**
 * One purge batch: deletes the at most `limit` rows of `table` whose `key` (the indexed column
 * or expression the purge's index is on) is below `before`, oldest first, and answers how many
 * went. `also` narrows the rows (as a literal, so that a partial index's predicate is seen even in
 * a generic plan). Written as `delete … where ctid = any(array(select ctid … order by key limit
 * n))`: the index yields the oldest rows and the delete takes exactly those (a TID scan), where
 * a join back on the primary key let the planner read the whole table to match a thousand keys.
 */
export async function deleteOldest(
  db: DbOrTx,
  batch: { table: string; key: RawBuilder<unknown>; before: Date | RawBuilder<unknown>; also?: RawBuilder<boolean> },
  limit: number,
): Promise<number> {
  const table = sql.table(batch.table);
  const also = batch.also ? sql`${batch.also} and ` : sql``;
  const deleted = await sql`
    delete from ${table} where ctid = any(array(
      select ctid from ${table} where ${also}${batch.key} < ${batch.before} order by ${batch.key} limit ${limit}))`.execute(db);
  return Number(deleted.numAffectedRows ?? 0n);
}

/**
 * Finished jobs older than `retentionMs`, oldest first along jobs_done (migration 0046). Nothing
 * reads a done job: no table refers to jobs by id but deposit_feeds, whose start treats a missing
 * job as the finished one it was (a new poll is queued only when none is queued or running), and
 * no unique index or once-only rule counts done jobs. Dead jobs (an operator's evidence), queued
 * and running ones are never touched. The statuses are literals: a parameter would keep a
 * prepared statement's generic plan from proving the partial index's predicate.
 */
export function purgeDoneJobs(db: Db, finishedBefore: Date, limit: number): Promise<number> {
  return deleteOldest(db, { table: 'jobs', key: sql`updated_at`, before: finishedBefore, also: sql<boolean>`status = 'done'` }, limit);
}

/** The purge of done jobs past the retention window (CORRIDOR_JOBS_RETENTION_HOURS). */
export function doneJobsPurge(db: Db, retentionMs: number): Purge {
  return { table: 'jobs', batch: (now, limit) => purgeDoneJobs(db, new Date(now.getTime() - retentionMs), limit) };
}

/**
 * The retention purge: ONE recurring job deletes, about hourly, the rows of each `Purge` that no
 * rule needs any more, in batches of PURGE_BATCH_ROWS until a batch comes back short. Each run
 * queues the next in the transaction that completes it, so the chain never has two live jobs;
 * the database holds it to one (a unique index on live purge jobs), so however many processes
 * run workers, one purges at a time.
 */
export class Retention {
  /** When (Clock ms) this process last made sure the chain runs; undefined: not yet. */
  private ensuredAt: number | undefined;

  constructor(private readonly deps: RetentionDeps) {}

  /**
   * Gives the worker the purge job and a source that keeps one queued. The chain is not looked
   * at now but from the worker, once it runs: the app is also built on databases without tables
   * (the OpenAPI script), and a process that runs no jobs has no chain to keep.
   */
  register(): void {
    this.deps.jobs.register(RETENTION_JOB, (_job, _checkpoint, completion) => this.run(completion));
    this.deps.jobs.addSource(() => this.ensureScheduledEachInterval());
  }

  /**
   * A work source: on the worker's first round, then once an interval, makes sure the chain
   * runs, so that a chain whose last job ended dead (the database away through all its
   * attempts) starts again without a restart. Answers how many jobs it queued.
   */
  private async ensureScheduledEachInterval(): Promise<number> {
    const now = this.deps.clock.now().getTime();
    if (this.ensuredAt !== undefined && now - this.ensuredAt < RETENTION_INTERVAL_MS) return 0;
    const queued = await this.ensureScheduled();
    this.ensuredAt = now;
    return queued;
  }

  /** Queues a purge an interval from now unless one is queued or running; answers how many it queued. */
  private async ensureScheduled(): Promise<number> {
    try {
      return await withTx(this.deps.db, async (trx) => {
        const live = await sql`
          select 1 from jobs where kind = ${sql.lit(RETENTION_JOB)} and status in ('queued', 'running')`.execute(trx);
        if (live.rows.length > 0) return 0;
        await this.scheduleNext(trx);
        return 1;
      });
    } catch (error) {
      // Another process queued it at the same moment: the unique index kept that one.
      if (!violatedUniqueIndex(error, [ONE_LIVE_PURGE_INDEX])) throw error;
      return 0;
    }
  }

  private async scheduleNext(trx: Tx): Promise<void> {
    const runAt = new Date(this.deps.clock.now().getTime() + RETENTION_INTERVAL_MS);
    await enqueueJob(trx, this.deps.clock, { kind: RETENTION_JOB, payload: null, runAt });
  }

  private async run(completion: JobCompletion): Promise<void> {
    const now = this.deps.clock.now();
    const started = performance.now();
    const removed: Record<string, number> = {};
    for (const purge of this.deps.purges) {
      try {
        removed[purge.table] = await drain(purge, now);
      } catch (error) {
        // One table's failure leaves the others to go on; the next run tries it again.
        this.deps.logger.warn({ err: error, table: purge.table }, 'retention: a purge failed');
      }
    }
    this.deps.logger.info({ removed, ms: Math.round(performance.now() - started) }, 'retention: rows purged');
    await withTx(this.deps.db, async (trx) => {
      const finished = await completion.update().execute(trx);
      // Another worker took this run over (this one's lease ran out): that run queues the next.
      if (finished.numAffectedRows !== 1n) return;
      await this.scheduleNext(trx);
    });
  }
}

/** Deletes batch after batch until one comes back short; answers how many rows went. */
async function drain(purge: Purge, now: Date): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await purge.batch(now, PURGE_BATCH_ROWS);
    total += deleted;
    if (deleted < PURGE_BATCH_ROWS) return total;
  }
}
