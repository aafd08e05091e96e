import type { ColumnType, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { compiledPerShape, compiledWrite, definedColumns } from '../../platform/db/compiled-once.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { deleteOldest, pastMargin } from '../../platform/retention.js';

interface QuotesTable {
  id: string;
  platform_id: string;
  customer_id: string | null;
  source: Record<string, unknown>;
  destination: Record<string, unknown>;
  source_kind: 'INTERNAL_ACCOUNT' | 'EXTERNAL_ACCOUNT' | 'REALTIME_FUNDING';
  source_account_id: string | null;
  source_account_type: string | null;
  destination_kind: 'INTERNAL_ACCOUNT' | 'EXTERNAL_ACCOUNT' | 'UMA_ADDRESS';
  /** Null for a UMA address: the receiving VASP holds the account. */
  destination_account_id: string | null;
  payment_rail: string | null;
  sending_currency: string;
  receiving_currency: string;
  locked_side: 'SENDING' | 'RECEIVING';
  locked_amount: bigint;
  sent_amount: bigint;
  service_fees: bigint;
  platform_fees: bigint;
  total_sending_amount: bigint;
  received_amount: bigint;
  exchange_rate: string;
  rate_details: Record<string, number>;
  rate_window_start: Date;
  payment_instructions: unknown[] | null;
  signed_request_id: string | null;
  lookup_id: string | null;
  description: string | null;
  remittance_information: string | null;
  purpose_of_payment: string | null;
  sender_customer_info: Record<string, unknown> | null;
  transaction_id: string;
  expires_at: Date;
  executed_at: Date | null;
  /** The platform's UTC day (YYYY-MM-DD) whose daily volume the execution was counted in; null when not counted or given back (drivers read a date as a string or a Date). */
  volume_day: ColumnType<string | Date | null, string | null, string | null>;
  created_at: Date;
}

interface DailyVolumesTable {
  platform_id: string;
  customer_id: string;
  day: string;
  currency: string;
  amount: bigint;
}

declare module '../../platform/db/database.js' {
  interface Database {
    quotes: QuotesTable;
    daily_volumes: DailyVolumesTable;
  }
}

export type QuoteRow = Selectable<QuotesTable>;

const JSON_COLUMNS = ['source', 'destination', 'rate_details', 'payment_instructions', 'sender_customer_info'] as const;

// The quote path's statements, compiled once (platform/db/compiled-once.ts).
const insertStatement = compiledPerShape();

export async function insertQuote(db: DbOrTx, row: QuoteRow): Promise<void> {
  // A new quote has counted no volume yet.
  const [columns, values] = definedColumns(withJsonColumns({ ...row, volume_day: null }, JSON_COLUMNS));
  await insertStatement(db, columns.join(), values, (v) => db.insertInto('quotes').values(Object.fromEntries(columns.map((column, i) => [column, v[i]])) as never));
}

/** The platform's quote; `forUpdate` serialises its executions (one wins, the others see it executed). */
export async function findQuote(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<QuoteRow | undefined> {
  let query = db.selectFrom('quotes').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/**
 * Takes the quote for execution in one statement: locks it (concurrent executions wait, then
 * see it taken) and sets `executed_at` unless it was already set, with `volume_day` (the day of
 * `platformNow`) when the execution will count the customer's daily volume: a customer's quote
 * not yet expired at `platformNow` (executeTaken's rule). Answers the quote as it is now and
 * whether it had been executed before; the mark rolls back with a failed execution.
 */
export async function claimQuote(
  db: DbOrTx,
  platformId: string,
  id: string,
  at: Date,
  platformNow: Date,
): Promise<{ row: QuoteRow; alreadyExecuted: boolean } | undefined> {
  const { rows } = await claimStatement(db, at, platformNow, platformNow.toISOString().slice(0, 10), platformId, id);
  const found = rows[0];
  if (!found) return undefined;
  const { prior_executed_at: prior, ...row } = found;
  return { row, alreadyExecuted: prior !== null };
}

// FOR UPDATE in the subquery: after waiting for another execution, it reads that one's committed mark.
const claimStatement = compiledWrite((db, at: Date, platformNow: Date, day: string, platformId: string, id: string) => ({
  compile: () =>
    sql<QuoteRow & { prior_executed_at: Date | null }>`
    update quotes q set executed_at = coalesce(prior.executed_at, ${at}::timestamptz),
      volume_day = case when prior.executed_at is null and q.customer_id is not null and q.expires_at > ${platformNow}::timestamptz
                        then ${day}::date else q.volume_day end
    from (select id, executed_at from quotes where platform_id = ${platformId} and id = ${id} for update) prior
    where q.id = prior.id
    returning q.*, prior.executed_at as prior_executed_at`.compile(db),
}));

/** `volumeDay`: the day whose daily volume the execution was counted in (releaseDailyVolume gives it back). */
export async function markExecuted(db: DbOrTx, platformId: string, id: string, at: Date, volumeDay: string | null = null): Promise<void> {
  await db.updateTable('quotes').set({ executed_at: at, volume_day: volumeDay }).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

/**
 * Gives a quote's counted volume back to the day it was counted in, once: the payment ended
 * before any money left the sender. One conditional statement pair in the caller's transaction.
 */
export async function releaseDailyVolume(db: DbOrTx, platformId: string, quoteId: string): Promise<void> {
  await sql`update daily_volumes d set amount = d.amount - q.total_sending_amount
    from quotes q
    where q.platform_id = ${platformId} and q.id = ${quoteId} and q.volume_day is not null
      and d.platform_id = q.platform_id and d.customer_id = q.customer_id and d.day = q.volume_day and d.currency = q.sending_currency`.execute(db);
  await db.updateTable('quotes').set({ volume_day: null }).where('platform_id', '=', platformId).where('id', '=', quoteId).execute();
}

/**
 * Adds `amount` to the customer's volume of `day` in `currency` unless that would pass `limit`:
 * one conditional upsert, so concurrent executions are counted exactly and never overshoot.
 * Answers whether it was added.
 */
export async function addDailyVolume(
  db: DbOrTx,
  key: { platformId: string; customerId: string; day: string; currency: string },
  amount: bigint,
  limit: bigint,
): Promise<boolean> {
  if (amount > limit) return false;
  const { rows } = await addVolumeStatement(db, key.platformId, key.customerId, key.day, key.currency, amount, limit);
  return rows.length > 0;
}

const addVolumeStatement = compiledWrite((db, platformId: string, customerId: string, day: string, currency: string, amount: bigint, limit: bigint) =>
  db
    .insertInto('daily_volumes')
    .values({ platform_id: platformId, customer_id: customerId, day, currency, amount })
    .onConflict((oc) =>
      oc
        .columns(['platform_id', 'customer_id', 'day', 'currency'])
        .doUpdateSet({ amount: sql`daily_volumes.amount + excluded.amount` })
        .where(sql<boolean>`daily_volumes.amount + excluded.amount <= ${limit}`),
    )
    .returning('amount'),
);

/**
 * Retention: deletes at most `limit` daily volumes of days that ended (UTC) more than
 * RETENTION_MARGIN_MS before `now`, oldest first along daily_volumes_day (migration 0047). An
 * execution counts and checks the volume of its platform's current day only, and a platform's
 * time is the shared clock plus an offset that only grows (sandbox test clocks), so no execution
 * reads or adds to an ended day again. releaseDailyVolume may still give volume back to one; on
 * a purged day it changes nothing, as on a kept one it changes what nothing reads.
 */
export function purgeEndedDailyVolumes(db: DbOrTx, now: Date, limit: number): Promise<number> {
  const firstKept = pastMargin(now).toISOString().slice(0, 10);
  return deleteOldest(db, { table: 'daily_volumes', key: sql`day`, before: sql`${firstKept}::date` }, limit);
}
