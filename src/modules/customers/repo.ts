import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { platformRowCount } from '../../platform/db/row-counts.js';
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
  identifier: string | null;
  terms_version: string | null;
  terms_accepted_at: Date | null;
  terms_ip_address: string | null;
  terms_acceptance_method: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

interface CustomerSettingsTable {
  platform_id: string;
  sandbox_auto_approve: boolean;
  updated_at: Date;
}

export type ImportStatus = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED';

export interface ImportError {
  row: number;
  correlationId: string;
  code: string;
  message: string;
  details?: Record<string, unknown>;
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
  errors: ImportError[];
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

declare module '../../platform/db/database.js' {
  interface Database {
    customers: CustomersTable;
    customer_settings: CustomerSettingsTable;
    customer_import_jobs: CustomerImportJobsTable;
  }
}

export type ImportRow = Selectable<CustomerImportJobsTable>;

export type CustomerRow = Selectable<CustomersTable>;

/** Names of the partial unique indexes, so a violation can be told apart. */
export const UNIQUE_PLATFORM_CUSTOMER_ID = 'customers_platform_customer_id_live';
export const UNIQUE_UMA_ADDRESS = 'customers_uma_address_live';

export async function insertCustomer(db: DbOrTx, row: CustomerRow): Promise<void> {
  await db.insertInto('customers').values(withJsonColumns(row, ['profile'])).execute();
}

export async function findCustomer(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('customers').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
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
  let query = db.selectFrom('customers').where('platform_id', '=', platformId);
  if (!f.includeDeleted) query = query.where('deleted_at', 'is', null);
  if (f.platformCustomerId !== undefined) query = query.where('platform_customer_id', '=', f.platformCustomerId);
  if (f.customerType) query = query.where('customer_type', '=', f.customerType);
  for (const condition of timeRangeConditions(f.timeRange)) query = query.where(condition);
  if (f.region) query = query.where('region', '=', f.region);
  if (f.currency) query = query.where(sql<boolean>`${f.currency} = any(currencies)`);
  if (f.umaAddress) query = query.where(sql<string>`lower(uma_address)`, '=', f.umaAddress.toLowerCase());
  return query;
}

const ABOVE_EVERY_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

export async function listCustomers(db: DbOrTx, platformId: string, filters: CustomerFilters, page: PageRequest) {
  let query = filtered(db, platformId, filters).selectAll().orderBy('id', 'desc').limit(page.limit + 1);
  // The first page too is "below a cursor", one above every id: it states the id bound that lets
  // a page of live customers use its own index (migration 0009).
  query = query.where('id', '<', page.after ?? ABOVE_EVERY_ID);
  const [rows, totalCount] = await Promise.all([query.execute(), countCustomers(db, platformId, filters)]);
  return { rows, totalCount };
}

/**
 * `totalCount` only where it costs the same whatever the number of customers (README): the
 * kept count when nothing but deletion narrows the list, a count over the index when the list is
 * narrowed to one platformCustomerId or UMA address, and none for other filters.
 */
async function countCustomers(db: DbOrTx, platformId: string, f: CustomerFilters): Promise<number | undefined> {
  if (f.platformCustomerId !== undefined || f.umaAddress) {
    const { n } = await filtered(db, platformId, f).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    return Number(n);
  }
  const range = f.timeRange;
  if (f.customerType || f.region || f.currency || range.createdAfter || range.createdBefore || range.updatedAfter || range.updatedBefore) return undefined;
  return platformRowCount(db, 'customers', platformId, f.includeDeleted ? 'total' : 'live');
}

export async function findSettings(db: DbOrTx, platformId: string) {
  return db.selectFrom('customer_settings').selectAll().where('platform_id', '=', platformId).executeTakeFirst();
}

export async function upsertSettings(db: DbOrTx, platformId: string, sandboxAutoApprove: boolean, at: Date): Promise<void> {
  await db
    .insertInto('customer_settings')
    .values({ platform_id: platformId, sandbox_auto_approve: sandboxAutoApprove, updated_at: at })
    .onConflict((oc) => oc.column('platform_id').doUpdateSet({ sandbox_auto_approve: sandboxAutoApprove, updated_at: at }))
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

/**
 * Counts one processed row, only if no one counted it yet (`processed` is still `index`), so a
 * row is counted exactly once even when two workers hold the job. False: someone else did.
 */
export async function countImportRow(db: DbOrTx, id: string, index: number, outcome: { ok: true } | { ok: false; error: ImportError }, at: Date) {
  const result = await db
    .updateTable('customer_import_jobs')
    .set((eb) => ({
      processed: eb('processed', '+', 1),
      successful: outcome.ok ? eb('successful', '+', 1) : eb.ref('successful'),
      failed: outcome.ok ? eb.ref('failed') : eb('failed', '+', 1),
      errors: outcome.ok ? eb.ref('errors') : sql<ImportError[]>`errors || ${JSON.stringify([outcome.error])}::jsonb`,
      status: 'PROCESSING' as const,
      updated_at: at,
    }))
    .where('id', '=', id)
    .where('processed', '=', index)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function finishImport(db: DbOrTx, id: string, at: Date): Promise<ImportRow | undefined> {
  return db
    .updateTable('customer_import_jobs')
    .set({ status: 'COMPLETED', csv: null, completed_at: at, updated_at: at })
    .where('id', '=', id)
    .where('status', '!=', 'COMPLETED')
    .whereRef('processed', '=', 'total')
    .returningAll()
    .executeTakeFirst();
}
