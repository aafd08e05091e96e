import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';

interface DocumentsTable {
  id: string;
  platform_id: string;
  holder_type: 'Customer' | 'BeneficialOwner';
  holder_id: string;
  document_type: string;
  side: 'FRONT' | 'BACK' | null;
  country: string;
  document_number: string | null;
  issuing_authority: string | null;
  file_name: string;
  created_at: Date;
  updated_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    documents: DocumentsTable;
  }
}

export type DocumentRow = Selectable<DocumentsTable>;

export async function insertDocument(db: DbOrTx, row: DocumentRow): Promise<void> {
  await db.insertInto('documents').values(row).execute();
}

export async function documentsOf(db: DbOrTx, platformId: string, holderIds: string[]): Promise<DocumentRow[]> {
  if (holderIds.length === 0) return [];
  return db
    .selectFrom('documents')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('holder_id', 'in', holderIds)
    .orderBy('id', 'asc')
    .execute();
}
