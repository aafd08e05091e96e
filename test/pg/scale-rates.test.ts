import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInRates, ExchangeRates, type RateProvider } from '../../src/modules/rates/index.js';
import { ManualClock } from '../../src/platform/clock.js';
import { withTx } from '../../src/platform/db/tx.js';
import { onPostgres, openTestDatabase } from '../helpers/context.js';

/**
 * DESIGN §8: every process prices with the one table stored for a rate window. Each process keeps
 * the window it read in memory; one whose first read of a window went through a transaction that
 * rolled back (the signed quote execution reads rates through its settling transaction) kept the
 * table its own provider call answered, which was never stored, while the other processes priced
 * with the table stored after it: two prices for one window.
 */
describe.runIf(onPostgres)('exchange-rate windows shared by two processes', () => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>;
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(() => database.drop());

  it('a process whose first read of a window rolled back prices with the table another process stored', async () => {
    const answers = ['0.9', '0.8'];
    // The provider answers each call afresh, as a live market does.
    const provider: RateProvider = { name: 'http', fetch: async () => ({ asOf: new Date('2026-01-01T00:00:00Z'), perUsd: { USD: '1', EUR: answers.shift()! } }) };
    const clock = new ManualClock('2026-01-01T00:01:00Z');
    const process = () => new ExchangeRates({ db: database.handle.db, clock, sandbox: builtInRates, production: provider });
    const [first, second] = [process(), process()];

    await expect(
      withTx(database.handle.db, async (trx) => {
        expect((await first.snapshot('production', trx)).perUsd.EUR).toBe('0.9');
        throw new Error('the execution was refused');
      }),
    ).rejects.toThrow('the execution was refused');

    expect((await second.snapshot('production')).perUsd.EUR).toBe('0.8');
    expect((await first.snapshot('production')).perUsd.EUR).toBe('0.8');
  });
});
