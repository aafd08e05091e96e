import { sql, type Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';
import type { CardTokenization2faConfig, EmbeddedWalletConfig, FeeConfig, PlatformCurrencyConfig } from './schemas.js';

interface PlatformConfigsTable {
  id: string;
  platform_id: string;
  uma_domain: string | null;
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

/** Platforms whose `umaDomain` is `domain` (case-insensitive): where an incoming UMA request for that domain may belong. */
export async function platformsWithUmaDomain(db: DbOrTx, domain: string): Promise<string[]> {
  const rows = await db
    .selectFrom('platform_configs')
    .select('platform_id')
    .where(sql<string>`lower(uma_domain)`, '=', domain.toLowerCase())
    .where('uma_domain', 'is not', null)
    .limit(20)
    .execute();
  return rows.map((row) => row.platform_id);
}
