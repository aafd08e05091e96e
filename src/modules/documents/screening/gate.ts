/**
 * The admission gate in front of the built-in screener: at most `concurrency` screenings run at
 * once, the rest wait their turn in a bounded queue (platforms take turns), and an upload that
 * finds no room or waits too long is refused with 503 SERVICE_UNAVAILABLE (`screeningBusy`).
 * The numbers are in thresholds.ts.
 */
import { AppError } from '../../../platform/errors.js';
import type { ScreeningThresholds } from './thresholds.js';

/** Why the gate turned a task away without running it. */
export class GateRefusal extends Error {
  constructor(readonly reason: 'queueFull' | 'waitedTooLong') {
    super(reason === 'queueFull' ? 'the queue is full' : 'the wait ran out');
    this.name = 'GateRefusal';
  }
}

/** How many tasks may wait for a slot, and for how long; unbounded when left out. */
export interface QueueBounds {
  /** Tasks waiting at once, in all. */
  maxWaiting: number;
  /** Tasks waiting at once with the same key (one platform's share of the queue). */
  maxWaitingPerKey: number;
  /** Longest a task waits for a slot. */
  maxWaitMs: number;
}

interface Waiter {
  admit(): void;
}

/**
 * A counting semaphore: at most `limit` tasks run at once, the rest wait. Waiting tasks are
 * grouped by key (the platform) and admitted in turn, one key after another and in arrival
 * order within a key, so one caller's backlog never stands in front of another's next upload.
 * With `bounds`, a task that finds the queue (or its key's share of it) full, or that waits too
 * long, is refused with a GateRefusal and never runs.
 */
export class Semaphore {
  private active = 0;
  /** Waiting tasks by key; the Map's order is the turn order (a key served goes to the back). */
  private readonly waiting = new Map<string, Waiter[]>();
  private waitingCount = 0;
  /** The most tasks ever running at once (for tests and metrics). */
  peak = 0;

  constructor(
    readonly limit: number,
    readonly bounds: QueueBounds = { maxWaiting: Infinity, maxWaitingPerKey: Infinity, maxWaitMs: Infinity },
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('semaphore limit must be a positive integer');
  }

  get running(): number {
    return this.active;
  }

  get queued(): number {
    return this.waitingCount;
  }

  async run<T>(task: () => Promise<T>, key = ''): Promise<T> {
    if (this.active < this.limit) this.active++;
    else await this.wait(key); // the releaser hands its slot over
    this.peak = Math.max(this.peak, this.active);
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private wait(key: string): Promise<void> {
    const line = this.waiting.get(key) ?? [];
    if (this.waitingCount >= this.bounds.maxWaiting || line.length >= this.bounds.maxWaitingPerKey) {
      return Promise.reject(new GateRefusal('queueFull'));
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = Number.isFinite(this.bounds.maxWaitMs)
        ? setTimeout(() => {
            this.leave(key, waiter);
            reject(new GateRefusal('waitedTooLong'));
          }, this.bounds.maxWaitMs)
        : undefined;
      line.push(waiter);
      if (line.length === 1) this.waiting.set(key, line);
      this.waitingCount++;
    });
  }

  private leave(key: string, waiter: Waiter): void {
    const line = this.waiting.get(key);
    const at = line?.indexOf(waiter) ?? -1;
    if (!line || at < 0) return;
    line.splice(at, 1);
    if (line.length === 0) this.waiting.delete(key);
    this.waitingCount--;
  }

  private release(): void {
    const first = this.waiting.entries().next();
    if (first.done) {
      this.active--;
      return;
    }
    const [key, line] = first.value;
    const next = line.shift()!;
    this.waiting.delete(key);
    if (line.length > 0) this.waiting.set(key, line);
    this.waitingCount--;
    next.admit();
  }
}

/**
 * Seconds a refused caller is told to wait: about what the queue ahead of it takes to drain
 * when files screen in a second each, as ordinary documents do.
 */
function retryAfterSeconds(t: ScreeningThresholds): number {
  return Math.max(1, Math.ceil(t.maxWaiting / t.concurrency));
}

/** The refusal of an upload the screener has no room or time for: 503, retryable, nothing stored. */
export function screeningBusy(refusal: GateRefusal, t: ScreeningThresholds): AppError {
  const why =
    refusal.reason === 'queueFull'
      ? `too many uploads are waiting for screening (at most ${t.maxWaiting}, ${Math.ceil(t.maxWaiting / 2)} per platform)`
      : `the upload waited ${t.maxWaitMs / 1000} s for screening without its turn coming`;
  return new AppError('SERVICE_UNAVAILABLE', `The document could not be screened now: ${why}. Nothing was stored; try again later.`, {
    headers: { 'retry-after': String(retryAfterSeconds(t)) },
    details: { reason: refusal.reason === 'queueFull' ? 'SCREENING_QUEUE_FULL' : 'SCREENING_WAIT_EXPIRED' },
    // Backpressure the service chose, not a fault: a warning, so a flood does not read as an outage.
    log: 'warn',
  });
}
