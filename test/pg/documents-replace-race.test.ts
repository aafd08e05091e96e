/**
 * PUT /documents/{id} while another replace of the same document holds its row and is storing
 * its file (documents/README.md): the replace queues on the document row FOR UPDATE, so the
 * document never has two active files (without the lock the second storing hit the unique index
 * of active files and answered 500).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { holdLocks, openSide, started, waitingFor } from '../helpers/lock-queue.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { createReviewableIndividual, uploadPdf } from '../helpers/verifications.js';

describe.runIf(onPostgres)('a replace while another replace of the same document is storing', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('waits for it on the document row and ends with one active file, its own', async () => {
    const holder = await createReviewableIndividual(ctx.app, ctx.platform, 'replace-race-1');
    const documentId = String((await uploadPdf(ctx.app, ctx.platform, holder.id, 'PASSPORT')).id);
    const uuid = documentId.slice('Document:'.length);
    const [current] = await ctx.handle.db.selectFrom('document_files').selectAll().where('document_id', '=', uuid).execute();

    // The side does what a replace's storing transaction does: the document row, then the files.
    const side = await openSide(ctx.handle.db, 2);
    const held = await holdLocks(side.db, async (trx) => {
      await trx.selectFrom('documents').select('id').where('id', '=', uuid).forUpdate().execute();
      await trx.updateTable('document_files').set({ active: false, deactivated_at: new Date() }).where('document_id', '=', uuid).where('active', '=', true).execute();
      await trx.insertInto('document_files').values({ ...current!, id: randomUUID(), file_name: 'side.jpg', created_at: new Date() }).execute();
    });
    try {
      const replace = started(
        sendDocumentForm(ctx.app, ctx.platform, 'PUT', `/documents/${documentId}`, [
          ...textParts({ documentType: 'PASSPORT', country: 'US' }),
          { name: 'file', filename: 'request.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() },
        ]),
      );
      await waitingFor(side.db, [held.pid], replace);
      await held.release();
      const answer = await replace.request;
      expect(answer.statusCode, answer.body).toBe(200);
      const active = await ctx.handle.db.selectFrom('document_files').select('file_name').where('document_id', '=', uuid).where('active', '=', true).execute();
      expect(active).toEqual([{ file_name: 'request.jpg' }]);
    } finally {
      await held.release();
      await side.close();
    }
  });
});
