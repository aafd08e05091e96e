import type { BlobStore } from '../../platform/blob-store.js';
import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { ownerHolder } from '../beneficial-owners/index.js';
import { customerTypeOf, type CustomerKind } from '../customers/index.js';
import type { DocumentType } from './catalogue.js';
import {
  blobInUse,
  deactivateActiveFile,
  deleteDocument as deleteDocumentRow,
  documentsOf,
  findDocument,
  insertDocument,
  insertFile,
  listDocuments as listDocumentRows,
  markSubmitted,
  settleVerdicts,
  updateDocument,
  type DocumentMetadata,
  type DocumentRow,
} from './repo.js';
import type { Document, DocumentListQuery, DocumentReplaceFields, DocumentUploadFields } from './schemas.js';
import type { DocumentContentType, DocumentScreener } from './screening/screener.js';

/**
 * Whether a customer's documents are under an open review. Verifications reads documents, so
 * documents never imports verifications: the wiring (app.ts) hands this in.
 */
export interface ReviewLookup {
  reviewUnderway(db: DbOrTx, platformId: string, customerUuid: string): Promise<boolean>;
}

/** An accepted upload, spooled to disk: its bytes, digest and the name and type it was sent with. */
export interface UploadedFile {
  path: string;
  sha256: string;
  sizeBytes: number;
  fileName: string;
  contentType: DocumentContentType;
}

