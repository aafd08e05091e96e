import { sql } from 'kysely';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../clock.js';
import type { Db, DbHandle } from '../db/database.js';
import { compiledPerShape } from '../db/compiled-once.js';
import { afterCommit, deferUpdate } from '../db/tx.js';
import { isConnectionLost } from '../db/unavailable.js';
import { keptErrorMessage } from '../refused-value.js';
import { addLocalWorker, listenForOtherProcesses, removeLocalWorker } from '../wake-ups.js';
import {
  backoffMs,
  DEFAULT_MAX_ATTEMPTS,
  JobTakenOver,
  RetryJobAt,
  type Job,
  type JobCheckpoint,
  type JobCompletion,
  type JobHandler,
  type JobKindOptions,
  type JobsTable,
  type WorkSource,
} from './queue.js';
import { onDatabaseClock, runningJobUpdate, type RetryTime } from './running-job-update.js';

/** A job's outcome (done, retried, dead): one compiled UPDATE per set of columns it writes. */
const finishStatement = compiledPerShape();

/** What a finished job's row says: done, no error, no lease. */
const DONE = { status: 'done', last_error: null, locked_until: null } as const;

/**
 * A started worker runs its sources at most this often (real time, not the Clock: it paces
 * work, it is no business time): a burst of NOTIFYs, one per committed event, is relayed in a
 * few batches instead of one transaction each, for at most this much more latency.
 */
const SOURCE_INTERVAL_MS = 10;
/** How long a claim reserves a job unless the worker is told otherwise (CORRIDOR_JOBS_LEASE_MS); a worker that dies mid-job frees it after this. */
export const DEFAULT_LEASE_MS = 60_000;

export interface JobWorkerOptions {
  /** Jobs run at once (default 16). */
  concurrency?: number;
  /** How long a claim reserves a job (default DEFAULT_LEASE_MS): how soon a dead worker's jobs go to another. */
  leaseMs?: number;
  /**
   * How often (real time) a started worker renews the leases of the jobs it runs, a quarter of
   * the lease by default: a job that runs longer than a lease (a slow provider, a large re-seal)
   * is never taken by a second worker while the first still runs it; only a worker that stopped
   * renewing, one that died, loses its jobs.
   */
  leaseRenewalMs?: number;
}

interface Registration {
  handler: JobHandler;
  perPlatform: number;
}

/**
 * Claims due jobs with `FOR UPDATE SKIP LOCKED`, so any number of processes can run workers
 * without two of them taking the same job. A failed job is retried with backoff (or at the
 * time its handler names) until `max_attempts`, then parked as `dead` with its last error.
 *
 * A claim is a lease: a started worker renews it while it runs the job, so only a worker that
 * is gone loses its jobs to another, and one that died in a job's last attempt leaves it dead.
 *
 * A started worker keeps up to `concurrency` jobs running at once and claims more as slots
 * free; it wakes on NOTIFY (`wakeWorkers` in wake-ups.ts, sent by `enqueueJob` and the outbox) and polls as a
 * fallback, so new work starts within milliseconds of its commit rather than a poll interval.
 */
