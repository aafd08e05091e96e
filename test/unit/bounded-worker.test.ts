import { afterAll, describe, expect, it } from 'vitest';
import { BoundedTaskError, BoundedWorkerPool } from '../../src/platform/bounded-worker.js';

type Task = { kind: 'echo' | 'spin' | 'fill' | 'throw'; value?: number };
const TASK_MODULE = new URL('../helpers/bounded-task.ts', import.meta.url);
const pool = new BoundedWorkerPool<Task, number>(TASK_MODULE, {
  size: 1,
  timeoutMs: 1500,
  maxOldGenerationSizeMb: 32,
  maxYoungGenerationSizeMb: 4,
});
afterAll(() => pool.close());

const breach = (promise: Promise<unknown>) => promise.then(
  () => undefined,
  (error: unknown) => (error instanceof BoundedTaskError ? error.bound : error),
);

describe('BoundedWorkerPool', () => {
  it('answers tasks off the main thread, one worker at a time, in order', async () => {
    expect(await Promise.all([1, 2, 3].map((value) => pool.run({ kind: 'echo', value })))).toEqual([2, 4, 6]);
  });

  it('ends a task that overruns its time by terminating its worker, then keeps serving', async () => {
    const started = performance.now();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    expect(await breach(pool.run({ kind: 'spin' }))).toBe('timeout');
    clearInterval(ticker);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(ticks).toBeGreaterThan(5); // the main thread's event loop ran meanwhile
    expect(await pool.run({ kind: 'echo', value: 5 })).toBe(10);
  });

  it('a task that exhausts its heap ends with the memory bound, and the pool recovers', async () => {
    // A time limit long enough that only the heap limit can end the task.
    const roomy = new BoundedWorkerPool<Task, number>(TASK_MODULE, { ...pool.bounds, timeoutMs: 60_000 });
    try {
      expect(await breach(roomy.run({ kind: 'fill' }))).toBe('memory');
      expect(await roomy.run({ kind: 'echo', value: 7 })).toBe(14);
    } finally {
      await roomy.close();
    }
  });

  it("a handler's own error comes back as an error, not a bound", async () => {
    await expect(pool.run({ kind: 'throw' })).rejects.toThrow('bad input');
    expect(await pool.run({ kind: 'echo', value: 1 })).toBe(2);
  });
});
