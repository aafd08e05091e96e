import { sql } from 'kysely';
import type { DbHandle, DbOrTx } from './db/database.js';

/**
 * A per-process read cache kept honest across processes: a writer calls `notifyChanged` in
 * its transaction, and PostgreSQL delivers the key to every process's listener on commit,
 * which evicts it. While the listener is disconnected nothing is served from the cache, so a
 * missed notification can never serve stale data; once LISTEN is back the cache fills again.
 * A value loaded while a notification (or a loss) came in is not kept: it may have been read
 * before the change that notification announced. The TTL bounds anything else.
 */
export class NotifiedCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private listening = false;
  /** Moves on at every notification, loss and return of the listener: what a load began under. */
  private generation = 0;

  constructor(
    private readonly handle: DbHandle,
    private readonly channel: string,
    private readonly ttlMs: number,
    private readonly limit = 10_000,
  ) {}

  async start(): Promise<void> {
    await this.handle.listen(
      this.channel,
      (key) => {
        this.generation++;
        this.entries.delete(key);
      },
      () => {
        this.generation++;
        this.listening = false;
        this.entries.clear();
      },
      () => {
        this.generation++;
        this.listening = true;
      },
    );
  }

  get(key: string): V | undefined {
    if (!this.listening) return undefined;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Only through `getOrLoad`, which knows whether a notification overtook the read. */
  private keep(key: string, value: V): void {
    if (!this.listening || this.ttlMs <= 0) return;
    if (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, expiresAt: Date.now() + this.ttlMs });
  }

  /** Forgets `key` now (this process's own change), and any load of it under way. */
  evict(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  /**
   * Read-through: the cached value, or `load`'s, kept when defined and no notification or loss
   * of the listener came in while it loaded.
   */
  async getOrLoad(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const cached = this.get(key);
    if (cached !== undefined) return cached;
    const loadedIn = this.generation;
    const loaded = await load();
    if (loaded !== undefined && this.generation === loadedIn) this.keep(key, loaded);
    return loaded;
  }
}

/** Tells every process's cache on `channel` that `key` changed, when the caller's transaction commits. */
export async function notifyChanged(db: DbOrTx, channel: string, key: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${key})`.execute(db);
}
