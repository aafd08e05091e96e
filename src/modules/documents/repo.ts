import type { Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { inPlatformIdOrder, onePlatform } from '../../platform/db/platform-page.js';
import { countMatches, platformRowCount } from '../../platform/db/row-counts.js';
import type { PageRequest } from '../../platform/pagination.js';

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
  /** When a review first read the document; from then on it cannot be deleted. */
  submitted_at: Date | null;
  /** What the latest finished review said of the current file; null: not judged yet, or replaced since. */
  review_verdict: ReviewVerdict | null;
  created_at: Date;
  updated_at: Date;
}

export type ReviewVerdict = 'ACCEPTED' | 'REJECTED';

interface DocumentFilesTable {
  id: string;
  document_id: string;
  sha256: string;
  size_bytes: bigint;
  content_type: string;
  file_name: string;
  active: boolean;
  created_at: Date;
  deactivated_at: Date | null;
}

declare module '../../platform/db/database.js' {
  interface Database {
    documents: DocumentsTable;
    document_files: DocumentFilesTable;
  }
}

export type DocumentRow = Selectable<DocumentsTable>;
export type DocumentFileRow = Selectable<DocumentFilesTable>;
export type DocumentMetadata = Pick<DocumentRow, 'document_type' | 'side' | 'country' | 'document_number' | 'issuing_authority' | 'file_name'>;

export async function insertDocument(db: DbOrTx, row: DocumentRow): Promise<void> {
  await db.insertInto('documents').values(row).execute();
}

export async function findDocument(db: DbOrTx, platformId: string, id: string, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('documents').selectAll().where('platform_id', '=', platformId).where('id', '=', id);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** A replace: the new metadata, and no verdict (the new file has not been reviewed). */
export async function updateDocument(db: DbOrTx, id: string, metadata: DocumentMetadata, at: Date): Promise<DocumentRow> {
  return db.updateTable('documents').set({ ...metadata, review_verdict: null, updated_at: at }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** A review reads these documents: submitted from now on (if not before), and their verdict is open again. */
export async function markSubmitted(db: DbOrTx, platformId: string, ids: string[], at: Date): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('documents')
    .set((eb) => ({ submitted_at: eb.fn.coalesce('submitted_at', eb.val(at)), review_verdict: null }))
    .where('platform_id', '=', platformId)
    .where('id', 'in', ids)
    .execute();
}

/** A review's verdict on the documents of these holders it read and has not judged yet: REJECTED for `rejectedIds`, ACCEPTED for the rest. */
export async function settleVerdicts(db: DbOrTx, platformId: string, holderIds: string[], rejectedIds: string[]): Promise<void> {
  if (holderIds.length === 0) return;
  const awaiting = () =>
    db.updateTable('documents').where('platform_id', '=', platformId).where('holder_id', 'in', holderIds).where('submitted_at', 'is not', null).where('review_verdict', 'is', null);
  if (rejectedIds.length) await awaiting().set({ review_verdict: 'REJECTED' }).where('id', 'in', rejectedIds).execute();
  await awaiting().set({ review_verdict: 'ACCEPTED' }).execute();
}

/** Deletes a document with all its files (the foreign key cascades); answers the digests they used. */
export async function deleteDocument(db: DbOrTx, id: string): Promise<string[]> {
  const files = await db.selectFrom('document_files').select('sha256').distinct().where('document_id', '=', id).execute();
  await db.deleteFrom('documents').where('id', '=', id).execute();
  return files.map((f) => f.sha256);
}

export async function listDocuments(db: DbOrTx, platformId: string, filters: { holder?: { type: DocumentRow['holder_type']; uuid: string } }, page: PageRequest) {
  let base = db.selectFrom('documents').where(onePlatform(platformId));
  if (filters.holder) base = base.where('holder_type', '=', filters.holder.type).where('holder_id', '=', filters.holder.uuid);
  let query = inPlatformIdOrder(base.selectAll(), 'desc', 'desc').limit(page.limit + 1);
  if (page.after) query = query.where('id', '<', page.after);
  // One holder's documents are counted; all of the platform's come from the kept count (migration 0034).
  const counted = filters.holder
    ? countMatches(base)
    : platformRowCount(db, 'documents', platformId, 'total');
  const [rows, totalCount] = await Promise.all([query.execute(), counted]);
  return { rows, totalCount };
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

export async function insertFile(db: DbOrTx, row: DocumentFileRow): Promise<void> {
  await db.insertInto('document_files').values(row).execute();
}

export async function deactivateActiveFile(db: DbOrTx, documentId: string, at: Date): Promise<void> {
  await db
    .updateTable('document_files')
    .set({ active: false, deactivated_at: at })
    .where('document_id', '=', documentId)
    .where('active', '=', true)
    .execute();
}

export async function blobInUse(db: DbOrTx, sha256: string): Promise<boolean> {
  const row = await db.selectFrom('document_files').select('id').where('sha256', '=', sha256).limit(1).executeTakeFirst();
  return row !== undefined;
}
