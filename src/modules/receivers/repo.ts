import { sql } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { deleteOldest, pastMargin } from '../../platform/retention.js';

interface ReceiverLookupsTable {
  platform_id: string;
  id: string;
  external_account_id: string | null;
  sender_customer_id: string | null;
  response: unknown;
  created_at: Date;
  expires_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    receiver_lookups: ReceiverLookupsTable;
  }
}

export async function insertLookup(db: DbOrTx, row: ReceiverLookupsTable): Promise<void> {
  await db
    .insertInto('receiver_lookups')
    .values(withJsonColumns(row, ['response']))
    .execute();
}

/** The platform's lookup `id` (expired or not: the caller decides), or undefined. */
export async function findLookup(db: DbOrTx, platformId: string, id: string): Promise<Pick<ReceiverLookupsTable, 'external_account_id' | 'sender_customer_id' | 'expires_at'> | undefined> {
  return db
    .selectFrom('receiver_lookups')
    .select(['external_account_id', 'sender_customer_id', 'expires_at'])
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Retention: deletes at most `limit` lookups expired more than RETENTION_MARGIN_MS before `now`,
 * oldest first along receiver_lookups_expiry (migration 0046). Only a quote reads a stored lookup
 * (findReceiverLookup), and it refuses an expired one as an unknown one; a quote names its
 * lookup only as text (quotes.lookup_id, no foreign key).
 */
export function purgeExpiredReceiverLookups(db: DbOrTx, now: Date, limit: number): Promise<number> {
  return deleteOldest(db, { table: 'receiver_lookups', key: sql`expires_at`, before: pastMargin(now) }, limit);
}
