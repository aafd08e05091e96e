import { sql } from 'kysely';
import type { Tx } from './database.js';

/**
 * Takes the transaction-scoped advisory lock of `key` in `lockClass` (PostgreSQL's two-key form:
 * the class is its own key space, the text key hashed into the other), held until the
 * transaction ends. For serialising work on something no single row stands for (an account's
 * credential set, an invoice not yet recorded). Each caller's class is a distinct constant.
 */
export async function lockKeyForTransaction(trx: Tx, lockClass: number, key: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(${lockClass}, hashtext(${key}))`.execute(trx);
}
