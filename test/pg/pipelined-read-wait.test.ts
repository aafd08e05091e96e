import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { NamedStatementPool } from '../../src/platform/db/named-statements.js';
import { PipelinedReads } from '../../src/platform/db/pipelined-reads.js';
import { onPostgres } from '../helpers/context.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How long a read asked now on the pipelined read connections would wait (PipelinedReads.waitMs,
 * the load shedding's view of them: platform/http/overload.ts): the age of the oldest read
 * unanswered, nothing remembered once every read is answered.
 */
describe.runIf(onPostgres)('the wait of a pipelined read', () => {
  it('grows with a stalled read, and is 0 again once every read is answered, failed ones included', async () => {
    const config = { connectionString: process.env.TEST_DATABASE_URL };
    const pool = new pg.Pool(config);
    const reads = new PipelinedReads(config, new NamedStatementPool(pool), 2);
    try {
      expect(reads.waitMs()).toBe(0);
      expect(await reads.query('select $1::int as x', [1])).toEqual([{ x: 1 }]);
      expect(reads.waitMs()).toBe(0);

      // One read stalled on a connection: reads asked meanwhile queue behind it on that connection.
      const stalled = reads.query('select pg_sleep(0.6), $1::int as x', [2]);
      await pause(300);
      expect(reads.waitMs()).toBeGreaterThanOrEqual(250);
      // Answered on the other connection: the stalled read is still the oldest unanswered.
      expect(await reads.query('select $1::int as x', [3])).toEqual([{ x: 3 }]);
      expect(reads.waitMs()).toBeGreaterThanOrEqual(250);
      await stalled;
      expect(reads.waitMs()).toBe(0);

      await expect(reads.query('select 1 / $1::int as x', [0])).rejects.toThrow(/division by zero/);
      expect(reads.waitMs()).toBe(0);

      // Nothing of the stall is kept: a burst asked now waits only as long as it does.
      const burst = Promise.all(Array.from({ length: 50 }, (_, i) => reads.query('select $1::int as x', [i])));
      expect(reads.waitMs()).toBeLessThan(100);
      expect((await burst).map((rows) => (rows as Array<{ x: number }>)[0]!.x)).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(reads.waitMs()).toBe(0);
    } finally {
      await reads.close();
      await pool.end();
    }
  });
});
