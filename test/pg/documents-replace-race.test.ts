/**
 * PUT /documents/{id} while another replace of the same document holds its row and is storing
 * its file (documents/README.md): the replace queues on the document row FOR UPDATE, so the
 * document never has two active files (without the lock the second storing hit the unique index
 * of active files and answered 500).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { holdLocks, openSide, started, waiterBehind } from '../helpers/lock-queue.js';
import { sendDocumentForm, textParts, type Part } from '../helpers/multipart.js';

type Body = Record<string, unknown>;

async function newCustomer(ctx: TestContext): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: ctx.platform.auth },
    payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'replace-race-1', fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as Body).id as string;
}

const photoPart = async (): Promise<Part> => ({ name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() });

describe.runIf(onPostgres)('a replace while another replace of the same document is storing', () => {
  let ctx: TestContext;
  let holder: string;
  beforeAll(async () => {
    ctx = await createTestContext();
    holder = await newCustomer(ctx);
  });
  afterAll(() => ctx.close());

  it('waits for it on the document row and ends with one active file, its own', async () => {
    const uploaded = await sendDocumentForm(ctx.app, ctx.platform, 'POST', '/documents', [
      ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }),
      await photoPart(),
    ]);
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const documentId = (uploaded.json() as Body).id as string;
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
          { ...(await photoPart()), filename: 'request.jpg' },
        ]),
      );
      await waiterBehind(side.db, [held.pid], { answered: replace.answered });
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
