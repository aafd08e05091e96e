import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { inPlatformIdOrder, inPlatformValueIdOrder, onePlatform, oneValue } from '../../platform/db/platform-page.js';
import { countMatches, platformRowCount } from '../../platform/db/row-counts.js';
import { withJsonColumns } from '../../platform/db/json.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { VerificationError, VerificationStatus } from './schemas.js';

interface VerificationsTable {
  id: string;
  platform_id: string;
  customer_id: string;
  status: VerificationStatus;
  errors: VerificationError[];
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    verifications: VerificationsTable;
  }
}

export type VerificationRow = Selectable<VerificationsTable>;

export async function insertVerification(db: DbOrTx, row: VerificationRow): Promise<void> {
  await db
    .insertInto('verifications')
    .values(withJsonColumns(row, ['errors']))
    .execute();
}

export async function findVerification(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('verifications').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** The statuses of a review that has not given its verdict: it is still reading the customer. */
export const OPEN_STATUSES: VerificationStatus[] = ['IN_PROGRESS', 'PENDING_MANUAL_REVIEW'];

/** The customer's newest verification in one of these statuses, if any. */
export async function findLatest(db: DbOrTx, platformId: string, customerId: string, statuses: VerificationStatus[]) {
  return db
    .selectFrom('verifications')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('status', 'in', statuses)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Whether a review of this customer is still reading it (IN_PROGRESS or PENDING_MANUAL_REVIEW). */
export async function hasOpenReview(db: DbOrTx, platformId: string, customerId: string): Promise<boolean> {
  return (await findLatest(db, platformId, customerId, OPEN_STATUSES)) !== undefined;
}

export async function updateVerification(
  db: DbOrTx,
  platformId: string,
  id: string,
  changes: { status: VerificationStatus; errors: VerificationError[]; updated_at: Date },
): Promise<VerificationRow> {
  return db
    .updateTable('verifications')
    .set(withJsonColumns(changes, ['errors']))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listVerifications(db: DbOrTx, platformId: string, filters: { customerId?: string; status?: VerificationStatus }, page: PageRequest) {
  let base = db.selectFrom('verifications').where(onePlatform(platformId));
  if (filters.customerId) base = base.where('customer_id', '=', filters.customerId);
  // A status alone (the review queue) is read along its own index (migration 0062), one customer's
  // verifications along theirs, whatever their status.
  const byStatus = filters.status !== undefined && !filters.customerId;
  if (filters.status) base = base.where(oneValue('status', filters.status, { leads: byStatus }));
  let query = (byStatus ? inPlatformValueIdOrder(base.selectAll(), 'status', 'desc', 'desc') : inPlatformIdOrder(base.selectAll(), 'desc', 'desc')).limit(page.limit + 1);
  if (page.after) query = query.where('id', '<', page.after);
  // The total only where it costs the same whatever the number of verifications: one customer's
  // are counted, all of the platform's come from the kept count (migration 0034); a status alone
  // would mean reading every match.
  const counted = filters.customerId
    ? countMatches(base)
    : filters.status
      ? undefined
      : platformRowCount(db, 'verifications', platformId, 'total');
  const [rows, totalCount] = await Promise.all([query.execute(), counted]);
  return { rows, totalCount };
}

interface KycLinksTable {
  id: string;
  platform_id: string;
  customer_id: string;
  environment: 'sandbox' | 'production';
  token_sha256: string;
  redirect_uri: string | null;
  expires_at: Date;
  submitted_at: Date | null;
  verification_id: string | null;
  created_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    kyc_links: KycLinksTable;
  }
}

export type KycLinkRow = Selectable<KycLinksTable>;

export async function insertKycLink(db: DbOrTx, row: KycLinkRow): Promise<void> {
  await db.insertInto('kyc_links').values(row).execute();
}

export async function findKycLinkByToken(db: DbOrTx, tokenSha256: string, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('kyc_links').selectAll().where('token_sha256', '=', tokenSha256);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Consumes the link; false when it was already used (a concurrent submit won). */
export async function useKycLink(db: DbOrTx, id: string, verificationId: string, at: Date): Promise<boolean> {
  const result = await db.updateTable('kyc_links').set({ submitted_at: at, verification_id: verificationId }).where('id', '=', id).where('submitted_at', 'is', null).executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
