import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { afterCommit, inSavepoint, withTx } from '../../src/platform/db/tx.js';
import { enqueueJob } from '../../src/platform/jobs/index.js';
import { recordEvent } from '../../src/platform/outbox.js';
import { createPlatform } from '../../src/modules/platforms/service.js';
import { openTestDatabase } from '../helpers/context.js';

let handle: DbHandle;
let drop: () => Promise<void>;
let platformId: string;
const clock = new ManualClock();

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
  platformId = (await withTx(handle.db, (trx) => createPlatform(trx, clock, { name: 'p', environment: 'sandbox' }))).platformUuid;
});
afterAll(() => drop());

describe('withTx', () => {
  it('runs the work again after a serialization failure or deadlock', async () => {
    let attempts = 0;
    const result = await withTx(handle.db, async () => {
      attempts++;
      if (attempts < 3) throw Object.assign(new Error('could not serialize access'), { code: attempts === 1 ? '40001' : '40P01' });
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(attempts).toBe(3);
  });

  it('does not retry other errors, and gives up after five attempts', async () => {
    let attempts = 0;
    await expect(
      withTx(handle.db, async () => {
        attempts++;
        throw Object.assign(new Error('unique violation'), { code: '23505' });
      }),
    ).rejects.toThrow('unique violation');
    expect(attempts).toBe(1);
    attempts = 0;
    await expect(
      withTx(handle.db, async () => {
        attempts++;
        throw Object.assign(new Error('always'), { code: '40001' });
      }),
    ).rejects.toThrow('always');
    expect(attempts).toBe(5);
  });
});

describe('outbox', () => {
  it('keeps an event and a job exactly when their transaction commits', async () => {
    const committed = await withTx(handle.db, async (trx) => {
      const event = await recordEvent(trx, clock, { platformId, type: 'TEST.HAPPENED', resourceId: 'Test:1', data: { a: 1 } });
      const job = await enqueueJob(trx, clock, { kind: 'test.outbox', payload: { event } });
      return { event, job };
    });
    await expect(
      withTx(handle.db, async (trx) => {
        await recordEvent(trx, clock, { platformId, type: 'TEST.ROLLED_BACK', resourceId: 'Test:2', data: {} });
        await enqueueJob(trx, clock, { kind: 'test.outbox', payload: {} });
        throw new Error('the change failed after writing its event');
      }),
    ).rejects.toThrow();
    const events = await handle.db.selectFrom('events').selectAll().where('platform_id', '=', platformId).where('type', 'like', 'TEST.%').execute();
    expect(events.map((e) => e.type)).toEqual(['TEST.HAPPENED']);
    expect(events[0]!.data).toEqual({ a: 1 });
    const jobs = await handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.outbox').execute();
    expect(jobs.map((j) => j.id)).toEqual([committed.job]);
  });
});

describe('deferred outbox writes', () => {
  it('drops the events and jobs of a savepoint that rolled back, and keeps the rest in order', async () => {
    await withTx(handle.db, async (trx) => {
      await recordEvent(trx, clock, { platformId, type: 'TEST.DEFER_KEPT_1', resourceId: 'Test:3', data: {} });
      await expect(
        inSavepoint(trx, 'undone', async () => {
          await recordEvent(trx, clock, { platformId, type: 'TEST.DEFER_UNDONE', resourceId: 'Test:4', data: {} });
          await enqueueJob(trx, clock, { kind: 'test.deferred.undone', payload: {} });
          throw new Error('the step failed after writing its event');
        }),
      ).rejects.toThrow('the step failed');
      await inSavepoint(trx, 'kept', () => recordEvent(trx, clock, { platformId, type: 'TEST.DEFER_KEPT_2', resourceId: 'Test:5', data: {} }));
      await enqueueJob(trx, clock, { kind: 'test.deferred.kept', payload: { n: 1 } });
    });
    const events = await handle.db.selectFrom('events').select(['type']).where('platform_id', '=', platformId).where('type', 'like', 'TEST.DEFER%').orderBy('id').execute();
    expect(events.map((e) => e.type)).toEqual(['TEST.DEFER_KEPT_1', 'TEST.DEFER_KEPT_2']);
    const jobs = await handle.db.selectFrom('jobs').select(['kind', 'payload']).where('kind', 'like', 'test.deferred.%').execute();
    expect(jobs).toEqual([{ kind: 'test.deferred.kept', payload: { n: 1 } }]);
  });

  it('writes a transaction’s events and jobs only as it commits, and runs after-commit hooks only on commit', async () => {
    const statements: string[] = [];
    const hooks: string[] = [];
    await withTx(handle.db, async (trx) => {
      await recordEvent(trx, clock, { platformId, type: 'TEST.ONE_STATEMENT', resourceId: 'Test:6', data: {} });
      await enqueueJob(trx, clock, { kind: 'test.one.statement', payload: {} });
      // Nothing is written yet: the rows wait for the end of the transaction.
      const seen = await trx.selectFrom('events').select('id').where('type', '=', 'TEST.ONE_STATEMENT').execute();
      statements.push(`before commit: ${seen.length}`);
      expect(afterCommit(trx, () => hooks.push('committed'))).toBe(true);
    });
    expect(statements).toEqual(['before commit: 0']);
    expect(hooks).toEqual(['committed']);
    expect(await handle.db.selectFrom('events').select('id').where('type', '=', 'TEST.ONE_STATEMENT').execute()).toHaveLength(1);
    expect(await handle.db.selectFrom('jobs').select('id').where('kind', '=', 'test.one.statement').execute()).toHaveLength(1);

    await expect(
      withTx(handle.db, async (trx) => {
        afterCommit(trx, () => hooks.push('rolled back'));
        throw new Error('nothing commits');
      }),
    ).rejects.toThrow('nothing commits');
    expect(hooks).toEqual(['committed']);
    // A savepoint that rolls back takes its hooks with it; the transaction's others still run.
    await withTx(handle.db, async (trx) => {
      await inSavepoint(trx, 'undone', async () => {
        afterCommit(trx, () => hooks.push('undone savepoint'));
        throw new Error('undone');
      }).catch(() => undefined);
      await inSavepoint(trx, 'kept', async () => afterCommit(trx, () => hooks.push('kept savepoint')));
    });
    expect(hooks).toEqual(['committed', 'kept savepoint']);
    // Outside withTx there is no transaction to wait for: nothing is deferred.
    expect(afterCommit(handle.db, () => hooks.push('never'))).toBe(false);
  });
});
