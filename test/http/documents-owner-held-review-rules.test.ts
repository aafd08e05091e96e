import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideManualReview } from '../../src/modules/verifications/service.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * The replace and delete rules of documents (documents/README.md) hold for a document a
 * beneficial owner holds as for one its business holds: the business's review state is found
 * through the owner. While the business's review is open, replacing the owner's passport or
 * deleting an owner's document uploaded meanwhile is 409 REVIEW_UNDERWAY; once the business is
 * REJECTED, replacing is 409 CUSTOMER_REJECTED (a rejection is final: the evidence stays).
 */

type Body = Record<string, any>;
const ADDRESS = { line1: '1 Main St', postalCode: '62701', country: 'US' };

let ctx: TestContext;
let p: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext();
  // Production: with every document on file the review waits for a person (PENDING_MANUAL_REVIEW).
  p = await ctx.newPlatform('production');
});
afterAll(() => ctx.close());

const call = (method: 'GET' | 'POST' | 'DELETE', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });
const replacePassport = async (documentId: string) =>
  sendDocumentForm(ctx.app, p, 'PUT', `/documents/${documentId}`, [
    ...textParts({ documentType: 'PASSPORT', country: 'US' }),
    { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() },
  ]);
const document = async (id: string) => (await call('GET', `/documents/${id}`)).json() as Body;

describe("a beneficial owner's documents during and after its business's review", () => {
  it('are 409 REVIEW_UNDERWAY while the review is open and 409 CUSTOMER_REJECTED once the business is rejected; nothing changes', async () => {
    const created = await call('POST', '/customers', {
      customerType: 'BUSINESS',
      platformCustomerId: 'owner-docs',
      address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
      businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'DE-1234567' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const business = created.json() as Body;
    const added = await call('POST', '/beneficial-owners', {
      customerId: business.id,
      roles: ['UBO', 'CONTROL_PERSON'],
      ownershipPercentage: 80,
      personalInfo: { firstName: 'Ann', lastName: 'Lee', birthDate: '1975-07-07', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' },
    });
    expect(added.statusCode, added.body).toBe(201);
    const owner = added.json() as Body;
    await uploadPdf(ctx.app, p, business.id, 'CERTIFICATE_OF_INCORPORATION', { documentNumber: 'DE-1234567' });
    await uploadPdf(ctx.app, p, business.id, 'DIRECTOR_REGISTRY');
    await uploadPdf(ctx.app, p, business.id, 'SHAREHOLDER_REGISTER');
    await uploadPdf(ctx.app, p, business.id, 'BANK_STATEMENT');
    const passport = await uploadPdf(ctx.app, p, owner.id, 'PASSPORT');

    const verification = await startVerification(ctx.app, p, business.id);
    await ctx.jobs.runDue();
    expect(((await call('GET', `/verifications/${verification.id}`)).json() as Body).verificationStatus).toBe('PENDING_MANUAL_REVIEW');

    const before = await document(passport.id as string);
    expect(expectEnvelope(await replacePassport(passport.id as string), 409, 'CONFLICT').details).toEqual({ reason: 'REVIEW_UNDERWAY' });
    const meanwhile = await uploadPdf(ctx.app, p, owner.id, 'UTILITY_BILL');
    expect(expectEnvelope(await call('DELETE', `/documents/${meanwhile.id}`), 409, 'CONFLICT').details).toEqual({ reason: 'REVIEW_UNDERWAY' });

    await withTx(ctx.handle.db, (trx) => decideManualReview(trx, ctx.clock, p.uuid, verification.id, { verificationStatus: 'REJECTED', reason: 'Forged passport.' }));
    expect(((await call('GET', `/customers/${business.id}`)).json() as Body).kybStatus).toBe('REJECTED');
    expect(expectEnvelope(await replacePassport(passport.id as string), 409, 'CONFLICT').details).toEqual({ reason: 'CUSTOMER_REJECTED' });
    expect(await document(passport.id as string)).toEqual(before);
    expect((await call('GET', `/documents/${meanwhile.id}`)).statusCode).toBe(200);
  });
});
