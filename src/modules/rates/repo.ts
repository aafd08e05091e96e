import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';

/** One cache window of one provider's rates: every process prices with the first row written. */
interface ExchangeRateWindowsTable {
  provider: string;
  window_start: Date;
  as_of: Date;
  rates: Record<string, string>;
  fetched_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    exchange_rate_windows: ExchangeRateWindowsTable;
  }
}

export interface RateWindowRow {
  provider: string;
  window_start: Date;
  as_of: Date;
  rates: Record<string, string>;
}

export async function findRateWindow(db: DbOrTx, provider: string, windowStart: Date): Promise<RateWindowRow | undefined> {
  return db
    .selectFrom('exchange_rate_windows')
    .select(['provider', 'window_start', 'as_of', 'rates'])
    .where('provider', '=', provider)
    .where('window_start', '=', windowStart)
    .executeTakeFirst();
}

/** Stores a window unless another process stored it first; old windows (a day) are dropped. */
export async function insertRateWindow(db: DbOrTx, row: RateWindowRow & { fetched_at: Date }): Promise<void> {
  await db
    .insertInto('exchange_rate_windows')
    .values(withJsonColumns(row, ['rates']))
    .onConflict((oc) => oc.columns(['provider', 'window_start']).doNothing())
    .execute();
  await db
    .deleteFrom('exchange_rate_windows')
    .where('provider', '=', row.provider)
    .where('window_start', '<', new Date(row.window_start.getTime() - 24 * 3600_000))
    .execute();
}
