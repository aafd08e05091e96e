/**
 * Runs untrusted-content parses off the main thread, each bounded in time and memory: a small
 * pool of `worker_threads` Workers started with `resourceLimits`, one task per worker at a time.
 * A task that overruns its time is ended by terminating its worker; a worker that exhausts its
 * heap dies on its own. Either way the caller gets a `BoundedTaskError` saying which bound was
 * hit, the pool replaces the worker, and the event loop of the main thread never did the work.
 *
 * Heap limits bound JavaScript objects only; buffers (ArrayBuffer backing stores) are outside
 * V8's heap, so a task that decodes data must also cap what it allocates for it (see the
 * documents module's PDF check).
 *
 * The task module is loaded by URL. From the sources (tests, `npm run dev`) it is TypeScript,
 * which a worker cannot load by itself: the worker then registers tsx (a devDependency) first.
 * The compiled `dist/` loads the `.js` file directly.
 */
import { parentPort, Worker } from 'node:worker_threads';

export interface WorkerBounds {
  /** Workers running at once; further tasks wait in order. */
  size: number;
  /** Wall-clock time one task may run, from when a worker takes it. */
  timeoutMs: number;
  /** V8 old-generation heap of one worker (`resourceLimits.maxOldGenerationSizeMb`). */
  maxOldGenerationSizeMb: number;
  /** V8 young-generation heap of one worker. */
  maxYoungGenerationSizeMb: number;
}

export type BoundBreached = 'timeout' | 'memory' | 'crashed';

/** A task ended by a bound (or a worker that died), not by its own answer. */
export class BoundedTaskError extends Error {
  constructor(
    readonly bound: BoundBreached,
    message: string,
  ) {
    super(message);
  }
}

interface TaskMessage<I> {
  id: number;
  input: I;
}
type AnswerMessage<O> = { id: number; ok: true; output: O } | { id: number; ok: false; message: string };
/** Sent once by a worker when its task module has loaded: time limits start from here, not from boot. */
const READY = 'ready';

interface Pending<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: Error) => void;
}

interface Slot<I, O> {
  worker: Worker;
  ready: boolean;
  task?: Pending<I, O> & { id: number; timer: NodeJS.Timeout };
}

function startWorker(taskModule: URL, bounds: WorkerBounds): Worker {
  const resourceLimits = {
    maxOldGenerationSizeMb: bounds.maxOldGenerationSizeMb,
    maxYoungGenerationSizeMb: bounds.maxYoungGenerationSizeMb,
    stackSizeMb: 4,
  };
  const worker = taskModule.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(taskModule.href)}); });`,
        { eval: true, resourceLimits },
      )
    : new Worker(taskModule, { resourceLimits });
  // An idle worker must not keep the process alive.
  worker.unref();
  return worker;
}

export class BoundedWorkerPool<I, O> {
  private readonly slots = new Set<Slot<I, O>>();
  private readonly waiting: Pending<I, O>[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly taskModule: URL,
    readonly bounds: WorkerBounds,
  ) {
    if (!Number.isInteger(bounds.size) || bounds.size < 1) throw new RangeError('pool size must be a positive integer');
  }

  /** Runs one task on a worker; rejects with `BoundedTaskError` when a bound ends it. */
  run(input: I): Promise<O> {
    if (this.closed) return Promise.reject(new Error('the worker pool is closed'));
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      this.dispatch();
    });
  }

  /** Ends every worker; tasks still running or waiting are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.waiting.splice(0)) pending.reject(new Error('the worker pool is closed'));
    await Promise.all([...this.slots].map((slot) => this.retire(slot, new Error('the worker pool is closed'))));
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      const slot = [...this.slots].find((s) => s.ready && s.task === undefined);
      if (!slot) {
        // Start a worker for the waiting tasks, unless enough are running or starting already.
        const starting = [...this.slots].filter((s) => !s.ready).length;
        if (this.slots.size < this.bounds.size && starting < this.waiting.length) this.open();
        return;
      }
      const pending = this.waiting.shift()!;
      const id = this.nextId++;
      const timer = setTimeout(() => {
        void this.retire(slot, new BoundedTaskError('timeout', `the parse did not finish within ${this.bounds.timeoutMs} ms`));
      }, this.bounds.timeoutMs);
      slot.task = { ...pending, id, timer };
      slot.worker.postMessage({ id, input: pending.input } satisfies TaskMessage<I>);
    }
  }

  private open(): Slot<I, O> {
    const worker = startWorker(this.taskModule, this.bounds);
    const slot: Slot<I, O> = { worker, ready: false };
    worker.on('message', (answer: AnswerMessage<O> | typeof READY) => {
      if (answer === READY) {
        slot.ready = true;
        this.dispatch();
        return;
      }
      const task = slot.task;
      if (!task || task.id !== answer.id) return;
      clearTimeout(task.timer);
      slot.task = undefined;
      if (answer.ok) task.resolve(answer.output);
      else task.reject(new Error(answer.message));
      this.dispatch();
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const bound = error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'crashed';
      void this.retire(slot, new BoundedTaskError(bound, bound === 'memory' ? 'the parse ran out of its memory' : `the parse failed: ${error.message}`));
    });
    worker.on('exit', () => {
      void this.retire(slot, new BoundedTaskError('crashed', 'the parsing worker stopped'));
    });
    this.slots.add(slot);
    return slot;
  }

  /** Removes a worker from the pool (terminating it), failing its task with `error`. */
  private async retire(slot: Slot<I, O>, error: Error): Promise<void> {
    if (!this.slots.delete(slot)) return;
    const task = slot.task;
    slot.task = undefined;
    if (task) {
      clearTimeout(task.timer);
      task.reject(error);
    } else if (!slot.ready) {
      // A worker that dies while starting would die again: fail the task it was started for
      // rather than start workers forever.
      this.waiting.shift()?.reject(error);
    }
    await slot.worker.terminate();
    if (!this.closed) this.dispatch();
  }
}

/**
 * Called once by a task module: answers each task the pool sends with `handler`'s result. A
 * handler that throws answers an error (its message only); bounds are enforced from outside.
 */
export function serveTasks<I, O>(handler: (input: I) => Promise<O>): void {
  const port = parentPort;
  if (!port) throw new Error('serveTasks runs only inside a worker started by BoundedWorkerPool');
  port.on('message', async ({ id, input }: TaskMessage<I>) => {
    let answer: AnswerMessage<O>;
    try {
      answer = { id, ok: true, output: await handler(input) };
    } catch (error) {
      answer = { id, ok: false, message: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(answer);
  });
  port.postMessage(READY);
}
