import type { Selectable, SelectQueryBuilder } from 'kysely';
import { sql } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { inPlatformIdOrder, inPlatformValueIdOrder, onePlatform, oneValue } from '../../platform/db/platform-page.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { compiledOnce } from '../../platform/db/compiled-once.js';
import { timestampText } from '../../platform/db/timestamps.js';
import { countMatches, platformRowCount, platformRowCountExpression } from '../../platform/db/row-counts.js';
import { validDateTime } from '../../platform/datetime.js';
import { lowestUuidv7At } from '../../platform/ids.js';
import { timeRangeConditions, type PageRequest, type TimeRange } from '../../platform/pagination.js';
import type { CustomerType, ReviewStatus } from './schemas.js';

interface CustomersTable {
  id: string;
  platform_id: string;
  platform_customer_id: string;
  customer_type: CustomerType;
  review_status: ReviewStatus;
  region: string | null;
  currencies: string[] | null;
  email: string | null;
  phone_number: string | null;
  uma_address: string;
  profile: Record<string, unknown>;
  /** Legacy plaintext, sealed by the identifiers.seal-plaintext job; always null for new rows. */
  identifier: string | null;
  /** The SSN/ITIN of an individual, the taxId of a business, sealed (customers/identifiers.ts). */
  identifier_sealed: string | null;
  identifier_key_version: number | null;
  email_verified_at: Date | null;
  phone_verified_at: Date | null;
  terms_version: string | null;
  terms_accepted_at: Date | null;
  terms_ip_address: string | null;
  terms_acceptance_method: string | null;
  /** Set while a verification is IN_PROGRESS or PENDING_MANUAL_REVIEW: what it reads cannot change (verifications sets it). */
  under_review_since: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

interface CustomerSettingsTable {
  platform_id: string;
  sandbox_auto_approve: boolean;
  platform_kyc: boolean;
  updated_at: Date;
}

export type ImportStatus = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED';

export interface ImportError {
  /** CSV record number (header = 1); absent on an error of the whole job. */
  row?: number;
  /** Line of the file where the record starts. */
  line?: number;
  correlationId: string;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

interface CustomerImportErrorsTable {
  platform_id: string;
  import_id: string;
  /** 0 for an error of the whole job. */
  row_number: number;
  line: number;
  correlation_id: string;
  code: string;
  message: string;
  details: Record<string, unknown> | null;
}

interface CustomerImportJobsTable {
  id: string;
  platform_id: string;
  status: ImportStatus;
  csv: string | null;
  total: number;
  processed: number;
  successful: number;
  failed: number;
  /** Superseded by customer_import_errors; always []. */
  errors: unknown[];
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

declare module '../../platform/db/database.js' {
  interface Database {
    customers: CustomersTable;
    customer_settings: CustomerSettingsTable;
    customer_import_jobs: CustomerImportJobsTable;
    customer_import_errors: CustomerImportErrorsTable;
  }
}

export type ImportRow = Selectable<CustomerImportJobsTable>;
/** A job without its file: what reports need (the file is up to 10 MB, and polled every few hundred ms). */
export type ImportStatusRow = Omit<ImportRow, 'csv'>;

export type CustomerRow = Selectable<CustomersTable>;

/**
 * The columns a customer answer is made of (reads.ts toCustomer). The read paths (GET by id and
 * the list) select these only: not the sealed identifier, its key version or the verification
 * times, which the driver would otherwise parse on every row of every read for nothing. The
 * instants the answer prints come as PostgreSQL's text of them (`timestampText`), not as Dates
 * only to be printed again.
 */
const ANSWER_COLUMNS = [
  'id',
  'platform_customer_id',
  'customer_type',
  'review_status',
  'region',
  'currencies',
  'email',
  'phone_number',
  'uma_address',
  'profile',
  'terms_version',
  'terms_ip_address',
  'terms_acceptance_method',
  'deleted_at',
] as const satisfies ReadonlyArray<keyof CustomersTable>;
const ANSWER_INSTANTS = ['terms_accepted_at', 'created_at', 'updated_at'] as const satisfies ReadonlyArray<keyof CustomersTable>;
const ANSWER_SELECTION = [...ANSWER_COLUMNS, ...ANSWER_INSTANTS.map(timestampText)];
type Instants<R, K extends keyof R> = { [P in K]: null extends R[P] ? Date | string | null : Date | string };
/** What toCustomer reads: the read paths' rows (instants as text) or a row a write returned (instants as Dates). */
export type CustomerAnswerRow = Pick<CustomerRow, (typeof ANSWER_COLUMNS)[number]> & Instants<CustomerRow, (typeof ANSWER_INSTANTS)[number]>;

/** Names of the partial unique indexes, so a violation can be told apart. */
export const UNIQUE_PLATFORM_CUSTOMER_ID = 'customers_platform_customer_id_live';
export const UNIQUE_UMA_ADDRESS = 'customers_uma_address_live';

/**
 * Inserts customers with one statement, skipping any that a live customer's platformCustomerId
 * or UMA address (the partial unique indexes) already holds, e.g. one created concurrently since
 * the caller's check: answers the ids inserted.
 */
export async function insertCustomersIfFree(db: DbOrTx, rows: readonly CustomerRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const inserted = await db
    .insertInto('customers')
    .values(rows.map((row) => withJsonColumns(row, ['profile'])))
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  return new Set(inserted.map((r) => r.id));
}

// The batch lookups below probe the partial unique index once per value (a lateral lookup of
// one row each): written as `= any($1)` the planner, without statistics, may read all of the
// platform's customers through `customers_platform_id_desc` instead.

/** Which of these platformCustomerIds live customers of the platform hold (one statement). */
export async function livePlatformCustomerIds(db: DbOrTx, platformId: string, platformCustomerIds: readonly string[]): Promise<Set<string>> {
  if (platformCustomerIds.length === 0) return new Set();
  const result = await sql<{ platform_customer_id: string }>`
    select c.platform_customer_id from unnest(${[...platformCustomerIds]}::text[]) as wanted (value)
    cross join lateral (
      select platform_customer_id from customers
      where platform_id = ${platformId} and platform_customer_id = wanted.value and platform_customer_id is not null and deleted_at is null
      limit 1
    ) as c`.execute(db);
  return new Set(result.rows.map((r) => r.platform_customer_id));
}

/** Which of these UMA addresses (lower-cased) live customers of the platform hold, compared case-insensitively. */
export async function liveUmaAddresses(db: DbOrTx, platformId: string, lowerCased: readonly string[]): Promise<Set<string>> {
  if (lowerCased.length === 0) return new Set();
  const result = await sql<{ uma: string }>`
    select c.uma from unnest(${[...lowerCased]}::text[]) as wanted (value)
    cross join lateral (
      select lower(uma_address) as uma from customers
      where platform_id = ${platformId} and lower(uma_address) = wanted.value and uma_address is not null and deleted_at is null
      limit 1
    ) as c`.execute(db);
  return new Set(result.rows.map((r) => r.uma));
}

export async function findCustomer(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean; forShare?: boolean } = {}) {
  let query = db.selectFrom('customers').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (options.forUpdate) query = query.forUpdate();
  else if (options.forShare) query = query.forShare();
  return query.executeTakeFirst();
}

/**
 * A payment the customer sent that has not ended: PENDING or PROCESSING, or its refund PENDING.
 * Its end may bring money back to the customer's account (a failed payout's refund), so a
 * customer with one may not be deleted. Money on its way in needs no such look: a pull or a book
 * transfer to the customer is held towards its account from execution on (its total balance
 * shows it, create-update.ts checks that), and an incoming payment not yet paid (an UMA invoice)
 * credits nobody once the receiver is deleted. The transactions module sits above this one (it
 * reads customers), so its table is read here rather than through its index.
 */
export async function paymentInFlightOf(db: DbOrTx, platformId: string, customerUuid: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('transactions')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerUuid)
    .where('type', '=', 'OUTGOING')
    .where((eb) => eb.or([eb('status', 'in', ['PENDING', 'PROCESSING']), eb('refund_status', '=', 'PENDING')]))
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

const customerAnswerById = compiledOnce((db, platformId: string, id: string) =>
  db.selectFrom('customers').select(ANSWER_SELECTION).where('platform_id', '=', platformId).where('id', '=', id),
);

/** One customer as GET /customers/{id} answers it (deleted ones too). */
export async function findCustomerAnswer(db: DbOrTx, platformId: string, id: string): Promise<CustomerAnswerRow | undefined> {
  return (await customerAnswerById(db, platformId, id))[0];
}

export async function updateCustomer(db: DbOrTx, platformId: string, id: string, changes: Partial<CustomerRow>): Promise<CustomerRow> {
  return db
    .updateTable('customers')
    .set(withJsonColumns(changes, ['profile']))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function liveCustomerIdByPlatformCustomerId(db: DbOrTx, platformId: string, platformCustomerId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('customers')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('platform_customer_id', '=', platformCustomerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row?.id;
}

export async function umaAddressTaken(db: DbOrTx, platformId: string, umaAddress: string, exceptId?: string): Promise<boolean> {
  let query = db
    .selectFrom('customers')
    .select('id')
    .where('platform_id', '=', platformId)
    .where(sql<string>`lower(uma_address)`, '=', umaAddress.toLowerCase())
    .where('deleted_at', 'is', null);
  if (exceptId) query = query.where('id', '!=', exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

/** The live customer of the platform with this UMA address (case-insensitive), if any. */
export async function findLiveCustomerByUmaAddress(db: DbOrTx, platformId: string, umaAddress: string) {
  return db
    .selectFrom('customers')
    .select(['id', 'uma_address', 'currencies', 'review_status'])
    .where('platform_id', '=', platformId)
    .where(sql<string>`lower(uma_address)`, '=', umaAddress.toLowerCase())
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** The live customer `id` of the platform, if any. */
export async function findLiveCustomerById(db: DbOrTx, platformId: string, id: string) {
  return db
    .selectFrom('customers')
    .select(['id', 'uma_address', 'currencies', 'review_status'])
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** Live approved customers after `after` in id order: a walk over them in batches that resumes from a checkpoint. */
export async function approvedCustomersAfter(db: DbOrTx, platformId: string, after: string | undefined, limit: number) {
  let query = db
    .selectFrom('customers')
    .select(['id', 'email'])
    .where('platform_id', '=', platformId)
    .where('review_status', '=', 'APPROVED')
    .where('deleted_at', 'is', null)
    .orderBy('id', 'asc')
    .limit(limit);
  if (after) query = query.where('id', '>', after);
  return query.execute();
}

export interface CustomerFilters {
  platformCustomerId?: string;
  customerType?: CustomerType;
  timeRange: TimeRange;
  region?: string;
  currency?: string;
  umaAddress?: string;
  includeDeleted: boolean;
}

function filtered(db: DbOrTx, platformId: string, f: CustomerFilters) {
  let query = db.selectFrom('customers').where(onePlatform(platformId));
  if (!f.includeDeleted) query = query.where('deleted_at', 'is', null);
  const leading = leadingFilter(f);
  if (f.platformCustomerId !== undefined) query = query.where(oneValue('platform_customer_id', f.platformCustomerId, { leads: leading === 'platformCustomerId' }));
  if (f.customerType) query = query.where(oneValue('customer_type', f.customerType, { leads: leading === 'customerType' }));
  for (const condition of timeRangeConditions(f.timeRange)) query = query.where(condition);
  // A bound createdAfter implies on the id, so that a page of recent customers stops its walk there
  // instead of reading every older customer to learn that no more match. A customer's id takes its
  // millisecond from the clock reading its created_at holds, or a later one (`uuidv7` never goes
  // back, and `createCustomers` passes both the same `now`). createdBefore implies no bound: an id
  // may be later than its created_at by any amount (another clock reading came first).
  if (f.timeRange.createdAfter) query = query.where('id', '>=', lowestUuidv7At(validDateTime(f.timeRange.createdAfter).getTime()));
  if (f.region) query = query.where(oneValue('region', f.region, { leads: leading === 'region' }));
  if (f.currency) query = query.where(sql<boolean>`${f.currency} = any(currencies)`);
  if (f.umaAddress) query = query.where(oneValue(LOWER_UMA_ADDRESS, f.umaAddress.toLowerCase(), { leads: leading === 'umaAddress' }));
  return query;
}

const LOWER_UMA_ADDRESS = sql<string>`lower(uma_address)`;


/**
 * The filter whose index (migration 0062) a page is read along, the one fewest customers are
 * likely to share: its rows come in page order and the other filters are checked on them only.
 * A currency (an array of them per customer) and the time ranges have no such index.
 */
function leadingFilter(f: CustomerFilters): 'platformCustomerId' | 'umaAddress' | 'region' | 'customerType' | undefined {
  if (f.platformCustomerId !== undefined) return 'platformCustomerId';
  if (f.umaAddress) return 'umaAddress';
  if (f.region) return 'region';
  if (f.customerType) return 'customerType';
  return undefined;
}

/** The expression `leadingFilter(f)` names, as the page is ordered by it. */
const LEADING_COLUMNS = {
  platformCustomerId: 'platform_customer_id',
  umaAddress: LOWER_UMA_ADDRESS,
  region: 'region',
  customerType: 'customer_type',
} as const;

/** The page's order: along the leading filter's index when there is one, else the platform's id index. */
function inPageOrder<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, f: CustomerFilters): SelectQueryBuilder<DB, TB, O> {
  const leading = leadingFilter(f);
  return leading ? inPlatformValueIdOrder(query, LEADING_COLUMNS[leading], 'desc', 'desc') : inPlatformIdOrder(query, 'desc', 'desc');
}

const ABOVE_EVERY_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

/**
 * The page with its kept count, when nothing but deletion narrows the list (countOf: `live` or
 * `total`): built and compiled once per kind, the same statement as `filtered(…)` makes. Lists
 * are mostly this shape, and building the query afresh (immutable nodes copied per clause, then
 * compiled to text) was about a tenth of a list's CPU (bench/README.md).
 */
function keptCountPage(which: 'live' | 'total') {
  return compiledOnce((db, platformId: string, after: string, limitPlusOne: number, countPlatformId: string, table: string) =>
    inPlatformIdOrder(filtered(db, platformId, { timeRange: {}, includeDeleted: which === 'total' }).select(ANSWER_SELECTION), 'desc', 'desc')
      .limit(limitPlusOne)
      .where('id', '<', after)
      .select(platformRowCountExpression(table, countPlatformId, which).as('total_count')),
  );
}
const keptCountPages = { live: keptCountPage('live'), total: keptCountPage('total') };

export async function listCustomers(
  db: DbOrTx,
  platformId: string,
  filters: CustomerFilters,
  page: PageRequest,
): Promise<{ rows: CustomerAnswerRow[]; totalCount: number | undefined }> {
  // The first page too is "below a cursor", one above every id: it states the id bound that lets
  // a page of live customers use its own index (migration 0009).
  const below = page.after ?? ABOVE_EVERY_ID;
  const count = countOf(filters);
  const pageQuery = () => inPageOrder(filtered(db, platformId, filters).select(ANSWER_SELECTION), filters).limit(page.limit + 1).where('id', '<', below);
  if (count === 'index') {
    const [rows, totalCount] = await Promise.all([pageQuery().execute(), countMatches(filtered(db, platformId, filters))]);
    return { rows, totalCount };
  }
  if (count === undefined) return { rows: await pageQuery().execute(), totalCount: undefined };
  // The kept count rides in the page's own statement (evaluated once, beside every row): one
  // round trip per list instead of two, and the count of the same snapshot as the page. An empty
  // page carries no row to ride on, so it asks for the count on its own.
  const rows = await keptCountPages[count](db, platformId, below, page.limit + 1, platformId, 'customers');
  const totalCount = rows.length > 0 ? Number(rows[0]!.total_count ?? 0) : await platformRowCount(db, 'customers', platformId, count);
  return { rows, totalCount };
}

/**
 * Where `totalCount` comes from, only where it costs the same whatever the number of customers
 * (README): the kept count (`live` or `total`) when nothing but deletion narrows the list, a count
 * over the index when the list is narrowed to one platformCustomerId or UMA address, and none
 * (undefined) for other filters.
 */
function countOf(f: CustomerFilters): 'live' | 'total' | 'index' | undefined {
  if (f.platformCustomerId !== undefined || f.umaAddress) return 'index';
  const range = f.timeRange;
  if (f.customerType || f.region || f.currency || range.createdAfter || range.createdBefore || range.updatedAfter || range.updatedBefore) return undefined;
  return f.includeDeleted ? 'total' : 'live';
}

export async function findSettings(db: DbOrTx, platformId: string) {
  return db.selectFrom('customer_settings').selectAll().where('platform_id', '=', platformId).executeTakeFirst();
}

export async function upsertSettings(db: DbOrTx, platformId: string, settings: { sandbox_auto_approve: boolean; platform_kyc: boolean }, at: Date): Promise<void> {
  await db
    .insertInto('customer_settings')
    .values({ platform_id: platformId, ...settings, updated_at: at })
    .onConflict((oc) => oc.column('platform_id').doUpdateSet({ ...settings, updated_at: at }))
    .execute();
}

export async function insertImport(db: DbOrTx, row: ImportRow): Promise<void> {
  await db
    .insertInto('customer_import_jobs')
    .values(withJsonColumns(row, ['errors']))
    .execute();
}

export async function findImport(db: DbOrTx, platformId: string, id: string) {
  return db.selectFrom('customer_import_jobs').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function findImportStatus(db: DbOrTx, platformId: string, id: string): Promise<ImportStatusRow | undefined> {
  return db
    .selectFrom('customer_import_jobs')
    .select(['id', 'platform_id', 'status', 'total', 'processed', 'successful', 'failed', 'errors', 'created_at', 'updated_at', 'completed_at'])
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Counts one batch of processed rows and stores its errors, only if no one counted it yet
 * (`processed` is still `start`), so a row is counted exactly once even when two workers hold
 * the job. False: someone else did.
 */
export async function countImportBatch(
  db: DbOrTx,
  platformId: string,
  id: string,
  start: number,
  outcome: { successful: number; errors: ImportError[] },
  at: Date,
): Promise<boolean> {
  const rows = outcome.successful + outcome.errors.length;
  const result = await db
    .updateTable('customer_import_jobs')
    .set((eb) => ({
      processed: eb('processed', '+', rows),
      successful: eb('successful', '+', outcome.successful),
      failed: eb('failed', '+', outcome.errors.length),
      status: 'PROCESSING' as const,
      updated_at: at,
    }))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('processed', '=', start)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return false;
  if (outcome.errors.length) await insertImportErrors(db, platformId, id, outcome.errors);
  return true;
}

export async function insertImportErrors(db: DbOrTx, platformId: string, importId: string, errors: ImportError[]): Promise<void> {
  await db
    .insertInto('customer_import_errors')
    .values(
      errors.map((e) => ({
        platform_id: platformId,
        import_id: importId,
        row_number: e.row ?? 0,
        line: e.line ?? 0,
        correlation_id: e.correlationId,
        code: e.code,
        message: e.message,
        details: e.details ? JSON.stringify(e.details) : null,
      })) as never,
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** A job's errors in row order (the job's own error first), `limit` from after row `afterRow`. */
export async function listImportErrors(db: DbOrTx, platformId: string, importId: string, afterRow: number, limit: number): Promise<ImportError[]> {
  const rows = await db
    .selectFrom('customer_import_errors')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('import_id', '=', importId)
    .where('row_number', '>', afterRow)
    .orderBy('row_number')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    ...(r.row_number ? { row: r.row_number, line: r.line } : {}),
    correlationId: r.correlation_id,
    code: r.code,
    message: r.message,
    ...(r.details ? { details: r.details } : {}),
  }));
}

/** Ends a job whose rows are all counted: COMPLETED when any row created a customer, else FAILED. */
export async function finishImport(db: DbOrTx, platformId: string, id: string, at: Date): Promise<ImportRow | undefined> {
  return db
    .updateTable('customer_import_jobs')
    .set((eb) => ({
      status: eb.case().when('successful', '>', 0).then('COMPLETED' as ImportStatus).else('FAILED' as ImportStatus).end(),
      csv: null,
      completed_at: at,
      updated_at: at,
    }))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('status', 'not in', ['COMPLETED', 'FAILED'])
    .whereRef('processed', '=', 'total')
    .returningAll()
    .executeTakeFirst();
}

/** Ends a job that cannot go on (its worker gave up): FAILED, whatever was counted so far stays. */
export async function abandonImport(db: DbOrTx, platformId: string, id: string, at: Date): Promise<ImportRow | undefined> {
  return db
    .updateTable('customer_import_jobs')
    .set({ status: 'FAILED', csv: null, completed_at: at, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('status', 'not in', ['COMPLETED', 'FAILED'])
    .returningAll()
    .executeTakeFirst();
}

/**
 * Customers whose tax identifier is not sealed under their platform's current key: legacy
 * plaintext (`identifier`, or a business's taxId in the profile) or an older key version. The
 * next batch starts `after` the last id of the one before: resealed rows no longer match, but a
 * batch that started from the first id again walked past every one of them, and the whole
 * reseal of n rows read some n²/batch rows.
 */
export async function customersToReseal(db: DbOrTx, platformId: string | undefined, limit: number, after: string | undefined) {
  let query = db
    .selectFrom('customers')
    .innerJoin('platforms', 'platforms.id', 'customers.platform_id')
    .select(['customers.id', 'customers.platform_id', 'customers.identifier', 'customers.identifier_sealed', 'customers.identifier_key_version', 'customers.profile'])
    .select('platforms.identifier_key_version as current_version')
    .where((eb) =>
      eb.or([
        eb('customers.identifier', 'is not', null),
        sql<boolean>`customers.profile -> 'businessInfo' ? 'taxId'`,
        eb.and([eb('customers.identifier_sealed', 'is not', null), eb('customers.identifier_key_version', '<', eb.ref('platforms.identifier_key_version'))]),
      ]),
    )
    .orderBy('customers.id')
    .limit(limit)
    .forUpdate();
  if (platformId) query = query.where('customers.platform_id', '=', platformId);
  if (after) query = query.where('customers.id', '>', after);
  return query.execute();
}

/** The live customer of `platformId` whose UMA address is `umaAddress` (case-insensitive), as UMA requests name it. */
export async function findCustomerByUmaAddress(db: DbOrTx, platformId: string, umaAddress: string) {
  return db
    .selectFrom('customers')
    .select(['id', 'platform_id', 'uma_address', 'currencies', 'customer_type', 'review_status'])
    .where('platform_id', '=', platformId)
    .where(sql<string>`lower(uma_address)`, '=', umaAddress.toLowerCase())
    .where('deleted_at', 'is', null)
    .where('uma_address', 'is not', null)
    .executeTakeFirst();
}
