import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { countMatches } from '../../platform/db/row-counts.js';
import { withJsonColumns } from '../../platform/db/json.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { ReviewStatus } from '../customers/index.js';
import type { PersonalInfo } from './schemas.js';

interface BeneficialOwnersTable {
  id: string;
  platform_id: string;
  customer_id: string;
  roles: string[];
  ownership_percentage: number;
  personal_info: PersonalInfo;
  /** Legacy plaintext, sealed by the identifiers.seal-plaintext job; always null for new rows. */
  identifier: string | null;
  identifier_sealed: string | null;
  identifier_key_version: number | null;
  kyc_status: ReviewStatus;
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    beneficial_owners: BeneficialOwnersTable;
  }
}

export type OwnerRow = Selectable<BeneficialOwnersTable>;

export async function insertOwner(db: DbOrTx, row: OwnerRow): Promise<void> {
  await db.insertInto('beneficial_owners').values(withJsonColumns(row, ['personal_info'])).execute();
}

export async function findOwner(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('beneficial_owners').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function updateOwner(db: DbOrTx, platformId: string, id: string, changes: Partial<OwnerRow>): Promise<OwnerRow> {
  return db
    .updateTable('beneficial_owners')
    .set(withJsonColumns(changes, ['personal_info']))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function ownersOf(db: DbOrTx, platformId: string, customerId: string): Promise<OwnerRow[]> {
  return db
    .selectFrom('beneficial_owners')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .orderBy('id', 'asc')
    .execute();
}

/** The owners of several customers at once (one page of a customer list), oldest first per customer. */
export async function ownersOfMany(db: DbOrTx, platformId: string, customerIds: string[]): Promise<OwnerRow[]> {
  if (customerIds.length === 0) return [];
  return db
    .selectFrom('beneficial_owners')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', 'in', customerIds)
    .orderBy('customer_id', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function listOwners(db: DbOrTx, platformId: string, customerId: string, page: PageRequest) {
  const base = db.selectFrom('beneficial_owners').where('platform_id', '=', platformId).where('customer_id', '=', customerId);
  let query = base.selectAll().orderBy('id', 'desc').limit(page.limit + 1);
  if (page.after) query = query.where('id', '<', page.after);
  const [rows, totalCount] = await Promise.all([query.execute(), countMatches(base)]);
  return { rows, totalCount };
}

export async function setOwnerStatuses(db: DbOrTx, platformId: string, ids: string[], status: ReviewStatus, at: Date): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('beneficial_owners')
    .set({ kyc_status: status, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', 'in', ids)
    .execute();
}

/** Owners whose identifier is not sealed under their platform's current key (legacy plaintext or an older version), after `after` (customersToReseal). */
export async function ownersToReseal(db: DbOrTx, platformId: string | undefined, limit: number, after: string | undefined) {
  let query = db
    .selectFrom('beneficial_owners')
    .innerJoin('platforms', 'platforms.id', 'beneficial_owners.platform_id')
    .select(['beneficial_owners.id', 'beneficial_owners.platform_id', 'beneficial_owners.identifier', 'beneficial_owners.identifier_sealed', 'beneficial_owners.identifier_key_version'])
    .select('platforms.identifier_key_version as current_version')
    .where((eb) =>
      eb.or([
        eb('beneficial_owners.identifier', 'is not', null),
        eb.and([eb('beneficial_owners.identifier_sealed', 'is not', null), eb('beneficial_owners.identifier_key_version', '<', eb.ref('platforms.identifier_key_version'))]),
      ]),
    )
    .orderBy('beneficial_owners.id')
    .limit(limit)
    .forUpdate();
  if (platformId) query = query.where('beneficial_owners.platform_id', '=', platformId);
  if (after) query = query.where('beneficial_owners.id', '>', after);
  return query.execute();
}