export function toDocument(row: DocumentRow): Document {
  return {
    id: formatId('Document', row.id),
    documentHolder: formatId(row.holder_type, row.holder_id),
    documentType: row.document_type as DocumentType,
    ...(row.side ? { side: row.side } : {}),
    country: row.country,
    ...(row.document_number ? { documentNumber: row.document_number } : {}),
    ...(row.issuing_authority ? { issuingAuthority: row.issuing_authority } : {}),
    fileName: row.file_name,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function notFound(documentId: string): AppError {
  return new AppError('REFERENCE_NOT_FOUND', `Document ${documentId} was not found.`);
}

interface Holder {
  type: 'Customer' | 'BeneficialOwner';
  uuid: string;
}

/** The holder, a live customer or a live customer's beneficial owner of this platform (404, or 410 when deleted). */
async function resolveHolder(db: DbOrTx, platformId: string, holderId: string): Promise<Holder> {
  const ownerUuid = parseId('BeneficialOwner', holderId);
  if (ownerUuid) {
    await ownerHolder(db, platformId, ownerUuid, { live: true });
    return { type: 'BeneficialOwner', uuid: ownerUuid };
  }
  return { type: 'Customer', uuid: (await customerTypeOf(db, platformId, holderId)).uuid };
}

function metadataOf(fields: DocumentReplaceFields, file: UploadedFile): DocumentMetadata {
  return {
    document_type: fields.documentType,
    side: fields.side ?? null,
    country: fields.country,
    document_number: fields.documentNumber ?? null,
    issuing_authority: fields.issuingAuthority ?? null,
    file_name: file.fileName,
  };
}

/** Checks, before any screening work, that the upload has somewhere to go. */
export async function checkHolder(db: DbOrTx, platformId: string, holderId: string): Promise<void> {
  await resolveHolder(db, platformId, holderId);
}

/**
 * Screens the file with the provider (spec §4.1 rules 4–6). Any problem rejects it with 422
 * DOCUMENT_REJECTED, carrying the provider's findings verbatim; nothing is stored. A screener
 * with no room for it now refuses it with 503 SERVICE_UNAVAILABLE.
 */
export async function screenUpload(screener: DocumentScreener, platformId: string, fields: DocumentReplaceFields, file: UploadedFile): Promise<void> {
  const precheckErrors = await screener.screen({
    platformId,
    filePath: file.path,
    contentType: file.contentType,
    sizeBytes: file.sizeBytes,
    sha256: file.sha256,
    fileName: file.fileName,
    documentType: fields.documentType,
    country: fields.country,
    ...(fields.side ? { side: fields.side } : {}),
    ...(fields.documentNumber ? { documentNumber: fields.documentNumber } : {}),
    ...(fields.issuingAuthority ? { issuingAuthority: fields.issuingAuthority } : {}),
  });
  if (precheckErrors.length > 0) {
    throw new AppError('DOCUMENT_REJECTED', 'The document did not pass screening; see precheckErrors.', { extra: { precheckErrors } });
  }
}

async function storeActiveFile(trx: Tx, blobs: BlobStore, documentId: string, file: UploadedFile, at: Date): Promise<void> {
  await blobs.put(trx, file);
  await insertFile(trx, {
    id: uuidv7(at.getTime()),
    document_id: documentId,
    sha256: file.sha256,
    size_bytes: BigInt(file.sizeBytes),
    content_type: file.contentType,
    file_name: file.fileName,
    active: true,
    created_at: at,
    deactivated_at: null,
  });
}

/** Records a screened upload: the document, its first (active) file and the bytes, in one transaction. */
export async function createDocument(trx: Tx, clock: Clock, blobs: BlobStore, platformId: string, fields: DocumentUploadFields, file: UploadedFile): Promise<Document> {
  const holder = await resolveHolder(trx, platformId, fields.documentHolder);
  const now = clock.now();
  const row: DocumentRow = {
    id: uuidv7(now.getTime()),
    platform_id: platformId,
    holder_type: holder.type,
    holder_id: holder.uuid,
    ...metadataOf(fields, file),
    submitted_at: null,
    review_verdict: null,
    created_at: now,
    updated_at: now,
  };
  await insertDocument(trx, row);
  await storeActiveFile(trx, blobs, row.id, file, now);
  return toDocument(row);
}

async function loadDocument(db: DbOrTx, platformId: string, documentId: string, options: { forUpdate?: boolean } = {}): Promise<DocumentRow> {
  const uuid = parseId('Document', documentId);
  const row = uuid && (await findDocument(db, platformId, uuid, options));
  if (!row) throw notFound(documentId);
  return row;
}

export async function getDocument(db: DbOrTx, platformId: string, documentId: string): Promise<Document> {
  return toDocument(await loadDocument(db, platformId, documentId));
}

/** The customer a document belongs to, directly or through its beneficial owner. */
async function customerUuidOf(db: DbOrTx, platformId: string, row: DocumentRow): Promise<string> {
  return row.holder_type === 'Customer' ? row.holder_id : (await ownerHolder(db, platformId, row.holder_id)).customerUuid;
}

/**
 * Whether the document's file may be replaced now. Replacing is for a document a review rejected
 * (spec §4.1 rules 1–3), or one no review has judged yet; otherwise 409 CONFLICT: while a review
 * of its customer is open (it is reading the file), once the customer is REJECTED (final), and
 * when the latest review accepted the current file (it is what the verdict was given on: upload a
 * new document instead). A deleted customer's document is 410 CUSTOMER_DELETED, as for uploads.
 * "A review is open" is the customer's hold (`underReview`), which verifications sets and clears
 * in the transaction that opens or ends a review, read with the customer itself.
 */
function checkReplaceable(row: DocumentRow, customer: CustomerKind): void {
  const documentId = formatId('Document', row.id);
  if (customer.underReview) {
    throw new AppError('CONFLICT', `Document ${documentId} is under an open verification; wait for its verdict before replacing it.`, { details: { reason: 'REVIEW_UNDERWAY' } });
  }
  if (customer.reviewStatus === 'REJECTED') {
    throw new AppError('CONFLICT', `The customer of document ${documentId} was rejected; a rejection is final, so its documents no longer change.`, { details: { reason: 'CUSTOMER_REJECTED' } });
  }
  if (row.review_verdict === 'ACCEPTED') {
    throw new AppError(
      'CONFLICT',
      `Document ${documentId} was accepted in review; replace only a document a verification rejected. Upload a newer one with POST /documents and start a new verification.`,
      { details: { reason: 'ACCEPTED_IN_REVIEW' } },
    );
  }
}

/**
 * The live customer a document belongs to (410 once deleted). `forShare` in a transaction that
 * changes the document: a verification opens with the customer locked FOR UPDATE and then marks
 * the documents it read, so taking the customer first (before the document) means the review
 * either opened before (and the hold says so) or reads the document as this transaction leaves it.
 */
async function customerOf(db: DbOrTx, platformId: string, row: DocumentRow, lock: { forShare?: boolean } = {}): Promise<CustomerKind> {
  return customerTypeOf(db, platformId, formatId('Customer', await customerUuidOf(db, platformId, row)), lock);
}

/** Checks, before any screening work, that the document exists (404) and may be replaced now (410, 409: checkReplaceable). */
export async function checkReplace(db: DbOrTx, platformId: string, documentId: string): Promise<void> {
  const row = await loadDocument(db, platformId, documentId);
  checkReplaceable(row, await customerOf(db, platformId, row));
}

/**
 * Replaces a document's file and metadata (spec §3, §4.1 rules 1–3): the active file becomes
 * inactive and is kept; the new file becomes active; the metadata is the new request's, whole.
 * Verifications keep their errors until a new review; the new file awaits its verdict.
 */
export async function replaceDocument(
  trx: Tx,
  clock: Clock,
  blobs: BlobStore,
  platformId: string,
  documentId: string,
  fields: DocumentReplaceFields,
  file: UploadedFile,
): Promise<Document> {
  // The customer before the document: the order a verification takes them in (customerOf).
  const customer = await customerOf(trx, platformId, await loadDocument(trx, platformId, documentId), { forShare: true });
  const row = await loadDocument(trx, platformId, documentId, { forUpdate: true });
  checkReplaceable(row, customer);
  const now = clock.now();
  await deactivateActiveFile(trx, row.id, now);
  await storeActiveFile(trx, blobs, row.id, file, now);
  return toDocument(await updateDocument(trx, row.id, metadataOf(fields, file), now));
}

/** The holder an id names, by its type as well as its uuid: `BeneficialOwner:<a customer's uuid>` holds nothing. */
function holderOf(holderId: string): Holder | undefined {
  const customerUuid = parseId('Customer', holderId);
  if (customerUuid) return { type: 'Customer', uuid: customerUuid };
  const ownerUuid = parseId('BeneficialOwner', holderId);
  return ownerUuid ? { type: 'BeneficialOwner', uuid: ownerUuid } : undefined;
}

export async function listDocuments(db: DbOrTx, platformId: string, query: DocumentListQuery): Promise<Page<Document>> {
  const page = pageRequest(query);
  const holder = query.documentHolder ? holderOf(query.documentHolder) : undefined;
  const { rows, totalCount } = await listDocumentRows(db, platformId, holder ? { holder } : {}, page);
  return toPage(rows, page, toDocument, totalCount);
}

/**
 * Deletes a document, every file it had, and the bytes no other file uses. 409 CONFLICT once a
 * review has read it (upstream: "already submitted for verification"; it is the record of what a
 * verdict was given on), and while a review of its customer is open (the review would read it).
 */
export async function deleteDocument(trx: Tx, blobs: BlobStore, reviews: ReviewLookup, platformId: string, documentId: string): Promise<void> {
  // The customer before the document, as for a replace (customerOf). A deleted customer's
  // documents may still be deleted: no review of it can open.
  await customerOf(trx, platformId, await loadDocument(trx, platformId, documentId), { forShare: true }).catch((error: unknown) => {
    if (!(error instanceof AppError && error.code === 'CUSTOMER_DELETED')) throw error;
  });
  const row = await loadDocument(trx, platformId, documentId, { forUpdate: true });
  if (row.submitted_at) {
    throw new AppError(
      'CONFLICT',
      `Document ${documentId} was submitted for verification and is kept as the record of that review. Replace it (PUT) if a verification rejected it.`,
      { details: { reason: 'SUBMITTED_FOR_VERIFICATION' } },
    );
  }
  if (await reviews.reviewUnderway(trx, platformId, await customerUuidOf(trx, platformId, row))) {
    throw new AppError('CONFLICT', `Document ${documentId} is under an open verification; wait for its verdict before deleting it.`, { details: { reason: 'REVIEW_UNDERWAY' } });
  }
  for (const sha256 of await deleteDocumentRow(trx, row.id)) {
    await blobs.release(trx, sha256, () => blobInUse(trx, sha256));
  }
}

/** A review reads these documents (`Document:<uuid>` ids): they are submitted from now on, and await its verdict. */
export async function recordReviewReading(trx: Tx, clock: Clock, platformId: string, documentIds: string[]): Promise<void> {
  await markSubmitted(trx, platformId, documentIds.map((id) => parseId('Document', id)!), clock.now());
}

/**
 * A review's verdict on the documents it read of these holders (customer and owner uuids):
 * REJECTED for those its errors name (`Document:<uuid>` ids; PUT replaces them), ACCEPTED for the others.
 */
export async function recordReviewVerdict(trx: Tx, platformId: string, holderUuids: string[], rejectedDocumentIds: string[]): Promise<void> {
  await settleVerdicts(trx, platformId, holderUuids, rejectedDocumentIds.map((id) => parseId('Document', id)!));
}

/** Every document held by any of these customers or owners, oldest first. */
export async function documentsOfHolders(db: DbOrTx, platformId: string, holderUuids: string[]): Promise<Document[]> {
  return (await documentsOf(db, platformId, holderUuids)).map(toDocument);
}
