/**
 * What waits now (requests for a connection, reads not yet answered), oldest first: how long the
 * oldest has waited is how far behind the database the process is (platform/http/overload.ts).
 * O(1) for each arrival, departure and reading: a Set keeps insertion order.
 */
export class Waiting {
  private readonly entries = new Set<{ since: number }>();

  /** Something starts waiting now; hand the entry back to `leave`. */
  arrive(): { since: number } {
    const entry = { since: performance.now() };
    this.entries.add(entry);
    return entry;
  }

  leave(entry: { since: number }): void {
    this.entries.delete(entry);
  }

  get size(): number {
    return this.entries.size;
  }

  /** How long the oldest still waiting has waited, in milliseconds; 0 when nothing waits. */
  oldestMs(): number {
    for (const entry of this.entries) return performance.now() - entry.since;
    return 0;
  }
}
