import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';

interface PlatformsTable {
  id: string;
  name: string;
  environment: 'sandbox' | 'production';
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

export async function countPlatforms(db: DbOrTx): Promise<number> {
  const row = await db.selectFrom('platforms').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
