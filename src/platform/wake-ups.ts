import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, DbHandle, DbOrTx } from './db/database.js';
import { afterCommit } from './db/tx.js';

/** The channel on which committed work wakes idle workers in every process. */
const WAKE_CHANNEL = 'corridor_work';

/**
 * What a wake-up announces: due jobs to claim, or only rows for the work sources (outbox
 * events), which claim nothing unless they enqueue jobs (their commit then announces those).
 */
export type WakeReason = 'jobs' | 'sources';

/**
 * Wakes every process's worker once the caller's transaction has committed. The NOTIFY is sent
 * after the commit, on its own, not inside the transaction: PostgreSQL serialises the commits of
 * all transactions that NOTIFY (a cluster-wide lock held through each one's WAL flush), which
 * capped every money-moving request at a few hundred commits/s (bench/README.md). A wake-up is
 * only a hint (workers poll too), so losing one to a crash right after the commit delays work by
 * at most one poll interval.
 *
 * This process's started workers are woken directly, once per event-loop turn; the NOTIFY is for
 * the other processes and goes out at most once per NOTIFY_INTERVAL_MS per database (the first at
 * once, later ones folded into one at the end of the interval): a NOTIFY is a statement and a
 * signal to every listening backend, and one per commit was about one statement per payment
 * step. Workers ignore the NOTIFYs of their own process (its id is the payload). A NOTIFY
 * announces both kinds of work (`reason` is this process's alone).
 */
export async function wakeWorkers(db: DbOrTx, reason: WakeReason): Promise<void> {
  if (afterCommit(db, (root) => wakeAfterCommit(root, reason))) return;
  if (db.isTransaction) {
    // A transaction not opened by withTx: its commit cannot be hooked, so the NOTIFY goes with it
    // and wakes every process at that commit, this one's workers included (no process id).
    await sql`select pg_notify(${WAKE_CHANNEL}, '')`.execute(db);
    return;
  }
  // The root handle: the write has committed already.
  await sql`select pg_notify(${WAKE_CHANNEL}, ${PROCESS_WAKE_ID})`.execute(db);
  wakeLocalWorkers(reason);
}

/** Identifies this process's NOTIFYs, which its own workers need not hear (they were woken directly). */
const PROCESS_WAKE_ID = randomUUID();
/** At most one wake-up NOTIFY per database this often (real time: it paces hints, no business time). */
const NOTIFY_INTERVAL_MS = 10;

/** Wake-ups of this process's started workers (every database: a spurious wake-up costs one claim at most). */
const localWorkers = new Set<(jobs: boolean) => void>();
/** The wake-up queued for the end of this event-loop turn: undefined, or whether it announces jobs. */
let localWake: boolean | undefined;

function wakeLocalWorkers(reason: WakeReason): void {
  const jobs = reason === 'jobs';
  if (localWake !== undefined) {
    localWake ||= jobs;
    return;
  }
  localWake = jobs;
  setImmediate(() => {
    const announcesJobs = localWake!;
    localWake = undefined;
    for (const wake of localWorkers) wake(announcesJobs);
  });
}

/** Per root handle: when its last wake-up NOTIFY went out, and whether one waits for the end of the interval. */
const notified = new WeakMap<Db, { at: number; pending: boolean }>();

function wakeAfterCommit(db: Db, reason: WakeReason): void {
  wakeLocalWorkers(reason);
  const state = notified.get(db) ?? { at: Number.NEGATIVE_INFINITY, pending: false };
  notified.set(db, state);
  if (state.pending) return;
  const send = () => {
    state.pending = false;
    state.at = performance.now();
    // A failed hint (the pool closing at shutdown) costs at most one poll interval of delay.
    sql`select pg_notify(${WAKE_CHANNEL}, ${PROCESS_WAKE_ID})`.execute(db).catch(() => {});
  };
  state.pending = true;
  const wait = state.at + NOTIFY_INTERVAL_MS - performance.now();
  // The first of a burst at the end of this event-loop turn (its other commits share it), the rest once the interval is over.
  if (wait <= 0) setImmediate(send);
  else setTimeout(send, wait).unref();
}

/** Registers a started worker of this process to be woken directly by its commits. */
export function addLocalWorker(wake: (jobs: boolean) => void): void {
  localWorkers.add(wake);
}

export function removeLocalWorker(wake: (jobs: boolean) => void): void {
  localWorkers.delete(wake);
}

/**
 * Calls `wake` on every wake-up NOTIFY of another process (this process's own workers were woken
 * directly), and whenever listening starts again after its connection was lost: what the other
 * processes committed meanwhile was announced to nobody here, so it waits no poll interval.
 */
export async function listenForOtherProcesses(listen: DbHandle['listen'], wake: () => void): Promise<void> {
  await listen(
    WAKE_CHANNEL,
    (payload) => {
      if (payload !== PROCESS_WAKE_ID) wake();
    },
    undefined,
    wake,
  );
}
