import { sql } from 'kysely';
import type { Clock, PlatformClock } from './clock.js';
import type { Db, DbOrTx } from './db/database.js';
import { notifyChanged, type NotifiedCache } from './cache.js';
import { afterCommit } from './db/tx.js';
import { invalidInput } from './errors.js';
import { wakeWorkers } from './wake-ups.js';

interface PlatformClockOffsetsTable {
  platform_id: string;
  offset_ms: string | number | bigint;
  updated_at: Date;
}

declare module './db/database.js' {
  interface Database {
    platform_clock_offsets: PlatformClockOffsetsTable;
  }
}

/** The channel on which an advanced clock evicts its platform's offset from every process's cache. */
export const PLATFORM_CLOCK_CHANNEL = 'corridor_platform_clock';

/** Longest single move of a test clock: a year. */
export const MAX_ADVANCE_SECONDS = 366 * 86_400;

/**
 * Farthest a test clock gets ahead of real time: a hundred of the longest moves. Without a bound,
 * repeated moves reach year 10000, which neither an ISO 8601 date-time nor PostgreSQL's timestamp
 * input takes, and every dated write of the platform fails.
 */
export const MAX_OFFSET_SECONDS = 100 * MAX_ADVANCE_SECONDS;

/**
 * Sandbox test clocks (issue 15 §10, like Stripe's): a platform's time is the shared clock plus
 * the offset it has advanced by (zero for every platform that never advanced, production
 * included). The offset is in the database, so every process sees the same time.
 */
export class OffsetPlatformClock implements PlatformClock {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /**
     * Offsets by platform, kept in every process and evicted on change (`PLATFORM_CLOCK_CHANNEL`):
     * every quote, execution and settlement step reads its platform's time, and offsets change
     * only when a sandbox clock is advanced. Without one, each reading is a query.
     */
    private readonly offsets?: NotifiedCache<number>,
  ) {}

  async now(platformId: string, db: DbOrTx = this.db): Promise<Date> {
    const offset = await this.offsetMs(db, platformId);
    return new Date(this.clock.now().getTime() + offset);
  }

  async offsetMs(db: DbOrTx, platformId: string): Promise<number> {
    const load = async () => {
      const row = await db.selectFrom('platform_clock_offsets').select('offset_ms').where('platform_id', '=', platformId).executeTakeFirst();
      return row ? Number(row.offset_ms) : 0;
    };
    // Read-through, so an offset read before an advance whose notification overtakes the read is not kept.
    return (this.offsets ? await this.offsets.getOrLoad(platformId, load) : await load()) ?? 0;
  }

  /**
   * Moves one platform's time forward by `seconds`, in the caller's transaction: the offset grows
   * and that platform's queued jobs come due as much sooner (their `run_at` moves back), so what
   * was due within the skipped time runs now; so do the retries its running jobs write after it
   * (migration 0056), whenever they read the time. No other platform's time or jobs change.
   */
  async advance(trx: DbOrTx, platformId: string, seconds: number): Promise<{ now: Date; offsetMs: number }> {
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_ADVANCE_SECONDS) throw new Error(`seconds must be an integer in 1..${MAX_ADVANCE_SECONDS}`);
    const ms = seconds * 1000;
    const at = this.clock.now();
    const row = await trx
      .insertInto('platform_clock_offsets')
      .values({ platform_id: platformId, offset_ms: ms, updated_at: at })
      .onConflict((oc) =>
        oc
          .column('platform_id')
          .doUpdateSet({ offset_ms: sql`platform_clock_offsets.offset_ms + ${ms}`, updated_at: at })
          .where(sql`platform_clock_offsets.offset_ms + ${ms}`, '<=', MAX_OFFSET_SECONDS * 1000),
      )
      .returning('offset_ms')
      .executeTakeFirst();
    if (!row) {
      const ahead = Math.floor((await this.offsetMs(trx, platformId)) / 1000);
      throw invalidInput([{ field: 'seconds', message: `must be at most ${MAX_OFFSET_SECONDS - ahead}: the test clock is ${ahead} seconds ahead and goes at most ${MAX_OFFSET_SECONDS} ahead` }]);
    }
    // A running job's retry, written after this commits, is moved back by what its clock_offset_ms
    // grew by (worker.ts); the row lock orders this against that write, whichever comes first.
    await sql`
      update jobs set run_at = run_at - ${ms} * interval '1 millisecond', clock_offset_ms = clock_offset_ms + ${ms}
       where platform_id = ${platformId} and status in ('queued', 'running')`.execute(trx);
    await wakeWorkers(trx, 'jobs');
    // Every process forgets the old offset when this commits; this one also at once (no wait for its own NOTIFY).
    await notifyChanged(trx, PLATFORM_CLOCK_CHANNEL, platformId);
    const offsets = this.offsets;
    if (offsets) {
      offsets.evict(platformId);
      afterCommit(trx, () => offsets.evict(platformId));
    }
    const offsetMs = Number(row.offset_ms);
    return { now: new Date(at.getTime() + offsetMs), offsetMs };
  }
}
