import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
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

/** jsonb parameters go over the wire as JSON text on both engines. */
function encode(row: Partial<ConfigRow>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row };
  for (const column of JSON_COLUMNS) {
    if (out[column] !== undefined && out[column] !== null) out[column] = JSON.stringify(out[column]);
  }
  return out;
}

export async function insertConfig(db: DbOrTx, row: ConfigRow): Promise<void> {
  await db.insertInto('platform_configs').values(encode(row) as ConfigRow).execute();
}

export async function findConfig(db: DbOrTx, platformId: string, options: { forUpdate?: boolean } = {}): Promise<ConfigRow | undefined> {
  let query = db.selectFrom('platform_configs').selectAll().where('platform_id', '=', platformId);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function updateConfig(db: DbOrTx, platformId: string, changes: Partial<ConfigRow>): Promise<ConfigRow> {
  return db
    .updateTable('platform_configs')
    .set(encode(changes) as Partial<ConfigRow>)
    .where('platform_id', '=', platformId)
    .returningAll()
    .executeTakeFirstOrThrow();
}
