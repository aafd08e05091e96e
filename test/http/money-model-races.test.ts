import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { MoneyWorld, type Command } from '../helpers/money-model-http.js';

/**
 * What the money model (test/http/money-model.test.ts) must allow for when its commands race the
 * job worker, each forced here in the order that once made it complain about a service that
 * was right.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
// What the model reached is counted across the worker's files (they share modules): each test here counts its own.
beforeEach(() => MoneyWorld.covered.clear());
afterAll(() => ctx.close());

async function run(world: MoneyWorld, commands: Command[], before: (command: Command) => Promise<void> = async () => {}): Promise<void> {
  for (const command of commands) {
    await before(command);
    await world.apply(command);
    await world.check();
  }
}

describe('money model under races', () => {
  it('waits for the retry of a job that failed: a payout whose refund failed once is refunded by it', async () => {
    // A job that fails for a passing reason (its transaction lost to a racing one, its connection
    // refused) runs again after a backoff of real time, which the test's manual clock never lets
    // pass: the money stays held until then. Here the refund of a payout the rail refused fails
    // once; a model that did not wait saw the sender's balance still debited.
    const db = ctx.handle.db;
    // A sequence, not a table: its value survives the rollback of the transaction that failed.
    await sql`create sequence refund_failures`.execute(db);
    await sql`create function fail_first_refund() returns trigger language plpgsql as $$
      begin
        if new.reference like '%:refund' and nextval('refund_failures') = 1 then raise exception 'injected: the refund''s transaction failed'; end if;
        return new;
      end $$`.execute(db);
    await sql`create trigger fail_first_refund before insert on ledger_transactions for each row execute function fail_first_refund()`.execute(db);
    try {
      const world = await MoneyWorld.open(ctx, logLines);
      await run(world, [
        { op: 'fund', account: 0, amount: 50_000 },
        // Refused by the rail when handed over (amount trigger 903): posted, then failed and refunded.
        { op: 'pay', account: 0, to: '123', amount: 10_000, trigger: '903', lock: 'RECEIVING', mode: 'immediate' },
        { op: 'drain' },
      ]);
      expect(MoneyWorld.covered.get('job retried after a failure')).toBe(1);
      expect((await sql<{ n: string }>`select last_value::text as n from refund_failures`.execute(db)).rows[0]!.n).toBe('2');
      await world.settleAll();
    } finally {
      await sql`drop trigger fail_first_refund on ledger_transactions`.execute(db);
    }
  });

  it('a pull’s refund that ran before the cancel it raced found the cancelled hold still in place', async () => {
    // The account has the refund's money only once the cancel has released the payout's hold:
    // the refund job, run first, finds too little and fails, which the model must accept.
    const world = await MoneyWorld.open(ctx, logLines);
    const runDue = ctx.jobs.runDue.bind(ctx.jobs);
    const call = world.call.bind(world);
    let refundRan: Promise<number> | undefined;
    // The racing cancel is sent once the due jobs (the refund's alone) have run; the model's racing drain waits for them too.
    world.call = ((method, path, ...rest) => {
      if (!path.endsWith('/cancel')) return call(method, path, ...rest);
      refundRan = runDue(50);
      return refundRan.then(() => call(method, path, ...rest));
    }) as typeof world.call;
    ctx.jobs.runDue = async (limit) => {
      await refundRan;
      return runDue(limit);
    };
    try {
      await run(
        world,
        [
          { op: 'fund', account: 0, amount: 30_000 },
          { op: 'transferIn', account: 0, from: '321', amount: 20_000, collectNow: true },
          { op: 'pay', account: 0, to: '123', amount: 45_000, trigger: null, lock: 'SENDING', mode: 'execute' },
          { op: 'refund', pick: 1 },
          { op: 'cancel', pick: 1, racingJobs: true },
        ],
        async (command) => {
          // The payout's hand-over is not due yet, so the cancel wins and the refund job runs alone before it.
          if (command.op === 'cancel') await ctx.handle.db.updateTable('jobs').set({ run_at: new Date(ctx.clock.now().getTime() + 3_600_000) }).where('kind', '=', 'payments.submit').where('status', '=', 'queued').execute();
        },
      );
    } finally {
      ctx.jobs.runDue = runDue;
    }
    expect(MoneyWorld.covered.get('pull refund FAILED')).toBe(1);
    expect(MoneyWorld.covered.get('cancelled payout racing the jobs')).toBe(1);
    await world.settleAll();
  });
});
