import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';

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
