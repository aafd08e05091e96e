import type { Db, Tx } from './database.js';

/** SQLSTATEs after which the whole transaction may simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_ATTEMPTS = 5;

function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

/**
 * Runs `work` in one transaction; on a serialization failure or deadlock the transaction is
 * rolled back and run again (with jittered backoff), so `work` must not have effects outside
 * the database before it returns.
 */
export async function withTx<T>(
  db: Db,
  work: (trx: Tx) => Promise<T>,
  options: { isolation?: 'read committed' | 'repeatable read' | 'serializable' } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      const builder = options.isolation ? db.transaction().setIsolationLevel(options.isolation) : db.transaction();
      return await builder.execute(work);
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(error)) throw error;
      const delay = Math.random() * 10 * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
