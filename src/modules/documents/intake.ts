import type { FastifyRequest } from 'fastify';
import { DatabaseBlobStore, type BlobStore } from '../../platform/blob-store.js';
import type { Clock } from '../../platform/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { UploadSpool } from '../../platform/http/multipart.js';
import type { Config } from '../../config.js';
import type { Document, DocumentUploadFields } from './schemas.js';
import { ScreeningProviders } from './screening/index.js';
import { checkReplace, createDocument, getDocument, replaceDocument, screenUpload } from './service.js';
import { receiveDocumentForm } from './upload.js';

/**
 * Where uploaded documents come in: the spool their bytes wait in, the screeners that judge
 * them and the store that keeps them. One per app, shared by the documents API and the hosted
 * verification page (verifications), so a file uploaded either way is screened and stored alike.
 */
export class DocumentIntake {
  private constructor(
    private readonly deps: { db: Db; clock: Clock },
    readonly blobs: BlobStore,
    readonly screening: ScreeningProviders,
    readonly spool: UploadSpool,
    /** Whether `screening` is this intake's own (then its parsing workers end with it). */
    private readonly ownsScreening: boolean,
  ) {}

  static async open(deps: { db: Db; clock: Clock; config: Config; blobs?: BlobStore; screening?: ScreeningProviders }): Promise<DocumentIntake> {
    return new DocumentIntake(
      deps,
      deps.blobs ?? new DatabaseBlobStore(() => deps.clock.now()),
      deps.screening ?? new ScreeningProviders(deps.config),
      await UploadSpool.open(deps.config.uploadDir),
      deps.screening === undefined,
    );
  }

  /**
   * Receives a multipart upload (400 listing every bad part), lets `check` refuse its fields
   * (e.g. a holder the caller may not name), screens the file (422 DOCUMENT_REJECTED) and
   * stores the document; the spooled bytes are dropped whatever happens. `beforeStore` runs first
   * in the transaction that stores it: what it locks stays locked until the document is
   * committed, and what it throws stores nothing (the hosted page holds its link open there).
   */
  async upload(
    request: FastifyRequest,
    platformId: string,
    environment: 'sandbox' | 'production',
    check: (fields: DocumentUploadFields) => Promise<void>,
    beforeStore?: (trx: Tx) => Promise<void>,
  ): Promise<Document> {
    const form = await receiveDocumentForm(request, this.spool, 'upload');
    try {
      await check(form.fields);
      await screenUpload(this.screening.for(environment), platformId, form.fields, form.file);
      return await withTx(this.deps.db, async (trx) => {
        await beforeStore?.(trx);
        return createDocument(trx, this.deps.clock, this.blobs, platformId, form.fields, form.file);
      });
    } finally {
      await form.discard();
    }
  }

  /**
   * As `upload`, replacing an existing document's file and metadata: 404 for an unknown document,
   * before the form is read (a path id is checked before the body, docs/conventions.md), then 409
   * when it may not be replaced now (an open review, a rejected customer, a file accepted in
   * review: documents/README.md), checked before screening and again when storing.
   */
  async replace(
    request: FastifyRequest,
    platformId: string,
    environment: 'sandbox' | 'production',
    documentId: string,
    beforeStore?: (trx: Tx) => Promise<void>,
  ): Promise<Document> {
    await getDocument(this.deps.db, platformId, documentId);
    const form = await receiveDocumentForm(request, this.spool, 'replace');
    try {
      await checkReplace(this.deps.db, platformId, documentId);
      await screenUpload(this.screening.for(environment), platformId, form.fields, form.file);
      return await withTx(this.deps.db, async (trx) => {
        await beforeStore?.(trx);
        return replaceDocument(trx, this.deps.clock, this.blobs, platformId, documentId, form.fields, form.file);
      });
    } finally {
      await form.discard();
    }
  }

  async close(): Promise<void> {
    await this.spool.close();
    if (this.ownsScreening) await this.screening.close();
  }
}
