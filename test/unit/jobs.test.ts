import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { pino } from 'pino';
import { ManualClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { backoffMs, enqueueJob, enqueueJobs, JobWorker, RetryJobAt } from '../../src/platform/jobs/index.js';
import { openTestDatabase } from '../helpers/context.js';

let handle: DbHandle;
let drop: () => Promise<void>;
const clock = new ManualClock('2026-03-01T00:00:00Z');
const logger = pino({ level: 'silent' });

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
});
afterAll(() => drop());

async function job(id: string) {
  return handle.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Waits (up to 15 s) until `count` jobs of `kind` are done. */
function allDone(kind: string, count: number) {
  return vi.waitFor(async () => expect(await handle.db.selectFrom('jobs').select('id').where('kind', '=', kind).where('status', '=', 'done').execute()).toHaveLength(count), {
    timeout: 15_000,
    interval: 50,
  });
}

describe('durable jobs', () => {
  it('runs a due job once and marks it done', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    const seen: unknown[] = [];
    worker.register('test.ok', async (j) => {
      seen.push(j.payload);
    });
    const id = await withTx(handle.db, (trx) => enqueueJob(trx, clock, { kind: 'test.ok', payload: { n: 1 } }));
    expect(await worker.runDue()).toBe(1);
    expect(await worker.runDue()).toBe(0);
    expect(seen).toEqual([{ n: 1 }]);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 1, last_error: null });
  });

  it('waits for run_at', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    let ran = 0;
    worker.register('test.later', async () => {
      ran++;
    });
    await enqueueJob(handle.db, clock, { kind: 'test.later', payload: null, runAt: new Date(clock.now().getTime() + 10_000) });
    expect(await worker.runDue()).toBe(0);
    clock.advance(10_000);
    expect(await worker.runDue()).toBe(1);
    expect(ran).toBe(1);
  });

  it('retries failures with exponential backoff, then parks the job as dead', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    let calls = 0;
    worker.register('test.fail', async () => {
      calls++;
      throw new Error(`boom ${calls}`);
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.fail', payload: null, maxAttempts: 3 });
    expect(await worker.runDue()).toBe(1);
    let row = await job(id);
    expect(row).toMatchObject({ status: 'queued', attempts: 1, last_error: 'boom 1' });
    const firstDelay = row.run_at.getTime() - clock.now().getTime();
    expect(firstDelay).toBeGreaterThanOrEqual(800);
    expect(firstDelay).toBeLessThanOrEqual(1200);
    expect(await worker.runDue()).toBe(0);
    clock.advance(firstDelay);
    expect(await worker.runDue()).toBe(1);
    row = await job(id);
    const secondDelay = row.run_at.getTime() - clock.now().getTime();
    expect(secondDelay).toBeGreaterThanOrEqual(1600);
    clock.advance(secondDelay);
    expect(await worker.runDue()).toBe(1);
    row = await job(id);
    expect(row).toMatchObject({ status: 'dead', attempts: 3, last_error: 'boom 3' });
    clock.advance(3_600_000);
    expect(await worker.runDue()).toBe(0);
    expect(calls).toBe(3);
  });

  it('reclaims a job whose worker died mid-run once its lease ends', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    let ran = 0;
    worker.register('test.lease', async () => {
      ran++;
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.lease', payload: null });
    // Simulate a worker that claimed the job and vanished.
    await handle.db.updateTable('jobs').set({ status: 'running', attempts: 1, locked_until: new Date(clock.now().getTime() + 60_000) }).where('id', '=', id).execute();
    expect(await worker.runDue()).toBe(0);
    // Not a moment before it ends: at its last millisecond the lease still holds.
    clock.advance(60_000);
    expect(await worker.runDue()).toBe(0);
    clock.advance(1);
    expect(await worker.runDue()).toBe(1);
    expect(ran).toBe(1);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2 });
  });

  it('keeps a checkpoint only with the work it records, and a worker whose lease was taken over stops', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    const seen: unknown[] = [];
    let crash = true;
    worker.register('test.progress', async (j, checkpoint) => {
      seen.push(j.payload);
      const start = (j.payload as { next: number }).next;
      for (let next = start + 1; next <= 3; next++) {
        await withTx(handle.db, (trx) => checkpoint(trx, { next }));
        if (next === 2 && crash) {
          crash = false;
          throw new Error('crash after checkpoint 2');
        }
      }
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.progress', payload: { next: 0 } });
    await worker.runDue();
    const failed = await job(id);
    expect(failed).toMatchObject({ status: 'queued', payload: { next: 2 } });
    clock.advance(failed.run_at.getTime() - clock.now().getTime());
    await worker.runDue();
    expect(seen).toEqual([{ next: 0 }, { next: 2 }]);
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2, payload: { next: 3 } });

    // A checkpoint from a worker whose lease another worker took is refused; that run ends quietly.
    const taken = await enqueueJob(handle.db, clock, { kind: 'test.taken', payload: null });
    worker.register('test.taken', async (j, checkpoint) => {
      await handle.db.updateTable('jobs').set({ attempts: j.attempts + 1 }).where('id', '=', j.id).execute();
      await withTx(handle.db, async (trx) => {
        await trx.updateTable('jobs').set({ last_error: 'written by the stale worker' }).where('id', '=', j.id).execute();
        await checkpoint(trx, { stale: true });
      });
    });
    await worker.runDue();
    expect(await job(taken)).toMatchObject({ status: 'running', attempts: 2, payload: null, last_error: null });

    // The same in a bulk transaction (more deferred rows than one INSERT takes): none of its rows stay.
    const takenBulk = await enqueueJob(handle.db, clock, { kind: 'test.taken-bulk', payload: null });
    worker.register('test.taken-bulk', async (j, checkpoint) => {
      await handle.db.updateTable('jobs').set({ attempts: j.attempts + 1 }).where('id', '=', j.id).execute();
      await withTx(handle.db, async (trx) => {
        await enqueueJobs(trx, clock, Array.from({ length: 1_001 }, () => ({ kind: 'test.bulk-child', payload: null, runAt: new Date(clock.now().getTime() + 3_600_000) })));
        await checkpoint(trx, { stale: true });
      });
    });
    await worker.runDue();
    expect(await job(takenBulk)).toMatchObject({ status: 'running', attempts: 2, payload: null });
    expect(await handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.bulk-child').execute()).toHaveLength(0);
  });

  it('hands a job on to another kind in a transaction: its outcome is the new kind\'s; a retry saves the progress it carries', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    const events: string[] = [];
    worker.register('test.first', async (_j, checkpoint) => {
      await withTx(handle.db, async (trx) => {
        await enqueueJob(trx, clock, { kind: 'test.unrelated', payload: null });
        await checkpoint(trx, { step: 2 }, { kind: 'test.second', maxAttempts: 5 });
      });
      events.push('handed on');
      // Carries on as test.second and waits: the retry is test.second's first attempt, with the progress saved.
      throw new RetryJobAt(new Date(clock.now().getTime() + 60_000), 'later', { payload: { step: 3 } });
    });
    worker.register('test.second', async (j) => {
      events.push(`second ${JSON.stringify(j.payload)}`);
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.first', payload: { step: 1 }, maxAttempts: 1 });
    expect(await worker.runDue()).toBe(1);
    expect(await job(id)).toMatchObject({ kind: 'test.second', status: 'queued', attempts: 1, max_attempts: 5, payload: { step: 3 }, last_error: 'later' });
    const unrelated = await handle.db.selectFrom('jobs').select('kind').where('kind', '=', 'test.unrelated').execute();
    expect(unrelated).toHaveLength(1);
    clock.advance(60_000);
    expect(await worker.runDue()).toBe(1);
    expect(events).toEqual(['handed on', 'second {"step":3}']);
    expect(await job(id)).toMatchObject({ kind: 'test.second', status: 'done', attempts: 2 });

    // A hand-over that rolls back leaves the job what it was: its failure is counted against the first kind.
    worker.register('test.rolled-back', async (_j, checkpoint) => {
      await withTx(handle.db, async (trx) => {
        await checkpoint(trx, { lost: true }, { kind: 'test.second', maxAttempts: 5 });
        throw new Error('rolled back');
      });
    });
    const back = await enqueueJob(handle.db, clock, { kind: 'test.rolled-back', payload: { kept: true }, maxAttempts: 1 });
    expect(await worker.runDue()).toBe(1);
    expect(await job(back)).toMatchObject({ kind: 'test.rolled-back', status: 'dead', attempts: 1, payload: { kept: true }, last_error: 'rolled back' });
  });

  it('a handler records its job done in its own statement, and the worker then writes nothing more', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    const ran: string[] = [];
    worker.register('test.own-statement', async (j, _checkpoint, completion) => {
      const { mode } = j.payload as { mode: 'run' | 'ask only' | 'run, then fail' };
      ran.push(mode);
      if (mode === 'ask only') {
        completion.update();
        return;
      }
      await sql`with done as (${completion.update()}) select 1`.execute(handle.db);
      if (mode === 'run, then fail') throw new Error('after the statement');
    });
    const [run, askOnly, runThenFail] = await enqueueJobs(handle.db, clock, [
      { kind: 'test.own-statement', payload: { mode: 'run' } },
      { kind: 'test.own-statement', payload: { mode: 'ask only' } },
      { kind: 'test.own-statement', payload: { mode: 'run, then fail' } },
    ]);
    expect(await worker.runDue()).toBe(3);
    expect(ran.sort()).toEqual(['ask only', 'run', 'run, then fail']);
    expect(await job(run!)).toMatchObject({ status: 'done', attempts: 1, locked_until: null });
    // Asked for and never run: the worker took the handler at its word and left the job running (until its lease ends).
    expect(await job(askOnly!)).toMatchObject({ status: 'running', attempts: 1 });
    // The failure after the statement finds the job done, and changes nothing.
    expect(await job(runThenFail!)).toMatchObject({ status: 'done', attempts: 1, last_error: null });
    expect(await worker.runDue()).toBe(0);
  });

  it('computes backoff exponentially, capped at an hour', () => {
    expect(backoffMs(1, () => 0.5)).toBe(1000);
    expect(backoffMs(4, () => 0.5)).toBe(8000);
    expect(backoffMs(40, () => 0.5)).toBe(3_600_000);
    expect(backoffMs(1, () => 0)).toBe(800);
    expect(backoffMs(1, () => 1)).toBe(1200);
  });

  it('a freed slot claims what a full platform share held back, without waiting for the poll', async () => {
    const platformId = randomUUID();
    await handle.db.insertInto('platforms').values({ id: platformId, name: 'Shares', environment: 'sandbox', identifier_key_version: 1, created_at: clock.now(), updated_at: clock.now() }).execute();
    const worker = new JobWorker(handle.db, clock, logger);
    let running = 0;
    let most = 0;
    worker.register(
      'test.shared',
      async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
      },
      { perPlatform: 2 },
    );
    // The poll would come only after the test's timeout: every claim after the first must come from a freed slot.
    await worker.start(600_000);
    try {
      await withTx(handle.db, (trx) => enqueueJobs(trx, clock, Array.from({ length: 6 }, (_, n) => ({ kind: 'test.shared', platformId, payload: { n } }))));
      await allDone('test.shared', 6);
      expect(most).toBe(2);
    } finally {
      await worker.stop();
    }
  });

  it('only claims kinds it has handlers for', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    worker.register('test.mine', async () => {});
    const other = await enqueueJob(handle.db, clock, { kind: 'test.someone-else', payload: null });
    await worker.runDue();
    expect((await job(other)).status).toBe('queued');
  });

  it('a checkpoint renews the lease from the time it is written', async () => {
    const worker = new JobWorker(handle.db, clock, logger, { leaseMs: 60_000 });
    let renewed: Date | null = null;
    worker.register('test.checkpoint-lease', async (j, checkpoint) => {
      clock.advance(50_000);
      await withTx(handle.db, (trx) => checkpoint(trx, { step: 1 }));
      renewed = (await job(j.id)).locked_until;
    });
    await enqueueJob(handle.db, clock, { kind: 'test.checkpoint-lease', payload: null });
    expect(await worker.runDue()).toBe(1);
    expect(renewed!.getTime()).toBe(clock.now().getTime() + 60_000);
  });

  it('a job handed on in a later attempt starts the new kind at its first attempt', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    worker.register('test.first-late', async (j, checkpoint) => {
      if (j.attempts === 1) throw new Error('not yet');
      await withTx(handle.db, (trx) => checkpoint(trx, { step: 2 }, { kind: 'test.second-late', maxAttempts: 5 }));
      throw new RetryJobAt(new Date(clock.now().getTime() + 60_000), 'later');
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.first-late', payload: { step: 1 }, maxAttempts: 3 });
    expect(await worker.runDue()).toBe(1);
    clock.advance((await job(id)).run_at.getTime() - clock.now().getTime());
    expect(await worker.runDue()).toBe(1);
    expect(await job(id)).toMatchObject({ kind: 'test.second-late', status: 'queued', attempts: 1, max_attempts: 5, payload: { step: 2 } });
  });

  it('keeps the first 2000 characters of a failure’s message', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    worker.register('test.long-error', async () => {
      throw new Error(`${'x'.repeat(1_999)}yz`);
    });
    const id = await enqueueJob(handle.db, clock, { kind: 'test.long-error', payload: null, maxAttempts: 1 });
    expect(await worker.runDue()).toBe(1);
    expect((await job(id)).last_error).toBe(`${'x'.repeat(1_999)}y`);
  });

  it('runDue(limit) runs at most `limit` jobs, due and reclaimed together', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    const ran: string[] = [];
    worker.register('test.limited', async (j) => void ran.push(j.id));
    const due = await enqueueJob(handle.db, clock, { kind: 'test.limited', payload: null });
    const expired = await enqueueJob(handle.db, clock, { kind: 'test.limited', payload: null });
    await handle.db.updateTable('jobs').set({ status: 'running', attempts: 1, locked_until: new Date(clock.now().getTime() - 1) }).where('id', '=', expired).execute();
    expect(await worker.runDue(1)).toBe(1);
    expect(ran).toEqual([due]);
    expect(await worker.runDue(1)).toBe(1);
    expect(ran).toEqual([due, expired]);
  });

  it('a started worker runs at most `concurrency` jobs at once and takes the rest as slots free, without waiting for the poll', async () => {
    const worker = new JobWorker(handle.db, clock, logger, { concurrency: 2 });
    let running = 0;
    let most = 0;
    worker.register('test.concurrent', async (j) => {
      most = Math.max(most, ++running);
      // Of different lengths, so that slots free one at a time while another job still runs.
      await new Promise((resolve) => setTimeout(resolve, 30 * (1 + (j.payload as { n: number }).n)));
      running--;
    });
    await worker.start(600_000);
    try {
      // One statement, one wake-up: every claim after the first must come from a freed slot.
      await enqueueJobs(handle.db, clock, Array.from({ length: 6 }, (_, n) => ({ kind: 'test.concurrent', payload: { n } })));
      await allDone('test.concurrent', 6);
      expect(most).toBe(2);
    } finally {
      await worker.stop();
    }
  });

  it('a started worker runs a job enqueued due now at once, woken by its commit rather than the poll', async () => {
    const worker = new JobWorker(handle.db, clock, logger);
    let ran = 0;
    worker.register('test.woken', async () => void ran++);
    await worker.start(600_000);
    try {
      // Past the start's first claim: only a wake-up can find the job now.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await enqueueJob(handle.db, clock, { kind: 'test.woken', payload: null });
      await vi.waitFor(() => expect(ran).toBe(1), { timeout: 10_000, interval: 20 });
    } finally {
      await worker.stop();
    }
  });
});