export class JobWorker {
  private readonly handlers = new Map<string, Registration>();
  private readonly sources: WorkSource[] = [];
  private readonly running = new Set<Promise<void>>();
  /** The jobs this worker runs, by id, with the attempt the database holds them at: their leases are this worker's. */
  private readonly leases = new Map<string, { attempts: number }>();
  private renewalTimer: NodeJS.Timeout | undefined;
  /** Running jobs per kind and platform, for the per-platform share. */
  private readonly runningShares = new Map<string, Map<string, number>>();
  private timer: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  /** Whether sources must run on the next round: new work was announced (NOTIFY, poll), not just a slot freed. */
  private sourcesDue = true;
  /** Whether the next round also looks for expired leases (the poll does; a commit's wake-up cannot have made one). */
  private leasesDue = true;
  /** Whether the next round claims: jobs were announced (commit, NOTIFY, poll), or a freed slot may take one left waiting. */
  private claimDue = true;
  /**
   * Whether the last claim may have left due jobs behind (it filled every free slot, or platform
   * shares held some back): only then does a freed slot claim. Otherwise every due job was
   * taken, and new ones announce themselves (or the poll finds them).
   */
  private mayHaveMore = true;
  private sourcesRanAt = Number.NEGATIVE_INFINITY;
  private sourcesTimer: NodeJS.Timeout | undefined;
  private stopped = true;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly leaseRenewalMs: number;
  /** How commits in this process wake this worker (wakeWorkers), while it is started. */
  private readonly wakeLocal = (jobs: boolean) => this.wake(true, false, jobs);

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: JobWorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 16;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.leaseRenewalMs = options.leaseRenewalMs ?? this.leaseMs / 4;
  }

  register(kind: string, handler: JobHandler, options: JobKindOptions = {}): void {
    this.handlers.set(kind, { handler, perPlatform: options.perPlatform ?? Number.POSITIVE_INFINITY });
  }

  addSource(source: WorkSource): void {
    this.sources.push(source);
  }

  /**
   * Runs the sources, then claims up to `limit` due jobs (within free slots and platform
   * shares), runs them and waits for them; returns how many ran. Tests drive workers this way.
   */
  async runDue(limit = 10): Promise<number> {
    await this.runSources();
    const started = await this.claimAndStart(limit, true);
    await Promise.all(started);
    return started.length;
  }

  private async runSources(): Promise<void> {
    for (const source of this.sources) {
      try {
        await source();
      } catch (error) {
        this.logger.error({ err: error }, 'work source failed');
      }
    }
  }

  /** Platforms whose share of some kind is full in this worker: the claim skips their jobs. */
  private fullPlatforms(): string[] {
    const full = new Set<string>();
    for (const [kind, shares] of this.runningShares) {
      const limit = this.handlers.get(kind)!.perPlatform;
      for (const [platformId, n] of shares) if (n >= limit) full.add(platformId);
    }
    return [...full];
  }

  /** The claim's view of the shares: each limited kind's share, and what runs of it per platform now. */
  private shareParameters() {
    const limited = [...this.handlers].filter(([, r]) => Number.isFinite(r.perPlatform));
    const running = [...this.runningShares].flatMap(([kind, shares]) => [...shares].map(([platformId, n]) => ({ kind, platformId, n })));
    return {
      limitedKinds: limited.map(([kind]) => kind),
      limits: limited.map(([, r]) => r.perPlatform),
      runningKinds: running.map((r) => r.kind),
      runningPlatforms: running.map((r) => r.platformId),
      runningCounts: running.map((r) => r.n),
    };
  }

  /** Counts a job of a platform in or out of its share; answers false when the share is full. */
  private takeShare(job: Job): boolean {
    if (!job.platform_id) return true;
    const shares = this.runningShares.get(job.kind) ?? new Map<string, number>();
    const count = shares.get(job.platform_id) ?? 0;
    if (count >= this.handlers.get(job.kind)!.perPlatform) return false;
    this.runningShares.set(job.kind, shares.set(job.platform_id, count + 1));
    return true;
  }

  private releaseShare(job: Job): void {
    const shares = this.runningShares.get(job.kind);
    if (!job.platform_id || !shares) return;
    const left = (shares.get(job.platform_id) ?? 1) - 1;
    if (left > 0) shares.set(job.platform_id, left);
    else shares.delete(job.platform_id);
  }

  /**
   * Claims up to `free` due jobs, minus what platform shares forbid, and starts them; with
   * `expiredLeases`, then also running jobs whose worker's lease ran out (a worker died).
   */
  private async claimAndStart(free: number, expiredLeases = false): Promise<Array<Promise<void>>> {
    const started = await this.claimAndStartWhere(free, 'due');
    if (!expiredLeases) return started;
    return [...started, ...(await this.claimAndStartWhere(free - started.length, 'expired'))];
  }

  /**
   * One claim, jobs_claim() (migrations 0035, 0045): `due` takes the oldest queued jobs whose
   * time has come (along jobs_due in run_at order, stopping at the limit: neither the jobs still
   * waiting for their time, e.g. every payment's settlement until its day, nor a backlog beyond
   * the limit are read); `expired` running jobs whose lease ran out, oldest lease first
   * (jobs_lease), except this worker's own runs: a lease of its own that lapsed (a stalled event
   * loop) is renewed, not claimed back. Two claims rather than one: a single scan for either
   * condition (an OR) read every waiting job on each claim.
   */
  private async claimAndStartWhere(free: number, which: 'due' | 'expired'): Promise<Array<Promise<void>>> {
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0 || free <= 0) return [];
    const now = this.clock.now();
    const hostNow = systemClock.now();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const full = this.fullPlatforms();
    const shares = this.shareParameters();
    // The due jobs are locked (SKIP LOCKED: never two workers on one job), then only as many of
    // each platform's as its share has room for are taken: the rest stay queued, untouched.
    if (which === 'due') this.mayHaveMore = full.length > 0;
    // Leases are written and judged on the database's clock (onDatabaseClock); a job's run_at stays the time it was given.
    const claimNow = which === 'expired' ? onDatabaseClock(now, hostNow) : sql`${now}::timestamptz`;
    const claimed = await sql<Job>`
      select * from jobs_claim(${which === 'expired'}, ${kinds}::text[], ${claimNow}, ${onDatabaseClock(leaseUntil, hostNow)}, ${free}::integer, ${full}::uuid[],
        ${shares.limitedKinds}::text[], ${shares.limits}::integer[], ${shares.runningKinds}::text[], ${shares.runningPlatforms}::uuid[], ${shares.runningCounts}::integer[],
        ${[...this.leases.keys()]}::uuid[])`.execute(this.db);
    if (which === 'due' && claimed.rows.length >= free) this.mayHaveMore = true;
    const started: Array<Promise<void>> = [];
    const over: Job[] = [];
    const spent: Job[] = [];
    for (const job of claimed.rows.sort((a, b) => a.run_at.getTime() - b.run_at.getTime())) {
      // Its worker stopped during its last attempt: a job that takes its process down with it
      // each time (a poison job) would otherwise be run again every lease, for ever.
      if (which === 'expired' && job.attempts > job.max_attempts) {
        spent.push(job);
        continue;
      }
      if (!this.takeShare(job)) {
        over.push(job);
        continue;
      }
      const run = this.runOne(job).finally(() => {
        this.running.delete(run);
        this.releaseShare(job);
        // A freed slot takes work left waiting at once (a started worker only); no new work was announced.
        if (this.mayHaveMore) this.wake(false);
      });
      this.running.add(run);
      started.push(run);
    }
    for (const job of spent) {
      const message = `its worker stopped before finishing its last attempt (${job.max_attempts} of ${job.max_attempts}); the lease ran out`;
      this.logger.warn({ jobId: job.id, kind: job.kind, attempts: job.max_attempts, dead: true, err: message }, 'job failed');
      await this.finish(job.id, job.attempts, { status: 'dead', last_error: message, locked_until: null });
    }
    // The claim keeps to the shares; should it ever take more (a share changed meanwhile), the rest goes back.
    if (over.length) {
      this.mayHaveMore = true;
      await sql`
        update jobs set status = 'queued', attempts = attempts - 1, locked_until = null, updated_at = ${now}
        where id = any(${over.map((j) => j.id)}::uuid[]) and status = 'running'`.execute(this.db);
    }
    return started;
  }

  private async runOne(job: Job): Promise<void> {
    /** The job as the database holds it now: a checkpoint with `next` hands it on to another kind. */
    const current = { kind: job.kind, attempts: job.attempts, maxAttempts: job.max_attempts };
    this.leases.set(job.id, current);
    try {
      await this.runHandler(job, current);
    } finally {
      this.leases.delete(job.id);
    }
  }

  private async runHandler(job: Job, current: { kind: string; attempts: number; maxAttempts: number }): Promise<void> {
    const { handler } = this.handlers.get(job.kind)!;
    const checkpoint: JobCheckpoint = async (trx, payload, next) => {
      const now = this.clock.now();
      const handedOn = next && { kind: next.kind, attempts: 1, max_attempts: next.maxAttempts ?? DEFAULT_MAX_ATTEMPTS };
      const attempts = current.attempts;
      const { shape, values, build } = runningJobUpdate(
        job.id,
        attempts,
        { payload: JSON.stringify(payload ?? null), updated_at: now, ...handedOn },
        undefined,
        { until: new Date(now.getTime() + this.leaseMs), hostNow: systemClock.now() },
      );
      const notOne = () => new JobTakenOver(`job ${job.id} was taken over by another worker`);
      // Inside withTx it runs just before COMMIT, in the statement that writes the transaction's events and jobs.
      if (!deferUpdate(trx, { shape: `jobs checkpoint ${shape}`, values, build, notOne }) && (await build(trx, values).executeTakeFirst()).numUpdatedRows !== 1n) throw notOne();
      if (handedOn) {
        // Only once it has committed (a rolled-back hand-over leaves the job what it was).
        const apply = () => Object.assign(current, { kind: handedOn.kind, attempts: handedOn.attempts, maxAttempts: handedOn.max_attempts });
        if (!afterCommit(trx, apply)) apply();
      }
    };
    let doneByHandler = false;
    const completion: JobCompletion = {
      update: () => {
        doneByHandler = true;
        // The worker's own outcome UPDATE, guard and all, for the handler's statement.
        const { values, build } = runningJobUpdate(job.id, current.attempts, { ...DONE, updated_at: this.clock.now() });
        return sql`${build(this.db, values)}`;
      },
    };
    try {
      await handler(job, checkpoint, completion);
      if (!doneByHandler) await this.finish(job.id, current.attempts, DONE);
    } catch (error) {
      // The worker that took the job over carries on from the last checkpoint and records the outcome.
      if (error instanceof JobTakenOver) return;
      // Stored in jobs.last_error and shown wherever a job's state is (bulk imports, the CLI), as well as
      // logged: a database's data exception loses the value it quotes, as in the log's error fields.
      const message = keptErrorMessage(error);
      const dead = current.attempts >= current.maxAttempts;
      const retryAt = error instanceof RetryJobAt ? error.at : new Date(this.clock.now().getTime() + backoffMs(current.attempts));
      // The offset the retry's time counts from: none for a time of the platform's clock, the claim's for a real one.
      const retryOffsetMs = error instanceof RetryJobAt && error.options.platformTime ? 0 : job.clock_offset_ms;
      const fields = { jobId: job.id, kind: current.kind, attempts: current.attempts, dead, err: message };
      // A handler with its own schedule expects to retry; only its final failure is a warning.
      if (error instanceof RetryJobAt && !dead) this.logger.info(fields, 'job will retry');
      else this.logger.warn(fields, 'job failed');
      // Progress handed with the retry is saved with it, in the same statement (RetryJobAt options).
      const progress = error instanceof RetryJobAt && error.options.payload !== undefined ? { payload: JSON.stringify(error.options.payload) } : {};
      await this.finish(
        job.id,
        current.attempts,
        { status: dead ? 'dead' : 'queued', last_error: message.slice(0, 2000), locked_until: null, ...progress },
        dead ? undefined : { at: retryAt, offsetMs: retryOffsetMs },
      ).catch((finishError: unknown) => this.logger.error({ jobId: job.id, err: finishError }, 'could not record a job failure'));
    }
  }

  private async finish(id: string, attempts: number, changes: Partial<Pick<JobsTable, 'status' | 'last_error' | 'locked_until'>> & { payload?: string }, retry?: RetryTime): Promise<void> {
    // Guarded by attempts: if our lease ran out and another worker took the job, its outcome wins.
    const { shape, values, build } = runningJobUpdate(id, attempts, { ...changes, updated_at: this.clock.now() }, retry);
    const record = () => finishStatement(this.db, shape, values, (standIns) => build(this.db, standIns));
    try {
      await record();
    } catch (error) {
      // The connection was lost under the outcome (a terminated backend, a restart): recorded
      // again on a new one rather than left to the lease, whose end would run the finished work
      // once more. The guard makes a second recording of an outcome that did commit change nothing.
      if (!isConnectionLost(error)) throw error;
      await record();
    }
  }

  /**
   * Fills free slots, running the sources first when `announced` (a NOTIFY or the poll said new
   * work may exist; a freed slot alone does not, and the relay's empty look would cost a
   * transaction per finished job). `claim`: whether to claim; a wake-up for the sources alone
   * (committed events) does not. Calls made while it runs fold into one more round.
   */
  private wake(announced = true, expiredLeases = false, claim = true): void {
    if (this.stopped) return;
    if (announced) this.sourcesDue = true;
    if (expiredLeases) this.leasesDue = true;
    if (claim) this.claimDue = true;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = (async () => {
      try {
        do {
          this.pumpAgain = false;
          if (this.sourcesDue) await this.runSourcesPaced();
          if (!this.claimDue) continue;
          this.claimDue = false;
          const leases = this.leasesDue;
          this.leasesDue = false;
          const started = await this.claimAndStart(this.concurrency - this.running.size, leases);
          // A full batch suggests more is due; otherwise wait for a NOTIFY, a freed slot or the poll.
          if (started.length > 0 && this.running.size < this.concurrency) {
            this.pumpAgain = true;
            this.claimDue = true;
          }
        } while (this.pumpAgain && !this.stopped);
      } catch (error) {
        this.logger.error({ err: error }, 'job worker tick failed');
      } finally {
        this.pumping = undefined;
      }
    })();
  }

  /** Runs the sources now if SOURCE_INTERVAL_MS has passed since they last ran, else once it has. */
  private async runSourcesPaced(): Promise<void> {
    const wait = this.sourcesRanAt + SOURCE_INTERVAL_MS - performance.now();
    if (wait > 0) {
      this.sourcesTimer ??= setTimeout(() => {
        this.sourcesTimer = undefined;
        this.wake(true, false, false);
      }, wait);
      return;
    }
    this.sourcesDue = false;
    this.sourcesRanAt = performance.now();
    await this.runSources();
  }

  /**
   * Starts working: on every NOTIFY from committed work (when `listen` is given), whenever a
   * slot frees, and every `pollMs` (jobs whose time has come, and anything a lost NOTIFY missed).
   */
  async start(pollMs: number, listen?: DbHandle['listen']): Promise<void> {
    this.stopped = false;
    addLocalWorker(this.wakeLocal);
    this.renewalTimer = setInterval(() => {
      this.renewLeases().catch((error: unknown) => this.logger.error({ err: error }, 'could not renew job leases'));
    }, this.leaseRenewalMs);
    this.renewalTimer.unref();
    // Another process's commits; this process's own wake this worker directly.
    if (listen) await listenForOtherProcesses(listen, () => this.wake());
    const tick = () => {
      if (this.stopped) return;
      this.wake(true, true);
      this.timer = setTimeout(tick, pollMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  /**
   * Stops claiming at once and waits for the jobs that are running to finish (their leases
   * renewed meanwhile). A shutdown that cannot wait that long calls `releaseClaims`.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    removeLocalWorker(this.wakeLocal);
    clearTimeout(this.timer);
    clearTimeout(this.sourcesTimer);
    this.sourcesTimer = undefined;
    await this.pumping;
    await Promise.all(this.running);
    clearInterval(this.renewalTimer);
  }

  /** The jobs this worker runs, as `(id, attempts)` pairs for the statements that act on exactly those runs. */
  private ownRuns() {
    const ids = [...this.leases.keys()];
    return sql`(id, attempts) in (select * from unnest(${ids}::uuid[], ${[...this.leases.values()].map((l) => l.attempts)}::integer[]))`;
  }

  /** Extends the lease of every job this worker runs that is still its own (not finished, not taken over). */
  private async renewLeases(): Promise<void> {
    if (this.leases.size === 0) return;
    const until = new Date(this.clock.now().getTime() + this.leaseMs);
    await sql`update jobs set locked_until = ${onDatabaseClock(until, systemClock.now())} where status = 'running' and ${this.ownRuns()}`.execute(this.db);
  }

  /**
   * Puts the jobs this worker still runs back in the queue, due now, so another process takes
   * them at once rather than when their leases run out: a shutdown whose grace period is over
   * calls it just before it exits. Their handlers here record nothing more: every write of a
   * run is guarded by its status and attempt, and the next claim moves the attempt on.
   */
  async releaseClaims(): Promise<number> {
    clearInterval(this.renewalTimer);
    // A claim under way when the worker stopped: its jobs are released too.
    await this.pumping;
    if (this.leases.size === 0) return 0;
    const now = this.clock.now();
    const released = await sql`
      update jobs set status = 'queued', run_at = ${now}, locked_until = null, updated_at = ${now}
       where status = 'running' and ${this.ownRuns()}`.execute(this.db);
    this.leases.clear();
    return Number(released.numAffectedRows ?? 0n);
  }
}
