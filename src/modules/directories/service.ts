import type { DbOrTx } from '../../platform/db/database.js';
import { currency, isCurrency } from '../../platform/currencies.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { selectDiscoveries, selectProviderPage, selectVasps, type UmaProviderRow } from './repo.js';
import { MAX_NAME_LENGTH, type Discovery, type DiscoveryQuery, type UmaProvider, type UmaProviderListQuery, type Vasp, type VaspListQuery } from './schemas.js';

/**
 * Directory cursors carry a sort key (a lower-cased name), not a uuid: at most two UTF-16 units a
 * character of the name, as a character beyond the BMP takes, and the lower case of U+0130
 * (İ → i̇), the one character lower-casing lengthens.
 */
const acceptKey = (key: string) => key.length > 0 && key.length <= 2 * MAX_NAME_LENGTH;

export async function listVasps(db: DbOrTx, query: VaspListQuery): Promise<Omit<Page<Vasp>, 'totalCount'>> {
  const page = pageRequest(query, acceptKey);
  const rows = await selectVasps(db, page);
  return toPage(
    rows.map((r) => ({ ...r, id: r.sort_key })),
    page,
    (r): Vasp => ({ vaspName: r.vasp_name, ...(r.url ? { url: r.url } : {}) }),
  );
}

function toProvider(row: UmaProviderRow): UmaProvider {
  return {
    name: row.name,
    supportedRegions: row.supported_regions,
    domain: row.domain,
    ...(row.logo_url ? { logoUrl: row.logo_url } : {}),
    // A code the currency registry stopped knowing (a later package version) is left out, not an error.
    supportedCurrencies: row.supported_currencies.filter(isCurrency).map((code) => currency(code)),
    ...(row.lei ? { lei: row.lei } : {}),
    allowListStatus: true,
  };
}

export async function listUmaProviders(db: DbOrTx, query: UmaProviderListQuery): Promise<Page<UmaProvider>> {
  const page = pageRequest(query, acceptKey);
  const filters = { ...(query.countryCode ? { country: query.countryCode } : {}), ...(query.currencyCode ? { currency: query.currencyCode } : {}) };
  const { rows, total } = await selectProviderPage(db, filters, page, query.sortOrder ?? 'desc');
  return toPage(
    rows.map((r) => ({ ...r, id: r.sort_key })),
    page,
    toProvider,
    total,
  );
}

export async function listDiscoveries(db: DbOrTx, query: DiscoveryQuery): Promise<{ data: Discovery[] }> {
  const rows = await selectDiscoveries(db, query);
  return { data: rows.map((r) => ({ bankName: r.bank_name, displayName: r.display_name, country: r.country, currency: r.currency })) };
}
