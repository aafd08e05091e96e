import { sql, type ColumnType, type RawBuilder, type Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { compiledOnce, compiledPerShape, compiledWrite, definedColumns } from '../../platform/db/compiled-once.js';
import { platformRowCount } from '../../platform/db/row-counts.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { parseId } from '../../platform/ids.js';
import { atOrAfter, atOrBefore } from '../../platform/pagination.js';
import type { TransactionStatus } from './status.js';

/** bigint columns: written as bigint, read as the driver gives them (string or number). */
type Amount = ColumnType<string | number | bigint, bigint, bigint>;
type NullableAmount = ColumnType<string | number | bigint | null, bigint | null, bigint | null>;

interface TransactionsTable {
  platform_id: string;
  id: string;
  quote_id: string | null;
  type: 'OUTGOING' | 'INCOMING';
  status: TransactionStatus;
  failure_reason: string | null;
  environment: 'sandbox' | 'production';
  /** Null together on the platform's own transfers (no sending customer). */
  customer_id: string | null;
  platform_customer_id: string | null;
  source: unknown;
  destination: unknown;
  source_account_id: string | null;
  destination_account_id: string | null;
  sending_currency: string;
  receiving_currency: string;
  sent_amount: Amount;
  total_sending_amount: Amount;
  received_amount: Amount;
  fees: Amount;
  platform_fees: Amount;
  exchange_rate: string;
  rate_details: unknown;
  description: string | null;
  remittance_information: string | null;
  purpose_of_payment: string | null;
  payment_instructions: unknown;
  payment_rail: string | null;
  reconciliation_reference: string;
  hold_id: string | null;
  funding_id: string | null;
  funded_amount: NullableAmount;
  /** REALTIME_FUNDING: the platform's time by which the money must arrive (the quote's expiresAt). */
  funding_deadline: Date | null;
  expected_settlement_at: Date | null;
  settled_at: Date | null;
  receipt_delivery_confirmed_at: Date | null;
  refund_reference: string | null;
  refund_status: 'PENDING' | 'COMPLETED' | 'FAILED' | null;
  refund_reason: 'TRANSACTION_FAILED' | 'USER_CANCELLATION' | 'TIMEOUT' | null;
  refund_initiated_at: Date | null;
  refund_settled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    transactions: TransactionsTable;
  }
}

export type TransactionRow = Selectable<TransactionsTable>;
export type NewTransactionRow = { [K in keyof TransactionsTable]: TransactionsTable[K] extends ColumnType<unknown, infer I, unknown> ? I : TransactionsTable[K] };

const JSON_COLUMNS = ['source', 'destination', 'rate_details', 'payment_instructions'] as const;

/** Columns a transaction gains only later in its life (hold, funding, settlement, receipt, refund): unset when it is recorded. */
const LATER_COLUMNS = {
  hold_id: null,
  funding_id: null,
  funded_amount: null,
  funding_deadline: null,
  expected_settlement_at: null,
  settled_at: null,
  receipt_delivery_confirmed_at: null,
  refund_reference: null,
  refund_status: null,
  refund_reason: null,
  refund_initiated_at: null,
  refund_settled_at: null,
} as const satisfies Partial<NewTransactionRow>;

/** A transaction as it is first recorded: every column, except those it only gains later, which may be named. */
export type TransactionRecord = Omit<NewTransactionRow, keyof typeof LATER_COLUMNS> & Partial<Pick<NewTransactionRow, keyof typeof LATER_COLUMNS>>;

/** The reference a platform reconciles a Corridor-made transaction by: the id's last 16 hex digits. */
export function reconciliationReferenceOf(id: string): string {
  return `CRD-${id.replace(/-/g, '').slice(-16).toUpperCase()}`;
}

// The payment path's statements, compiled once (per set of columns): platform/db/compiled-once.ts.
const insertStatement = compiledPerShape<TransactionRow>();
const updateStatement = compiledPerShape<TransactionRow>();
const byId = compiledOnce((db, platformId: string, id: string) => db.selectFrom('transactions').selectAll().where('platform_id', '=', platformId).where('id', '=', id));
const byIdForUpdate = compiledWrite((db, platformId: string, id: string) =>
  db.selectFrom('transactions').selectAll().where('platform_id', '=', platformId).where('id', '=', id).forUpdate(),
);

