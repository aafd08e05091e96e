import type { DbOrTx } from './db/database.js';

/** Every "now" in Corridor comes from a Clock, so tests can move time instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move; for tests. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }

  set(to: Date | string): void {
    this.current = new Date(to).getTime();
  }
}

/**
 * "Now" as one platform sees it. Production platforms share the system clock; a sandbox platform
 * can move its own time forward (sandbox test clocks), so every time-based rule that belongs to a
 * platform (quote expiry, settlement, approval windows) reads its time here, never from `Clock`.
 */
export interface PlatformClock {
  /**
   * `db`: read inside the caller's database transaction. Pass it whenever one is open: on the
   * embedded engine (one connection) a read outside it would wait for it to end.
   */
  now(platformId: string, db?: DbOrTx): Promise<Date>;
}

// The implementation with sandbox test clocks is OffsetPlatformClock (platform-clock.ts), wired in app.ts.
