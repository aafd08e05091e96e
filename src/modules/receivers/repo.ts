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

/**
 * Retention: deletes at most `limit` lookups expired more than RETENTION_MARGIN_MS before `now`,
 * oldest first along receiver_lookups_expiry (migration 0046). No code reads a stored lookup yet,
 * no table refers to one, and the quote that comes to take its lookupId refuses an expired
 * lookup as an unknown one (this module's README).
 */
export function purgeExpiredReceiverLookups(db: DbOrTx, now: Date, limit: number): Promise<number> {
  return deleteOldest(db, { table: 'receiver_lookups', key: sql`expires_at`, before: pastMargin(now) }, limit);
}
