import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { commandArb, CUSTOMERS, MoneyWorld, type Command } from '../helpers/money-model-http.js';

/**
 * Model-based property test of the money paths over HTTP (docs/payments.md, docs/quotes.md): random
 * sequences of fundings, quotes (executed at once, later, twice or too late), book transfers, the
 * deprecated transfers, REALTIME_FUNDING payments paid with the right or a wrong amount, cancels
 * (alone or racing the job worker), replays under an Idempotency-Key and the test clock, on one
 * sandbox platform per run. After every command each account's balances, every transaction's
 * status, its path through the status machine, failure reason and refund, the fee and sandbox-world
 * accounts and the ledger's invariants are what the model says; at the end every payment has ended.
 *
 * Fixed seed. To look further: MONEY_MODEL_SEED, MONEY_MODEL_RUNS (more runs also need
 * MONEY_MODEL_LIMIT_MS and MONEY_MODEL_TIMEOUT_MS), MONEY_MODEL_SHRINK=0 to report the first failing
 * sequence without shrinking it (each shrink step replays a whole run), MONEY_MODEL_COVERAGE=1 to
 * print what the runs reached. A check that fails also lists the platform's jobs that are not done
 * (attempts, next run, last error): a job the worker retries after a failure runs on real time,
 * which the manual clock never lets pass, so the model runs it again at once and prints it
 * (money-model-races.test.ts).
 */
let ctx: TestContext;
/** The app's log: the model reads the job worker's failures from it. */
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
  // Counted across the worker's files (they share modules): what this file's runs reach is its own.
  MoneyWorld.covered.clear();
});
afterAll(() => ctx.close());

const seed = Number(process.env.MONEY_MODEL_SEED ?? 20_261_129);
const numRuns = Number(process.env.MONEY_MODEL_RUNS ?? 20);
/** Shrinking replays whole runs: it stops here and reports the smallest sequence found so far. */
const limitMs = Number(process.env.MONEY_MODEL_LIMIT_MS ?? 150_000);

describe('money paths against their model', () => {
  it('never lose, duplicate or strand money, whatever the order of commands', async () => {
    let commands = 0;
    // Each account starts with some money (or none), so most payments have something to pay with.
    const start = fc.array(fc.integer({ min: 0, max: 300_000 }), { minLength: CUSTOMERS, maxLength: CUSTOMERS });
    const property = fc.asyncProperty(start, fc.array(commandArb, { minLength: 4, maxLength: 12 }), async (funding, sequence) => {
      const world = await MoneyWorld.open(ctx, logLines);
      const opening = funding.flatMap((amount, account) => (amount > 0 ? [{ op: 'fund' as const, account, amount }] : []));
      for (const command of [...opening, ...sequence]) {
        await world.apply(command);
        await world.check();
        commands++;
      }
      await world.settleAll();
    });
    // Besides the random runs, sequences that reach what random ones seldom do: a pull refunded and
    // one whose account no longer has the money; REALTIME_FUNDING paid exactly, cancelled once paid, paid wrong.
    const examples: Array<[number[], Command[]]> = [
      [
        [0, 0, 0],
        [
          { op: 'transferIn', account: 0, from: '321', amount: 20_000, collectNow: true },
          { op: 'refund', pick: 0 },
          { op: 'drain' },
          { op: 'transferIn', account: 0, from: '321', amount: 10_000, collectNow: true },
          { op: 'pay', account: 0, to: '123', amount: 9_000, trigger: null, lock: 'SENDING', mode: 'immediate' },
          { op: 'refund', pick: 1 },
          { op: 'drain' },
        ],
      ],
      [
        [50_000, 0, 0],
        [
          { op: 'realtime', to: '123', amount: 5_000 },
          { op: 'send', pick: 0, exact: true },
          { op: 'realtime', to: 'EUR', amount: 7_000 },
          { op: 'send', pick: 1, exact: true },
          { op: 'cancel', pick: 1, racingJobs: false },
          { op: 'realtime', to: '123', amount: 3_000 },
          { op: 'send', pick: 2, exact: false },
          { op: 'drain' },
        ],
      ],
    ];
    try {
      await fc.assert(property, { seed, numRuns, examples, endOnFailure: process.env.MONEY_MODEL_SHRINK === '0', interruptAfterTimeLimit: limitMs, markInterruptAsFailure: true });
    } catch (error) {
      // fast-check's message names the seed and the shrunk sequence; the model's own complaint is its cause.
      const cause = (error as Error & { cause?: Error }).cause;
      throw new Error(`${(error as Error).message}\n${cause?.message ?? ''}\n(MONEY_MODEL_SEED=${seed} reproduces it)`);
    }
    expect(commands).toBeGreaterThan(numRuns * 4);
    // The runs reached the ends that matter, whatever the seed: settled payouts, refunded failures, refused overdrafts.
    const covered = [...MoneyWorld.covered.keys()];
    if (process.env.MONEY_MODEL_COVERAGE === '1') console.log([...MoneyWorld.covered].sort().map(([what, n]) => `${what}: ${n}`).join('\n'));
    expect(covered, covered.join('\n')).toContain('payout COMPLETED');
    expect(covered.some((what) => what.startsWith('payout FAILED') && what.includes('refund TRANSACTION_FAILED')), covered.join('\n')).toBe(true);
    expect(covered, covered.join('\n')).toContain('refused INSUFFICIENT_BALANCE');
    expect(covered, covered.join('\n')).toEqual(expect.arrayContaining(['pull refund COMPLETED', 'pull refund FAILED', 'realtime COMPLETED', 'realtime FAILED FUNDING_AMOUNT_MISMATCH refund TRANSACTION_FAILED']));
  }, Number(process.env.MONEY_MODEL_TIMEOUT_MS ?? 300_000));
});
