import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SETTLE_JOB } from '../../src/modules/transactions/settlement.js';
import { withTx } from '../../src/platform/db/tx.js';
import { enqueueJob, JobWorker, RetryJobAt } from '../../src/platform/jobs/index.js';
import { OffsetPlatformClock } from '../../src/platform/platform-clock.js';
import { createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { call, drainJobs, fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';

/**
 * A test clock advanced while a platform's job runs: the advance moves only queued jobs, and a
 * running job writes its retry after it. A settlement job that read the platform's time before
 * the advance and wrote its retry after it waited the whole advance more in real time: an ACH
 * payment due in a day, advanced a day, settled a day late instead of at once. The interleaving
 * is forced: the platform's time, once the settlement job has read it, is advanced before the
 * job goes on.
 */
const DAY = 86_400;
let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

/** Advances `platform`'s clock by `seconds` right after the next reading of its time, before the reader goes on. */
function advanceAfterNextRead(platform: TestPlatform, seconds: number) {
  const read = OffsetPlatformClock.prototype.now;
  let advanced = false;
  const spy = vi.spyOn(OffsetPlatformClock.prototype, 'now').mockImplementation(async function (this: OffsetPlatformClock, platformId, db) {
    const now = await read.call(this, platformId, db);
    if (platformId === platform.uuid && !advanced) {
      advanced = true;
      const moved = await call(ctx, platform, 'POST', '/sandbox/clock/advance', { seconds });
      expect(moved.statusCode, moved.body).toBe(200);
    }
    return now;
  });
  return {
    get advanced() {
      return advanced;
    },
    restore: () => spy.mockRestore(),
  };
}

const settlementJob = (platform: TestPlatform) =>
  ctx.handle.db.selectFrom('jobs').select(['status', 'run_at', 'last_error']).where('platform_id', '=', platform.uuid).where('kind', '=', SETTLE_JOB).executeTakeFirstOrThrow();

describe('a test clock advanced while a settlement job runs', () => {
  it('a payment due in a day, advanced a day between the job reading the time and writing its retry, settles at once', async () => {
    const p = await ctx.newPlatform();
    const input = paymentInput(p, await fundedCustomer(ctx, p, 50_000), {
      destination: { destinationType: 'ACCOUNT', accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000002', paymentRail: 'ACH' },
    });
    await startPayment(ctx, input);
    const hook = advanceAfterNextRead(p, DAY);
    try {
      // The submit job hands the payment on and runs its settlement, which reads the time (the advance commits) and retries.
      await ctx.jobs.runDue(10);
    } finally {
      hook.restore();
    }
    expect(hook.advanced).toBe(true);
    const job = await settlementJob(p);
    expect(job.last_error).toBe('settles later');
    // Its day has passed on the platform's clock: the job is due now, not in a real day.
    expect(job.run_at.getTime()).toBeLessThanOrEqual(ctx.clock.now().getTime());
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('COMPLETED');
  });
});

describe('the retry of a job that runs while its platform’s clock is advanced', () => {
  const HOUR_MS = 3_600_000;
  let worker: JobWorker;
  let platformClock: OffsetPlatformClock;
  /** What the running job does before it reads the platform's time, and after. */
  let beforeRead: () => Promise<void>;
  let afterRead: () => Promise<void>;

  beforeAll(() => {
    worker = new JobWorker(ctx.handle.db, ctx.clock, pino({ level: 'silent' }));
    platformClock = new OffsetPlatformClock(ctx.handle.db, ctx.clock);
    // A webhook delivery's way: a retry an hour of real time from now.
    worker.register('test.real-time-retry', async () => {
      await beforeRead();
      await afterRead();
      throw new RetryJobAt(new Date(ctx.clock.now().getTime() + HOUR_MS), 'an hour later');
    });
    // A settlement's way: a retry an hour of the platform's time from the time it read.
    worker.register('test.platform-time-retry', async (job) => {
      await beforeRead();
      const now = await platformClock.now(job.platform_id!);
      await afterRead();
      throw new RetryJobAt(new Date(now.getTime() + HOUR_MS), 'an hour later', { platformTime: true });
    });
  });

  const advance = (p: TestPlatform, seconds: number) => withTx(ctx.handle.db, (trx) => platformClock.advance(trx, p.uuid, seconds)).then(() => undefined);
  const nothing = async () => {};

  /** Runs one job of `kind` of `p`, doing `during` before or after its reading of the time; answers how long after now it is due again. */
  async function retryIn(p: TestPlatform, kind: string, during: { before?: () => Promise<void>; after?: () => Promise<void> } = {}): Promise<number> {
    beforeRead = during.before ?? nothing;
    afterRead = during.after ?? nothing;
    const id = await enqueueJob(ctx.handle.db, ctx.clock, { kind, platformId: p.uuid, payload: {} });
    expect(await worker.runDue(1)).toBe(1);
    const job = await ctx.handle.db.selectFrom('jobs').select(['status', 'run_at']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(job.status).toBe('queued');
    // Out of the way of the next run.
    await ctx.handle.db.updateTable('jobs').set({ status: 'done' }).where('id', '=', id).execute();
    return job.run_at.getTime() - ctx.clock.now().getTime();
  }

  it('is unchanged when the clock is not advanced meanwhile, whatever its offset before (production: offset 0)', async () => {
    const production = await ctx.newPlatform('production');
    expect(await retryIn(production, 'test.real-time-retry')).toBe(HOUR_MS);
    expect(await retryIn(production, 'test.platform-time-retry')).toBe(HOUR_MS);
    const ahead = await ctx.newPlatform();
    await advance(ahead, 86_400);
    expect(await retryIn(ahead, 'test.real-time-retry')).toBe(HOUR_MS);
    expect(await retryIn(ahead, 'test.platform-time-retry')).toBe(HOUR_MS);
  });

  it('a real-time retry (webhooks) comes as much sooner as the clock advanced while the job ran', async () => {
    const p = await ctx.newPlatform();
    expect(await retryIn(p, 'test.real-time-retry', { before: () => advance(p, 1_200) })).toBe(HOUR_MS - 1_200_000);
    // Advanced past it: due at once.
    expect(await retryIn(p, 'test.real-time-retry', { after: () => advance(p, 7_200) })).toBe(-HOUR_MS);
  });

  it('a retry in the platform’s time counts an advance once, before the job read the time or after', async () => {
    const p = await ctx.newPlatform();
    expect(await retryIn(p, 'test.platform-time-retry', { before: () => advance(p, 1_200) })).toBe(HOUR_MS);
    expect(await retryIn(p, 'test.platform-time-retry', { after: () => advance(p, 1_200) })).toBe(HOUR_MS - 1_200_000);
  });

  it.runIf(onPostgres)('an advance that commits while the retry waits for it (the job’s row lock) still moves the retry', async () => {
    const p = await ctx.newPlatform();
    let commitAdvance!: () => void;
    let advancing!: Promise<void>;
    const retry = retryIn(p, 'test.platform-time-retry', {
      after: async () => {
        // The advance holds the running job's row when the retry is written: the retry's UPDATE waits for its commit.
        const held = new Promise<void>((resolve) => (commitAdvance = resolve));
        let locked!: () => void;
        const lockedJobs = new Promise<void>((resolve) => (locked = resolve));
        advancing = withTx(ctx.handle.db, async (trx) => {
          await platformClock.advance(trx, p.uuid, 1_200);
          locked();
          await held;
        }).then(() => undefined);
        await lockedJobs;
      },
    });
    // The retry's UPDATE is waiting for a lock.
    for (let i = 0; ; i++) {
      const waiting = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like 'update "jobs"%'`.execute(ctx.handle.db);
      if (waiting.rows[0]!.n > 0) break;
      if (i > 500) throw new Error('the retry never waited for the advance');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    commitAdvance();
    await advancing;
    expect(await retry).toBe(HOUR_MS - 1_200_000);
  });
});
