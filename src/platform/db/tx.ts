import { sql } from 'kysely';
import type { Db, DbOrTx, Tx } from './database.js';

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

/**
 * Runs `work` inside a savepoint of the caller's transaction, so a failure undoes only what
 * `work` wrote and the transaction can go on (e.g. to record that the work failed).
 */
export async function inSavepoint<T>(trx: DbOrTx, name: string, work: () => Promise<T>): Promise<T> {
  await sql.raw(`savepoint ${name}`).execute(trx);
  try {
    const result = await work();
    await sql.raw(`release savepoint ${name}`).execute(trx);
    return result;
  } catch (error) {
    await sql.raw(`rollback to savepoint ${name}`).execute(trx);
    throw error;
  }
}

class DryRunRollback extends Error {}

/** Runs `work` and undoes its writes: the caller learns whether it would succeed, and its answer. */
export async function dryRun<T>(trx: DbOrTx, work: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  try {
    await inSavepoint(trx, 'dry_run', async () => {
      result = await work();
      throw new DryRunRollback();
    });
  } catch (error) {
    if (!(error instanceof DryRunRollback)) throw error;
  }
  return result as T;
}
