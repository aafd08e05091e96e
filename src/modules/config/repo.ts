import { sql, type Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';
import type { CardTokenization2faConfig, EmbeddedWalletConfig, FeeConfig, PlatformCurrencyConfig } from './schemas.js';

interface PlatformConfigsTable {
  id: string;
  platform_id: string;
  /** The platform's, fixed at creation (a foreign key holds it to the platform's). */
  environment: 'sandbox' | 'production';
  uma_domain: string | null;
  /** When the platform set its current umaDomain (case aside); null without one. */
  uma_domain_claimed_at: Date | null;
  proxy_uma_subdomain: string | null;
  webhook_endpoint: string | null;
  is_regulated_financial_institution: boolean;
  supported_currencies: PlatformCurrencyConfig[];
  embedded_wallet_config: EmbeddedWalletConfig | null;
  card_tokenization_2fa_config: CardTokenization2faConfig | null;
  fee_configs: FeeConfig[];
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    platform_configs: PlatformConfigsTable;
  }
}

export type ConfigRow = Selectable<PlatformConfigsTable>;

const JSON_COLUMNS = ['supported_currencies', 'embedded_wallet_config', 'card_tokenization_2fa_config', 'fee_configs'] as const;

export async function insertConfig(db: DbOrTx, row: ConfigRow): Promise<void> {
  await db.insertInto('platform_configs').values(withJsonColumns(row, JSON_COLUMNS)).execute();
}

export async function findConfig(db: DbOrTx, platformId: string, options: { forUpdate?: boolean; forShare?: boolean } = {}): Promise<ConfigRow | undefined> {
  let query = db.selectFrom('platform_configs').selectAll().where('platform_id', '=', platformId);
  if (options.forUpdate) query = query.forUpdate();
  else if (options.forShare) query = query.forShare();
  return query.executeTakeFirst();
}

export async function updateConfig(db: DbOrTx, platformId: string, changes: Partial<ConfigRow>): Promise<ConfigRow> {
  return db
    .updateTable('platform_configs')
    .set(withJsonColumns(changes, JSON_COLUMNS))
    .where('platform_id', '=', platformId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The unique index that gives a production umaDomain to one platform (migration 0044). */
export const PRODUCTION_UMA_DOMAIN_INDEX = 'platform_configs_production_uma_domain';

/** Whether a production platform other than `platformId` holds `domain` (case-insensitive). */
export async function productionUmaDomainHeld(db: DbOrTx, platformId: string, domain: string): Promise<boolean> {
  const row = await db
    .selectFrom('platform_configs')
    .select('platform_id')
    .where(sql<string>`lower(uma_domain)`, '=', domain.toLowerCase())
    .where('uma_domain', 'is not', null)
    .where('environment', '=', 'production')
    .where('platform_id', '<>', platformId)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The domain the platform's outgoing UMA messages name as their VASP (`vaspDomain`, signed with
 * the deployment's keys, which the receiving VASP fetches from that domain), lower-cased; or why
 * it has none: no umaDomain set, or one a production platform other than it now holds (a
 * sandbox platform that set the domain before the production platform did keeps it, but must
 * not speak for that platform's VASP).
 */
export async function senderUmaDomain(
  db: DbOrTx,
  config: Pick<ConfigRow, 'platform_id' | 'uma_domain'>,
): Promise<{ domain: string } | { reason: 'UMA_DOMAIN_NOT_SET' | 'UMA_DOMAIN_HELD_BY_ANOTHER_PLATFORM' }> {
  if (!config.uma_domain) return { reason: 'UMA_DOMAIN_NOT_SET' };
  if (await productionUmaDomainHeld(db, config.platform_id, config.uma_domain)) return { reason: 'UMA_DOMAIN_HELD_BY_ANOTHER_PLATFORM' };
  return { domain: config.uma_domain.toLowerCase() };
}

/**
 * Platforms whose `umaDomain` is `domain` (case-insensitive), in the order an incoming UMA
 * request for that domain is matched against their customers: the production platform holding
 * it alone (it is its own, and no sandbox platform sharing it may answer for its addresses);
 * else the sandbox platforms sharing it, the first to set it first (then the older platform), so
 * an address several of them have is always the same one's and a later one cannot take it. At
 * most 20 are asked.
 */
export async function platformsWithUmaDomain(db: DbOrTx, domain: string): Promise<string[]> {
  const rows = await db
    .selectFrom('platform_configs')
    .select(['platform_id', 'environment'])
    .where(sql<string>`lower(uma_domain)`, '=', domain.toLowerCase())
    .where('uma_domain', 'is not', null)
    .orderBy(sql`environment = 'production'`, 'desc')
    .orderBy('uma_domain_claimed_at')
    .orderBy('platform_id')
    .limit(20)
    .execute();
  if (rows[0]?.environment === 'production') return [rows[0].platform_id];
  return rows.map((row) => row.platform_id);
}