export async function insertTransaction(db: DbOrTx, record: TransactionRecord): Promise<TransactionRow> {
  const [columns, values] = definedColumns(withJsonColumns({ ...LATER_COLUMNS, ...record }, JSON_COLUMNS));
  const { rows } = await insertStatement(db, columns.join(), values, (v) =>
    db
      .insertInto('transactions')
      .values(Object.fromEntries(columns.map((column, i) => [column, v[i]])) as never)
      .returningAll(),
  );
  return rows[0]!;
}

export async function findTransaction(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<TransactionRow | undefined> {
  if (options.forUpdate) return (await byIdForUpdate(db, platformId, id)).rows[0];
  return (await byId(db, platformId, id))[0];
}

export async function findTransactionByQuote(db: DbOrTx, platformId: string, quoteId: string, options: { forUpdate?: boolean } = {}): Promise<TransactionRow | undefined> {
  let query = db.selectFrom('transactions').selectAll().where('platform_id', '=', platformId).where('quote_id', '=', quoteId);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function statusesByQuote(db: DbOrTx, platformId: string, quoteIds: string[]): Promise<Array<{ quote_id: string | null; status: TransactionStatus }>> {
  if (quoteIds.length === 0) return [];
  return db.selectFrom('transactions').select(['quote_id', 'status']).where('platform_id', '=', platformId).where('quote_id', 'in', quoteIds).execute();
}

export type TransactionChanges = Partial<
  Pick<
    TransactionsTable,
    | 'status'
    | 'failure_reason'
    | 'hold_id'
    | 'funding_id'
    | 'settled_at'
    | 'receipt_delivery_confirmed_at'
    | 'refund_reference'
    | 'refund_status'
    | 'refund_reason'
    | 'refund_initiated_at'
    | 'refund_settled_at'
    | 'expected_settlement_at'
  >
> & { funded_amount?: bigint | null };

/**
 * Applies changes to a transaction that is still in status `from` (a conditional update): the
 * row returned, or undefined when another writer moved it first.
 */
export async function updateTransaction(
  db: DbOrTx,
  platformId: string,
  id: string,
  from: TransactionStatus,
  changes: TransactionChanges,
  at: Date,
): Promise<TransactionRow | undefined> {
  const [columns, values] = definedColumns({ ...changes, updated_at: at });
  const { rows } = await updateStatement(db, columns.join(), [platformId, id, from, ...values], ([platformIdValue, idValue, fromValue, ...setValues]) =>
    db
      .updateTable('transactions')
      .set(Object.fromEntries(columns.map((column, i) => [column, setValues[i]])) as never)
      .where('platform_id', '=', platformIdValue as string)
      .where('id', '=', idValue as string)
      .where('status', '=', fromValue as TransactionStatus)
      .returningAll(),
  );
  return rows[0];
}

export interface ListFilters {
  customerId?: string;
  /** The platform's own transfers: no customer. */
  ownTransfers?: true;
  platformCustomerId?: string;
  accountIdentifier?: string;
  senderAccountIdentifier?: string;
  receiverAccountIdentifier?: string;
  status?: TransactionStatus;
  type?: 'INCOMING' | 'OUTGOING';
  reference?: string;
  startDate?: Date;
  endDate?: Date;
}

const TYPED_ID = /^([A-Za-z]+):/;

/**
 * Whether the `accountId` of a source or destination is the account id `value`. Ids take their
 * uuid in either case, as paths do (`parseId`), and a source or destination holds the id as the
 * request that made it spelt it: the uuids are compared in lower case, the type exactly. Either
 * way the comparison leads with `lower(accountId)`, the key of the indexes of migration 0061, and
 * the exact test follows: a value that is no typed id matches only itself, and equal strings are
 * equal in lower case, so the key's equality drops no match.
 */
function accountIdIs(side: RawBuilder<unknown>, value: string) {
  const type = TYPED_ID.exec(value)?.[1];
  const uuid = type && parseId(type, value);
  if (!type || !uuid) return sql<boolean>`(lower(${side}->>'accountId') = lower(${value}) and ${side}->>'accountId' = ${value})`;
  return sql<boolean>`(lower(${side}->>'accountId') = ${`${type.toLowerCase()}:${uuid}`} and ${side}->>'accountId' like ${`${type}:%`})`;
}

/** Whether the `umaAddress` of a source or destination is `value`, exactly. */
function umaAddressIs(side: RawBuilder<unknown>, value: string) {
  return sql<boolean>`${side}->>'umaAddress' = ${value}`;
}

/**
 * The account identifier filters (an account id, `InternalAccount:…` or `ExternalAccount:…`, or a
 * UMA address, as shown in source/destination) as alternatives: a row matches when it meets every
 * condition of one of them. Each condition has an index of its own (migration 0061), so each
 * alternative is read as a walk of one index in the page's order; one OR over the columns would
 * be one walk of the platform's rows, or bitmap scans the planner only picks when its estimates
 * say the value is rare (a generic plan for a platform whose payments nearly all come from one
 * account does not). No filter: one alternative with no condition.
 */
function accountAlternatives(f: ListFilters): Array<Array<RawBuilder<boolean>>> {
  const either = (value: string, sides: Array<'source' | 'destination'>) =>
    sides.flatMap((side) => [accountIdIs(sql.ref(side), value), umaAddressIs(sql.ref(side), value)]);
  const filters = [
    f.senderAccountIdentifier === undefined ? [] : [either(f.senderAccountIdentifier, ['source'])],
    f.receiverAccountIdentifier === undefined ? [] : [either(f.receiverAccountIdentifier, ['destination'])],
    f.accountIdentifier === undefined ? [] : [either(f.accountIdentifier, ['source', 'destination'])],
  ].flat();
  return filters.reduce<Array<Array<RawBuilder<boolean>>>>((alternatives, conditions) => alternatives.flatMap((met) => conditions.map((condition) => [...met, condition])), [[]]);
}

function filtered(db: DbOrTx, platformId: string, f: ListFilters) {
  let query = db.selectFrom('transactions').where('platform_id', '=', platformId);
  if (f.customerId !== undefined) query = query.where('customer_id', '=', f.customerId);
  if (f.ownTransfers) query = query.where('customer_id', 'is', null);
  if (f.platformCustomerId !== undefined) query = query.where('platform_customer_id', '=', f.platformCustomerId);
  if (f.status !== undefined) query = query.where('status', '=', f.status);
  if (f.type !== undefined) query = query.where('type', '=', f.type);
  if (f.reference !== undefined) query = query.where('reconciliation_reference', '=', f.reference);
  if (f.startDate !== undefined) query = query.where(atOrAfter('created_at', f.startDate));
  if (f.endDate !== undefined) query = query.where(atOrBefore('created_at', f.endDate));
  return query;
}

/**
 * One page in `created_at` order (ties by id), `limit + 1` rows; `after` is the id of the previous
 * page's last row. Not id order: a quote's transaction takes its id when the quote is made and its
 * row (and createdAt) when the quote is executed, up to the quote's lifetime later, so id order
 * would list a later payment below earlier ones, behind a reader that has passed it. The position
 * is the `after` row's own stored instant (to the microsecond), read in the same statement.
 * `anchorFound` is false when `after` names no transaction of the platform (transactions are never
 * deleted, so that cursor did not come from this list); it is looked for only when the page is empty.
 * Account identifier filters: each alternative's page, then the page of their union (a row that
 * meets two, a transfer between two accounts of the same filter, is listed once).
 */
export async function listTransactions(
  db: DbOrTx,
  platformId: string,
  filters: ListFilters,
  page: { limit: number; after?: string; order: 'asc' | 'desc' },
): Promise<{ rows: TransactionRow[]; total: number | undefined; anchorFound: boolean }> {
  const alternatives = accountAlternatives(filters).map((conditions) => {
    let query = filtered(db, platformId, filters).selectAll();
    for (const condition of conditions) query = query.where(condition);
    if (page.after) {
      const anchorAt = sql`(select a.created_at from transactions a where a.platform_id = ${platformId} and a.id = ${page.after})`;
      query = query.where(sql<boolean>`(created_at, id) ${sql.raw(page.order === 'desc' ? '<' : '>')} (${anchorAt}, ${page.after}::uuid)`);
    }
    return query.orderBy('created_at', page.order).orderBy('id', page.order).limit(page.limit + 1);
  });
  const query =
    alternatives.length === 1
      ? alternatives[0]!
      : db
          .selectFrom(alternatives.map((alternative, i) => db.selectFrom(alternative.as(`a${i}`)).selectAll()).reduce((all, next) => all.union(next)).as('matches'))
          .selectAll()
          .orderBy('created_at', page.order)
          .orderBy('id', page.order)
          .limit(page.limit + 1);
  // The total only where it costs the same whatever the number of transactions: the kept count
  // (migration 0034) of an unfiltered list. Counting what a filter matches reads every match.
  const counted = Object.values(filters).some((value) => value !== undefined) ? undefined : platformRowCount(db, 'transactions', platformId, 'total');
  const [rows, total] = await Promise.all([query.execute(), counted]);
  const anchorFound = !page.after || rows.length > 0 || (await findTransaction(db, platformId, page.after)) !== undefined;
  return { rows, total, anchorFound };
}
