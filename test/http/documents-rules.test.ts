import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { createReviewableIndividual, startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * Rules of documents/README.md a mutation audit found no test reaching: a replace is checked
 * for an open review before screening AND again in the transaction that stores it, so a review
 * opened while the file was being screened refuses the replace (409 REVIEW_UNDERWAY).
 */
type Body = Record<string, any>;
let ctx: TestContext;
let p: TestPlatform;
let provider: Server;
/** While set, the screening provider holds its answers until it is released. */
let hold: { entered: () => void; released: Promise<void> } | undefined;

beforeAll(async () => {
  provider = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const answer = () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"precheckErrors":[]}');
      };
      if (!hold) return answer();
      hold.entered();
      void hold.released.then(answer);
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const { port } = provider.address() as AddressInfo;
  ctx = await createTestContext({ env: { CORRIDOR_SCREENING_URL: `http://127.0.0.1:${port}/screen`, CORRIDOR_SCREENING_TIMEOUT_MS: '20000' } });
  p = await ctx.newPlatform('production');
});
afterAll(async () => {
  await ctx.close();
  await new Promise((resolve) => provider.close(resolve));
});

const get = (path: string) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: p.auth } });

describe('PUT /documents/{documentId} while a review opens during its screening', () => {
  it('is 409 CONFLICT REVIEW_UNDERWAY, checked again when storing, and changes nothing', async () => {
    const customer = await createReviewableIndividual(ctx.app, p, 'rules-review-opens');
    const passport = await uploadPdf(ctx.app, p, customer.id, 'PASSPORT');
    const before = (await get(`/documents/${String(passport.id)}`)).json() as Body;

    // The replace passes its first check (no review yet) and waits in screening...
    let entered!: () => void;
    const screening = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    hold = { entered, released: new Promise<void>((resolve) => (release = resolve)) };
    try {
      const replacing = sendDocumentForm(ctx.app, p, 'PUT', `/documents/${String(passport.id)}`, [
        ...textParts({ documentType: 'PASSPORT', country: 'US', documentNumber: 'swapped' }),
        { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() },
      ]);
      await screening;
      // ...while a review of its customer opens, reading the current file.
      const verification = await startVerification(ctx.app, p, customer.id);
      expect(['IN_PROGRESS', 'PENDING_MANUAL_REVIEW']).toContain(verification.verificationStatus);
      release();
      expect(expectEnvelope(await replacing, 409, 'CONFLICT').details).toEqual({ reason: 'REVIEW_UNDERWAY' });
    } finally {
      release();
      hold = undefined;
    }
    expect((await get(`/documents/${String(passport.id)}`)).json()).toEqual(before);
    const files = await ctx.handle.db.selectFrom('document_files').select('active').where('document_id', '=', String(passport.id).slice('Document:'.length)).execute();
    expect(files).toEqual([{ active: true }]);
  });
});
