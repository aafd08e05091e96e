import { sql, type Selectable } from 'kysely';
import { notifyChanged } from '../../platform/cache.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { inPlatformIdOrder, onePlatform } from '../../platform/db/platform-page.js';
import { countMatches } from '../../platform/db/row-counts.js';
import type { Permission } from '../../platform/http/auth.js';
import { timeRangeConditions, type PageRequest, type TimeRange } from '../../platform/pagination.js';

interface ApiTokensTable {
  id: string;
  platform_id: string;
  name: string;
  permissions: Permission[];
  client_id: string;
  secret_hash: Buffer;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

declare module '../../platform/db/database.js' {
  interface Database {
    api_tokens: ApiTokensTable;
  }
}

export type TokenRow = Selectable<ApiTokensTable>;
/** A token as lists and reads answer it: never its secret's hash, which only authentication reads. */
export type LiveToken = Omit<TokenRow, 'deleted_at' | 'secret_hash'>;

export const TOKEN_DELETED_CHANNEL = 'corridor_api_token_deleted';

export async function insertToken(db: DbOrTx, row: TokenRow): Promise<void> {
  await db.insertInto('api_tokens').values(row).execute();
}

const LIVE_COLUMNS = ['id', 'platform_id', 'name', 'permissions', 'client_id', 'created_at', 'updated_at'] as const;

export async function findLiveToken(db: DbOrTx, platformId: string, id: string): Promise<LiveToken | undefined> {
  return db
    .selectFrom('api_tokens')
    .select(LIVE_COLUMNS)
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export interface TokenFilters {
  name?: string;
  timeRange: TimeRange;
}

function filtered(db: DbOrTx, platformId: string, f: TokenFilters) {
  let query = db.selectFrom('api_tokens').where(onePlatform(platformId)).where('deleted_at', 'is', null);
  if (f.name !== undefined) query = query.where('name', '=', f.name);
  for (const condition of timeRangeConditions(f.timeRange)) query = query.where(condition);
  return query;
}

export async function listLiveTokens(db: DbOrTx, platformId: string, filters: TokenFilters, page: PageRequest) {
  let query = inPlatformIdOrder(filtered(db, platformId, filters).select(LIVE_COLUMNS), 'desc', 'desc').limit(page.limit + 1);
  if (page.after) query = query.where('id', '<', page.after);
  const [rows, totalCount] = await Promise.all([query.execute(), countMatches(filtered(db, platformId, filters))]);
  return { rows, totalCount };
}

/**
 * The platform's live tokens holding MANAGE, locked until the transaction ends: of two deletes
 * at once, the second reads what the first left, so they cannot each leave the other's as the
 * last one and together delete both.
 */
export async function lockManagingTokens(trx: DbOrTx, platformId: string): Promise<string[]> {
  const rows = await trx
    .selectFrom('api_tokens')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`${'MANAGE'} = any(permissions)`)
    .forUpdate()
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Whether the token is live, holding its row FOR SHARE until the transaction ends: a delete of
 * it waits for the caller's transaction, or has committed and the row is no longer live.
 */
export async function lockLiveToken(trx: DbOrTx, platformId: string, id: string): Promise<boolean> {
  const row = await trx
    .selectFrom('api_tokens')
    .select('id')
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .forShare()
    .executeTakeFirst();
  return row !== undefined;
}

/** Soft delete; the NOTIFY (the token's uuid) reaches every process's token cache on commit. */
export async function markTokenDeleted(db: DbOrTx, platformId: string, id: string, at: Date): Promise<string | undefined> {
  const row = await db
    .updateTable('api_tokens')
    .set({ deleted_at: at, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  if (row) await notifyChanged(db, TOKEN_DELETED_CHANNEL, row.id);
  return row?.id;
}

export interface CredentialRow {
  id: string;
  platform_id: string;
  permissions: Permission[];
  secret_hash: Buffer;
  environment: 'sandbox' | 'production';
}

export async function findCredentials(db: DbOrTx, id: string): Promise<CredentialRow | undefined> {
  return db
    .selectFrom('api_tokens as t')
    .innerJoin('platforms as p', 'p.id', 't.platform_id')
    .select(['t.id', 't.platform_id', 't.permissions', 't.secret_hash', 'p.environment'])
    .where('t.id', '=', id)
    .where('t.deleted_at', 'is', null)
    .executeTakeFirst();
}
