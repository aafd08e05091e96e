import { sql, type Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { insertChunked } from '../../platform/db/insert-chunked.js';
import { withJsonColumns } from '../../platform/db/json.js';

interface DirectoryVersionsTable {
  singleton: boolean;
  version: number;
  published_on: string;
  origin: string;
  loaded_at: Date;
}

interface DirectoryVaspsTable {
  sort_key: string;
  vasp_name: string;
  url: string | null;
}

interface DirectoryUmaProvidersTable {
  sort_key: string;
  name: string;
  domain: string;
  logo_url: string | null;
  lei: string | null;
  supported_regions: string[];
  supported_currencies: string[];
}

interface DirectoryDiscoveriesTable {
  country: string;
  currency: string;
  bank_name: string;
  display_name: string;
}

declare module '../../platform/db/database.js' {
  interface Database {
    directory_versions: DirectoryVersionsTable;
    directory_vasps: DirectoryVaspsTable;
    directory_uma_providers: DirectoryUmaProvidersTable;
    directory_discoveries: DirectoryDiscoveriesTable;
  }
}

export type VaspRow = Selectable<DirectoryVaspsTable>;
export type UmaProviderRow = Selectable<DirectoryUmaProvidersTable>;
export type DiscoveryRow = Selectable<DirectoryDiscoveriesTable>;
export type DirectoryVersionRow = Selectable<DirectoryVersionsTable>;

/** Keys compare byte by byte on both engines, whatever the database's collation. */
const byteOrder = (column: string) => sql.raw(`${column} collate "C"`);

export async function loadedVersion(db: DbOrTx): Promise<DirectoryVersionRow> {
  return db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow();
}

/**
 * Claims the version row for `version` if it is higher than the loaded one (or, `force`, any
 * other). The row lock this takes serialises concurrent loaders: a second process starting with
 * the same file waits, then finds the version already raised and loads nothing.
 */
export async function claimVersion(
  trx: DbOrTx,
  next: { version: number; publishedOn: string; origin: string; at: Date },
  force: boolean,
): Promise<boolean> {
  const result = await trx
    .updateTable('directory_versions')
    .set({ version: next.version, published_on: next.publishedOn, origin: next.origin, loaded_at: next.at })
    .where('version', force ? '<>' : '<', next.version)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function replaceDirectories(
  trx: DbOrTx,
  rows: { vasps: VaspRow[]; providers: UmaProviderRow[]; discoveries: DiscoveryRow[] },
): Promise<void> {
  await trx.deleteFrom('directory_vasps').execute();
  await trx.deleteFrom('directory_uma_providers').execute();
  await trx.deleteFrom('directory_discoveries').execute();
  await insertChunked(rows.vasps, (chunk) => trx.insertInto('directory_vasps').values(chunk).execute());
  await insertChunked(rows.providers, (chunk) =>
    trx
      .insertInto('directory_uma_providers')
      .values(chunk.map((p) => withJsonColumns(p, ['supported_regions', 'supported_currencies'])))
      .execute(),
  );
  await insertChunked(rows.discoveries, (chunk) => trx.insertInto('directory_discoveries').values(chunk).execute());
}

/** Up to `limit + 1` VASPs after the key `after`, by name. */
export async function selectVasps(db: DbOrTx, page: { limit: number; after?: string }): Promise<VaspRow[]> {
  let query = db.selectFrom('directory_vasps').selectAll();
  if (page.after !== undefined) query = query.where(sql<boolean>`${byteOrder('sort_key')} > ${page.after}`);
  return query.orderBy(byteOrder('sort_key')).limit(page.limit + 1).execute();
}

export interface ProviderFilters {
  country?: string;
  currency?: string;
}

function providerQuery(db: DbOrTx, filters: ProviderFilters) {
  let query = db.selectFrom('directory_uma_providers');
  if (filters.country) query = query.where(sql<boolean>`supported_regions @> ${JSON.stringify([filters.country])}::jsonb`);
  if (filters.currency) query = query.where(sql<boolean>`supported_currencies @> ${JSON.stringify([filters.currency])}::jsonb`);
  return query;
}

/**
 * Up to `limit + 1` providers after the key `after` in `order`, and how many providers the filters
 * match (ignoring the page), read in one statement: one snapshot, so a directory reload that
 * commits meanwhile never pairs one version's page with another's count. The count is the outer
 * row and the page joins it, so an empty page still carries its count. The directory is bounded
 * by its file (MAX_ENTRIES), so counting the filtered rows is bounded too.
 */
export async function selectProviderPage(
  db: DbOrTx,
  filters: ProviderFilters,
  page: { limit: number; after?: string },
  order: 'asc' | 'desc',
): Promise<{ rows: UmaProviderRow[]; total: number }> {
  let listed = providerQuery(db, filters).selectAll();
  if (page.after !== undefined) listed = listed.where(sql<boolean>`${byteOrder('sort_key')} ${sql.raw(order === 'asc' ? '>' : '<')} ${page.after}`);
  listed = listed.orderBy(sql`sort_key collate "C" ${sql.raw(order)}`).limit(page.limit + 1);
  const joined = await db
    .selectFrom(
      providerQuery(db, filters)
        .select((eb) => eb.fn.countAll<string | number>().as('total'))
        .as('counted'),
    )
    .leftJoinLateral(listed.as('listed'), (join) => join.onTrue())
    .select(['counted.total', 'listed.sort_key', 'listed.name', 'listed.domain', 'listed.logo_url', 'listed.lei', 'listed.supported_regions', 'listed.supported_currencies'])
    .orderBy(sql`listed.sort_key collate "C" ${sql.raw(order)}`)
    .execute();
  // The left join makes the page's columns nullable: a row without a key is the empty page's.
  const rows = joined.filter((r) => r.sort_key !== null).map(({ total: _total, ...row }) => row as UmaProviderRow);
  return { rows, total: Number(joined[0]!.total) };
}

export async function selectDiscoveries(db: DbOrTx, filters: { country?: string; currency?: string }): Promise<DiscoveryRow[]> {
  let query = db.selectFrom('directory_discoveries').selectAll();
  if (filters.country) query = query.where('country', '=', filters.country);
  if (filters.currency) query = query.where('currency', '=', filters.currency);
  return query.orderBy('country').orderBy('currency').orderBy(byteOrder('bank_name')).execute();
}
