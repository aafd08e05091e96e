import { sql, type Selectable } from 'kysely';
import type { DbOrTx, Tx } from '../../platform/db/database.js';

interface PlatformsTable {
  id: string;
  name: string;
  environment: 'sandbox' | 'production';
  /** Which key version seals the platform's tax identifiers; rotation raises it. */
  identifier_key_version: number;
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    platforms: PlatformsTable;
  }
}

export type PlatformRow = Selectable<PlatformsTable>;

export async function insertPlatform(db: DbOrTx, row: PlatformRow): Promise<void> {
  await db.insertInto('platforms').values(row).execute();
}

export async function findPlatform(db: DbOrTx, id: string): Promise<PlatformRow | undefined> {
  return db.selectFrom('platforms').selectAll().where('id', '=', id).executeTakeFirst();
}

const BOOTSTRAP_LOCK = 7_301_991_002;

/** Serialises first starts until `trx` ends: processes starting at once on an empty database count platforms one after another. */
export async function lockBootstrap(trx: Tx): Promise<void> {
  await sql`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`.execute(trx);
}

export async function countPlatforms(db: DbOrTx): Promise<number> {
  const row = await db.selectFrom('platforms').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function identifierKeyVersion(db: DbOrTx, id: string): Promise<number> {
  const row = await db.selectFrom('platforms').select('identifier_key_version').where('id', '=', id).executeTakeFirstOrThrow();
  return row.identifier_key_version;
}

/** Raises the key version; answers the new one, or undefined when there is no such platform. */
export async function raiseIdentifierKeyVersion(db: DbOrTx, id: string, at: Date): Promise<number | undefined> {
  const row = await db
    .updateTable('platforms')
    .set((eb) => ({ identifier_key_version: eb('identifier_key_version', '+', 1), updated_at: at }))
    .where('id', '=', id)
    .returning('identifier_key_version')
    .executeTakeFirst();
  return row?.identifier_key_version;
}
