import type { Selectable } from 'kysely';
import { compiledOnce } from '../../platform/db/compiled-once.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { inPlatformIdOrder, inPlatformValueIdOrder, onePlatform, oneValue } from '../../platform/db/platform-page.js';
import { countMatches, platformRowCount } from '../../platform/db/row-counts.js';
import { withJsonColumns } from '../../platform/db/json.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { AccountInfo, BeneficiaryVerificationStatus, ExternalAccountStatus, OwnershipMethod, OwnershipType } from './schemas.js';
import type { ExternalAccountType } from './variants.js';

interface ExternalAccountsTable {
  id: string;
  platform_id: string;
  /** null: the platform's own account. */
  customer_id: string | null;
  account_type: ExternalAccountType;
  currency: string;
  status: ExternalAccountStatus;
  ownership_type: OwnershipType | null;
  platform_account_id: string | null;
  default_uma_deposit_account: boolean;
  account_info: AccountInfo;
  identity_sha256: string;
  beneficiary_verification_status: BeneficiaryVerificationStatus;
  beneficiary_verified_name: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

interface ExternalAccountChallengesTable {
  platform_id: string;
  account_id: string;
  method: OwnershipMethod;
  message_to_sign: string | null;
  token_sha256: string | null;
  expires_at: Date;
  created_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    external_accounts: ExternalAccountsTable;
    external_account_challenges: ExternalAccountChallengesTable;
  }
}

export type ExternalAccountRow = Selectable<ExternalAccountsTable>;
export type ChallengeRow = Selectable<ExternalAccountChallengesTable>;

export const UNIQUE_IDENTITY = 'external_accounts_identity_live';

export async function insertAccount(db: DbOrTx, row: ExternalAccountRow): Promise<void> {
  await db.insertInto('external_accounts').values(withJsonColumns(row, ['account_info'])).execute();
}

/** Who may see an account: customer paths see customers' accounts, platform paths the platform's own. */
export type Owner = { kind: 'customer' } | { kind: 'platform' } | { kind: 'any' };

const liveAccount = compiledOnce((db, platformId: string, id: string) =>
  db.selectFrom('external_accounts').selectAll().where('platform_id', '=', platformId).where('id', '=', id).where('deleted_at', 'is', null),
);

/** A live account of the platform visible to `owner`; `forUpdate` locks it for a status change. */
export async function findAccount(
  db: DbOrTx,
  platformId: string,
  id: string,
  owner: Owner,
  options: { forUpdate?: boolean; includeDeleted?: boolean } = {},
): Promise<ExternalAccountRow | undefined> {
  // Any owner's live account, read without a lock (a quote's source or destination): the statement compiled once.
  if (owner.kind === 'any' && !options.forUpdate && !options.includeDeleted) return (await liveAccount(db, platformId, id))[0];
  let query = db.selectFrom('external_accounts').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (!options.includeDeleted) query = query.where('deleted_at', 'is', null);
  if (owner.kind === 'platform') query = query.where('customer_id', 'is', null);
  if (owner.kind === 'customer') query = query.where('customer_id', 'is not', null);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export interface ListFilters {
  customerId?: string;
  currency?: string;
}

function listed(db: DbOrTx, platformId: string, owner: 'customers' | 'platform', filters: ListFilters) {
  let query = db.selectFrom('external_accounts').where(onePlatform(platformId)).where('deleted_at', 'is', null);
  query = owner === 'platform' ? query.where('customer_id', 'is', null) : query.where('customer_id', 'is not', null);
  if (filters.customerId) query = query.where('customer_id', '=', filters.customerId);
  if (filters.currency) query = query.where(oneValue('currency', filters.currency, { leads: byCurrency(filters) }));
  return query;
}

/** A currency without a customer is read along its own index (migration 0062), one customer's accounts along theirs. */
function byCurrency(filters: ListFilters): boolean {
  return filters.currency !== undefined && !filters.customerId;
}

export async function listAccounts(db: DbOrTx, platformId: string, owner: 'customers' | 'platform', filters: ListFilters, page: PageRequest) {
  const selected = listed(db, platformId, owner, filters).selectAll();
  let query = (byCurrency(filters) ? inPlatformValueIdOrder(selected, 'currency', 'desc', 'asc') : inPlatformIdOrder(selected, 'desc', 'asc')).limit(page.limit + 1);
  if (page.after) query = query.where('id', '<', page.after);
  // The total only where it costs the same whatever the number of accounts: the kept count
  // (migration 0034) of an unfiltered list, or a count of one customer's accounts.
  const counted = filters.customerId
    ? countMatches(listed(db, platformId, owner, filters))
    : filters.currency
      ? undefined
      : platformRowCount(db, owner === 'platform' ? 'external_accounts:platform' : 'external_accounts', platformId, 'live');
  const [rows, totalCount] = await Promise.all([query.execute(), counted]);
  return { rows, totalCount };
}

export async function updateAccount(db: DbOrTx, platformId: string, id: string, changes: Partial<ExternalAccountRow>): Promise<ExternalAccountRow> {
  return db
    .updateTable('external_accounts')
    .set(withJsonColumns(changes, ['account_info']))
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Clears the customer's current default UMA deposit account, so another can take the flag. */
export async function clearDefaultUmaDeposit(db: DbOrTx, platformId: string, customerId: string, at: Date): Promise<void> {
  await db
    .updateTable('external_accounts')
    .set({ default_uma_deposit_account: false, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('customer_id', '=', customerId)
    .where('default_uma_deposit_account', '=', true)
    .where('deleted_at', 'is', null)
    .execute();
}

export async function findChallenge(db: DbOrTx, platformId: string, accountId: string): Promise<ChallengeRow | undefined> {
  return db.selectFrom('external_account_challenges').selectAll().where('platform_id', '=', platformId).where('account_id', '=', accountId).executeTakeFirst();
}

export async function findChallengeByToken(db: DbOrTx, tokenSha256: string): Promise<ChallengeRow | undefined> {
  return db.selectFrom('external_account_challenges').selectAll().where('token_sha256', '=', tokenSha256).executeTakeFirst();
}

/** Replaces the account's outstanding challenge (a new challenge abandons the previous one). */
export async function putChallenge(db: DbOrTx, row: ChallengeRow): Promise<void> {
  await deleteChallenge(db, row.platform_id, row.account_id);
  await db.insertInto('external_account_challenges').values(row).execute();
}

export async function deleteChallenge(db: DbOrTx, platformId: string, accountId: string): Promise<void> {
  await db.deleteFrom('external_account_challenges').where('platform_id', '=', platformId).where('account_id', '=', accountId).execute();
}
