/** A task module for BoundedWorkerPool's tests: echoes, spins forever, or fills its heap. */
import { serveTasks } from '../../src/platform/bounded-worker.js';

serveTasks<{ kind: 'echo' | 'spin' | 'fill' | 'throw'; value?: number }, number>(async ({ kind, value }) => {
  if (kind === 'spin') for (;;);
  if (kind === 'fill') {
    const held: number[][] = [];
    for (;;) held.push(Array.from({ length: 100_000 }, (_, i) => i * 1.5));
  }
  if (kind === 'throw') throw new Error('bad input');
  return (value ?? 0) * 2;
});
