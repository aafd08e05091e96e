import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { applyEffect, commandArb, LedgerRun, zeroBalances, type Command } from '../helpers/ledger-model.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('ledger properties (fast-check)', () => {
  it('any sequence of funding, transfers, holds, posts, voids, reversals and replays keeps every invariant after every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commandArb, { minLength: 1, maxLength: onPostgres ? 25 : 12, size: 'max' }), async (commands) => {
        const run = await LedgerRun.open(ctx.handle.db, ctx.ledger, ctx.platform.uuid);
        let expected = zeroBalances();
        for (const command of commands) {
          const outcome = await run.apply(command, expected);
          expected = applyEffect(expected, outcome.effect);
          expect(await run.balances(), JSON.stringify(command)).toEqual(expected);
          expect(expected.available.every((v) => v >= 0n)).toBe(true);
          await expectLedgerConsistent(ctx.handle.db, { batchSize: 7 });
        }
      }),
      { numRuns: onPostgres ? 25 : 8 },
    );
  }, 600_000);

  it.runIf(onPostgres)('concurrent batches on PostgreSQL: every outcome is one a serial order allows, and the invariants hold after each batch', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(commandArb, { minLength: 2, maxLength: 12, size: 'max' }), { minLength: 1, maxLength: 4 }), async (batches) => {
        const run = await LedgerRun.open(ctx.handle.db, ctx.ledger, ctx.platform.uuid);
        let expected = zeroBalances();
        for (const batch of batches) {
          // Replays of calls made in this same batch would race their originals; keep them to later batches.
          const concurrent = batch.filter((c: Command) => c.op !== 'replay');
          const outcomes = await Promise.all(concurrent.map((c) => run.apply(c)));
          // In whatever order they ran, an account's available balance never went below what it had
          // minus everything the batch's successful commands took from it: a debit refused for want
          // of funds must have asked for more than that, or the refusal was not needed.
          const lowest = expected.available.map((start, i) =>
            outcomes.reduce((low, o) => {
              const change = o.effect?.available.get(i) ?? 0n;
              return change < 0n ? low + change : low;
            }, start),
          );
          concurrent.forEach((c, k) => {
            if (outcomes[k]!.refusal !== 'INSUFFICIENT_FUNDS' || (c.op !== 'transfer' && c.op !== 'hold')) return;
            const asked = BigInt(c.amount + (c.op === 'transfer' ? c.fee : 0));
            expect(lowest[c.from]! < asked, `${JSON.stringify(c)} refused with at least ${lowest[c.from]} available`).toBe(true);
          });
          for (const outcome of outcomes) expected = applyEffect(expected, outcome.effect);
          // Whatever order the database chose, the successful commands' effects add up to the balances.
          const actual = await run.balances();
          expect(actual).toEqual(expected);
          expect(actual.available.every((v) => v >= 0n)).toBe(true);
          await expectLedgerConsistent(ctx.handle.db);
          for (const c of batch.filter((c: Command) => c.op === 'replay')) await run.apply(c);
        }
      }),
      { numRuns: 15 },
    );
  }, 600_000);

  it('rejects a refusal it does not expect (the model is not vacuous)', async () => {
    const run = await LedgerRun.open(ctx.handle.db, ctx.ledger, ctx.platform.uuid);
    await expect(run.apply({ op: 'transfer', from: 0, to: 1, amount: 1, fee: 0 }, zeroBalances())).resolves.toEqual({ refusal: 'INSUFFICIENT_FUNDS' });
    await expect(run.apply({ op: 'transfer', from: 0, to: 1, amount: 1, fee: 0 }, { available: [5n, 0n, 0n, 0n], total: [5n, 0n, 0n, 0n] })).rejects.toThrow();
  });
});
