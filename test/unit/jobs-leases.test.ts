import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { ManualClock, systemClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { enqueueJob, JobWorker } from '../../src/platform/jobs/index.js';
import { openTestDatabase } from '../helpers/context.js';

/**
 * Leases between workers of different processes (DESIGN.md §8), two workers on one database
 * standing for two processes: a lease protects a job for as long as its worker runs it, and
 * only a worker that is gone loses it; a job whose worker keeps dying ends dead instead of
 * being run again every lease; a stopping process hands its unfinished jobs back at once.
 */
let handle: DbHandle;
let drop: () => Promise<void>;
const clock = new ManualClock('2026-03-01T00:00:00Z');
const logger = pino({ level: 'silent' });
const LEASE_MS = 60_000;

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
});
afterAll(() => drop());

async function job(id: string) {
  return handle.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** A handler that runs until `finish()` is called; `started` resolves when it began. */
function gated() {
  let finish!: () => void;
  let began!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const started = new Promise<void>((resolve) => (began = resolve));
  return {
    finish,
    started,
    handler: async () => {
      began();
      await gate;
    },
  };
}

describe('job leases between processes', () => {
  it('a job that runs longer than a lease keeps it: no second worker runs it meanwhile', async () => {
    const slow = gated();
    // The first process's worker renews its leases every 20 ms here (every 15 s in production).
    const first = new JobWorker(handle.db, clock, logger, { concurrency: 4, leaseRenewalMs: 20 });
    let firstRan = 0;
    first.register('test.long', async () => {
      firstRan++;
      await slow.handler();
    });
    const second = new JobWorker(handle.db, clock, logger);
    let secondRan = 0;
    second.register('test.long', async () => void secondRan++);
    const id = await enqueueJob(handle.db, clock, { kind: 'test.long', payload: null });
    await first.start(600_000);
    try {
      await slow.started;
      // The first worker is still at it when its first lease would have run out.
      clock.advance(LEASE_MS + 1_000);
      await vi.waitFor(async () => expect((await job(id)).locked_until!.getTime()).toBeGreaterThan(clock.now().getTime()), { timeout: 5_000, interval: 10 });
      expect(await second.runDue()).toBe(0);
      expect(secondRan).toBe(0);
      slow.finish();
    } finally {
      await first.stop();
    }
    expect(firstRan).toBe(1);
    expect(await job(id)).toMatchObject({ status: 'done', locked_until: null });
  });

  it('a worker whose own lease lapsed (a stalled event loop) leaves the job to itself: it neither claims it back nor starts it again', async () => {
    const slow = gated();
    // Renewals too rare to come in time.
    const worker = new JobWorker(handle.db, clock, logger, { concurrency: 4, leaseRenewalMs: 600_000 });
    let ran = 0;
    worker.register('test.lapsed', async () => {
      ran++;
      await slow.handler();
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.lapsed', payload: null });
    await worker.start(600_000);
    try {
      await slow.started;
      clock.advance(LEASE_MS + 1_000);
      expect(await worker.runDue()).toBe(0);
      // Not claimed back: a claim that moved the attempt on could commit just before the handler
      // finished, and the outcome, guarded by the attempt the run knew, would change nothing.
      expect(await job(id)).toMatchObject({ status: 'running', attempts: 1 });
      slow.finish();
    } finally {
      await worker.stop();
    }
    expect(ran).toBe(1);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 1, locked_until: null });
  });

  it('a claim reserves a job for the lease its worker was given (CORRIDOR_JOBS_LEASE_MS), after which another worker takes it', async () => {
    const short = 5_000;
    const dying = new JobWorker(handle.db, clock, logger, { leaseMs: short });
    const stuck = gated();
    dying.register('test.short-lease', stuck.handler);
    const id = await enqueueJob(handle.db, clock, { kind: 'test.short-lease', payload: null });
    const claimed = dying.runDue();
    await stuck.started;
    expect((await job(id)).locked_until!.getTime()).toBe(clock.now().getTime() + short);
    // The dying worker never renews (never started); past its short lease the job is another's.
    const other = new JobWorker(handle.db, clock, logger);
    let otherRan = 0;
    other.register('test.short-lease', async () => void otherRan++);
    expect(await other.runDue()).toBe(0);
    clock.advance(short + 1);
    expect(await other.runDue()).toBe(1);
    expect(otherRan).toBe(1);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2 });
    stuck.finish();
    await claimed;
    // The first run's late outcome changes nothing.
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2 });
  });

  it('a job whose worker died in its last attempt is dead, not run again, and the queue goes on', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    const ran: string[] = [];
    worker.register('test.poison', async (j) => void ran.push(j.id));
    const lastAttempt = await enqueueJob(handle.db, clock, { kind: 'test.poison', payload: null, maxAttempts: 2 });
    const earlierAttempt = await enqueueJob(handle.db, clock, { kind: 'test.poison', payload: null, maxAttempts: 2 });
    const healthy = await enqueueJob(handle.db, clock, { kind: 'test.poison', payload: null });
    // Two claims by workers that then vanished (SIGKILL, out of memory): one at its second and last attempt.
    const lease = new Date(clock.now().getTime() + LEASE_MS);
    await handle.db.updateTable('jobs').set({ status: 'running', attempts: 2, locked_until: lease }).where('id', '=', lastAttempt).execute();
    await handle.db.updateTable('jobs').set({ status: 'running', attempts: 1, locked_until: lease }).where('id', '=', earlierAttempt).execute();
    clock.advance(LEASE_MS + 1);
    expect(await worker.runDue()).toBe(2);
    expect(ran.sort()).toEqual([earlierAttempt, healthy].sort());
    expect(await job(lastAttempt)).toMatchObject({ status: 'dead', attempts: 3, locked_until: null });
    expect((await job(lastAttempt)).last_error).toContain('lease ran out');
    expect(await job(earlierAttempt)).toMatchObject({ status: 'done', attempts: 2 });
    clock.advance(10 * LEASE_MS);
    expect(await worker.runDue()).toBe(0);
  });

  it('a stopping worker hands its unfinished jobs back, due at once, and its late outcome changes nothing', async () => {
    const stuck = gated();
    const stopping = new JobWorker(handle.db, clock, logger, { concurrency: 4, leaseRenewalMs: 20 });
    let fail = false;
    stopping.register('test.handed-back', async () => {
      await stuck.handler();
      if (fail) throw new Error('the abandoned run fails late');
    });
    const other = new JobWorker(handle.db, clock, logger);
    let otherRan = 0;
    other.register('test.handed-back', async () => void otherRan++);
    const id = await enqueueJob(handle.db, clock, { kind: 'test.handed-back', payload: null });
    await stopping.start(600_000);
    await stuck.started;
    const stopped = stopping.stop();
    expect(await stopping.releaseClaims()).toBe(1);
    expect(await job(id)).toMatchObject({ status: 'queued', attempts: 1, locked_until: null });
    // Taken at once, without waiting for the lease.
    expect(await other.runDue()).toBe(1);
    expect(otherRan).toBe(1);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2 });
    fail = true;
    stuck.finish();
    await stopped;
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2, last_error: null });
  });

  it('a started worker renews its leases a quarter of a lease apart unless told otherwise', async () => {
    const slow = gated();
    // A lease of 1 s: renewed every 250 ms (real time).
    const worker = new JobWorker(handle.db, clock, logger, { leaseMs: 1_000 });
    worker.register('test.default-renewal', slow.handler);
    const id = await enqueueJob(handle.db, clock, { kind: 'test.default-renewal', payload: null });
    await worker.start(600_000);
    try {
      await slow.started;
      const claimedUntil = (await job(id)).locked_until!.getTime();
      clock.advance(900);
      await vi.waitFor(async () => expect((await job(id)).locked_until!.getTime()).toBe(clock.now().getTime() + 1_000), { timeout: 1_500, interval: 10 });
      expect(claimedUntil).toBe(clock.now().getTime() - 900 + 1_000);
      slow.finish();
    } finally {
      await worker.stop();
    }
  });

  it('writes a lease on the database’s clock: a host clock 10 s ahead of it writes its leases 10 s earlier', async () => {
    const now = systemClock.now;
    const ahead = vi.spyOn(systemClock, 'now').mockImplementation(() => new Date(now().getTime() + 10_000));
    const stuck = gated();
    const worker = new JobWorker(handle.db, clock, logger, { leaseMs: LEASE_MS });
    worker.register('test.skewed-lease', stuck.handler);
    const id = await enqueueJob(handle.db, clock, { kind: 'test.skewed-lease', payload: null });
    try {
      const claimed = worker.runDue();
      await stuck.started;
      expect((await job(id)).locked_until!.getTime()).toBe(clock.now().getTime() + LEASE_MS - 10_000);
      stuck.finish();
      await claimed;
    } finally {
      ahead.mockRestore();
    }
  });
});
