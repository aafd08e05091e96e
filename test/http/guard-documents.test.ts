import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideManualReview } from '../../src/modules/verifications/service.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { cardPhotoJpeg, grayscaleJpeg } from '../helpers/document-files.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { createReviewableIndividual, startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * PUT /documents/{documentId} replaces a document a review rejected, or one no review has judged
 * (spec §4.1 rules 1–3; documents/README.md): a document the latest review accepted is what that
 * verdict was given on, so replacing it is 409 CONFLICT ACCEPTED_IN_REVIEW and changes nothing.
 * A mutation audit found no test reaching that rule (every replace test used a rejected or an
 * unreviewed document).
 */
type Body = Record<string, any>;
let ctx: TestContext;
let p: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext();
  // Production: the review waits for a person's decision, which the test gives.
  p = await ctx.newPlatform('production');
});
afterAll(() => ctx.close());

const call = (method: 'GET' | 'POST', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });

describe('PUT /documents/{documentId} on a document the review accepted', () => {
  it('is 409 CONFLICT ACCEPTED_IN_REVIEW and leaves the document as it was', async () => {
    const customer = await createReviewableIndividual(ctx.app, p, 'guard-accepted');
    const passport = await uploadPdf(ctx.app, p, customer.id, 'PASSPORT');
    const verification = await startVerification(ctx.app, p, customer.id);
    await ctx.jobs.runDue();
    expect(((await call('GET', `/verifications/${verification.id}`)).json() as Body).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    await withTx(ctx.handle.db, (trx) => decideManualReview(trx, ctx.clock, p.uuid, verification.id, { verificationStatus: 'APPROVED' }));
    expect(((await call('GET', `/customers/${String(customer.id)}`)).json() as Body).kycStatus).toBe('APPROVED');

    const before = (await call('GET', `/documents/${String(passport.id)}`)).json() as Body;
    const replaced = await sendDocumentForm(ctx.app, p, 'PUT', `/documents/${String(passport.id)}`, [
      ...textParts({ documentType: 'PASSPORT', country: 'US', documentNumber: 'replacement' }),
      { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() },
    ]);
    expect(expectEnvelope(replaced, 409, 'CONFLICT').details).toEqual({ reason: 'ACCEPTED_IN_REVIEW' });
    // Checked before screening: a file screening would refuse (grayscale) is still 409, not 422.
    const grey = await sendDocumentForm(ctx.app, p, 'PUT', `/documents/${String(passport.id)}`, [
      ...textParts({ documentType: 'PASSPORT', country: 'US' }),
      { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await grayscaleJpeg() },
    ]);
    expect(expectEnvelope(grey, 409, 'CONFLICT').details).toEqual({ reason: 'ACCEPTED_IN_REVIEW' });
    expect((await call('GET', `/documents/${String(passport.id)}`)).json()).toEqual(before);
  });
});
