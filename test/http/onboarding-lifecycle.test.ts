import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentType } from '../../src/modules/documents/catalogue.js';
import { decideManualReview } from '../../src/modules/verifications/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validPdf } from '../helpers/document-files.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { startVerification, uploadPdf, type Verification } from '../helpers/verifications.js';

// The onboarding review's lifecycle: a rejection is final, a manual review ends, what a review
// read stays as it read it (documents, profile, owners), and each status change is announced once.
// verifications/README.md, documents/README.md, customers/README.md, beneficial-owners/README.md.

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

/** A platform whose individuals are not approved at creation, so every status comes from a review. */
async function reviewingPlatform(environment: 'sandbox' | 'production' = 'sandbox'): Promise<TestPlatform> {
  const platform = await ctx.newPlatform(environment);
  expect((await call(platform, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
  return platform;
}

let seq = 0;
const ADDRESS = { line1: '1 Main St', postalCode: '62701', country: 'US' };

async function individual(pl: TestPlatform, extra: Body = {}): Promise<Body> {
  const response = await call(pl, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `life-${++seq}`,
    fullName: 'Jane Doe',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: ADDRESS,
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

async function business(pl: TestPlatform): Promise<{ b: Body; owner: Body }> {
  const created = await call(pl, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId: `life-b-${++seq}`,
    address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'DE-1234567' },
  });
  expect(created.statusCode, created.body).toBe(201);
  const b = created.json() as Body;
  const owner = await addOwner(pl, b.id, 'Lee', 80);
  expect(owner.statusCode, owner.body).toBe(201);
  await doc(pl, b.id, 'CERTIFICATE_OF_INCORPORATION', { documentNumber: 'DE-1234567' });
  await doc(pl, b.id, 'DIRECTOR_REGISTRY');
  await doc(pl, b.id, 'SHAREHOLDER_REGISTER');
  await doc(pl, b.id, 'BANK_STATEMENT');
  await doc(pl, owner.json().id, 'PASSPORT');
  return { b, owner: owner.json() as Body };
}

const addOwner = (pl: TestPlatform, customerId: unknown, lastName: string, ownershipPercentage: number) =>
  call(pl, 'POST', '/beneficial-owners', {
    customerId,
    roles: ['UBO', 'CONTROL_PERSON'],
    ownershipPercentage,
    personalInfo: { firstName: 'Ann', lastName, birthDate: '1975-07-07', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' },
  });

const doc = (pl: TestPlatform, holder: unknown, documentType: DocumentType, extra: Record<string, string> = {}) => uploadPdf(ctx.app, pl, holder, documentType, extra);
const verify = (pl: TestPlatform, customerId: unknown) => startVerification(ctx.app, pl, customerId);
const read = async (pl: TestPlatform, path: string) => (await call(pl, 'GET', path)).json() as Body;
const replace = async (pl: TestPlatform, documentId: unknown, fields: Record<string, string> = { documentType: 'PASSPORT', country: 'US' }) =>
  sendDocumentForm(ctx.app, pl, 'PUT', `/documents/${String(documentId)}`, [
    ...textParts(fields),
    { name: 'file', filename: 'passport.pdf', contentType: 'application/pdf', data: await validPdf() },
  ]);
const decide = (pl: TestPlatform, verificationId: string, decision: Body) => call(pl, 'POST', `/sandbox/verifications/${verificationId}/manual-review`, decision);
/** The events recorded for a resource: type and the status its payload carries. */
const events = async (pl: TestPlatform, resourceId: unknown) =>
  (
    await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('platform_id', '=', pl.uuid).where('resource_id', '=', String(resourceId)).orderBy('id').execute()
  ).map((e) => {
    const data = e.data as Body;
    return [e.type, data.kycStatus ?? data.kybStatus ?? data.verificationStatus];
  });
const accountCount = async (pl: TestPlatform, customerId: unknown) =>
  ((await call(pl, 'GET', `/customers/internal-accounts?customerId=${String(customerId)}`)).json() as { data: unknown[] }).data.length;
/** A sandbox customer with a passport whose review the trigger sends to a person: PENDING_MANUAL_REVIEW. */
async function inManualReview(pl: TestPlatform) {
  const c = await individual(pl, { platformCustomerId: `SANDBOX_MANUAL_REVIEW-${++seq}` });
  const passport = await doc(pl, c.id, 'PASSPORT');
  const v = await verify(pl, c.id);
  await ctx.jobs.runDue();
  expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
  return { c, passport, v };
}
/** 409 CONFLICT, with `details.reason` when one is named. */
const conflict = (response: { statusCode: number; json(): unknown }, why?: string) => {
  const body = expectEnvelope(response, 409, 'CONFLICT');
  if (why) expect(body.details?.reason).toBe(why);
};

describe('a rejection is final', () => {
  it('a customer rejected for a forged document cannot be approved by a new review: the rejection answers, nothing moves', async () => {
    const pl = await reviewingPlatform();
    const c = await individual(pl);
    const forged = await doc(pl, c.id, 'PASSPORT', { documentNumber: 'SANDBOX_FRAUD' });
    const first = await verify(pl, c.id);
    await ctx.jobs.runDue();
    expect(await read(pl, `/verifications/${first.id}`)).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: forged.id, code: 'SUSPECTED_FRAUD' }] });

    // The forged file cannot be swapped for a clean one, nor the record deleted …
    conflict(await replace(pl, forged.id, { documentType: 'PASSPORT', country: 'US', documentNumber: 'P7654321' }), 'CUSTOMER_REJECTED');
    conflict(await call(pl, 'DELETE', `/documents/${String(forged.id)}`), 'SUBMITTED_FOR_VERIFICATION');
    // … and a clean new document and a new review change nothing: the rejection answers.
    await doc(pl, c.id, 'PASSPORT', { documentNumber: 'P7654321' });
    const again = await verify(pl, c.id);
    expect(again).toEqual(await read(pl, `/verifications/${first.id}`));
    expect(await ctx.jobs.runDue()).toBe(0);
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('REJECTED');
    expect(await accountCount(pl, c.id)).toBe(0);
    expect(await events(pl, c.id)).toEqual([
      ['CUSTOMER.KYC_PENDING', 'PENDING'],
      ['CUSTOMER.KYC_REJECTED', 'REJECTED'],
    ]);
    expect(((await read(pl, `/verifications?customerId=${String(c.id)}`)) as { data: unknown[] }).data).toHaveLength(1);
  });

  it('a customer created REJECTED (sandbox 002) gets one REJECTED verification, however often it is asked', async () => {
    const pl = await ctx.newPlatform();
    const c = await individual(pl, { fullName: 'Jane Doe 002' });
    const first = await verify(pl, c.id);
    expect(first).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED' }] });
    expect(await verify(pl, c.id)).toEqual(first);
    expect(await events(pl, first.id)).toEqual([['VERIFICATION.REJECTED', 'REJECTED']]);
    expect(await events(pl, c.id)).toEqual([['CUSTOMER.KYC_REJECTED', 'REJECTED']]);
  });

  it('a customer the platform’s own KYC rejected, with a complete file, gets one REJECTED verification at once: no review is started', async () => {
    const pl = await reviewingPlatform();
    expect((await call(pl, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    const c = await individual(pl, { kycStatus: 'REJECTED' });
    await doc(pl, c.id, 'PASSPORT');
    const first = await verify(pl, c.id);
    expect(first).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED' }] });
    await ctx.jobs.runDue();
    expect(await read(pl, `/verifications/${first.id}`)).toEqual(first);
    expect(await verify(pl, c.id)).toEqual(first);
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('REJECTED');
  });

  it('a review that ends after its customer was rejected (the platform’s own KYC) ends REJECTED, and the customer stays so', async () => {
    const pl = await reviewingPlatform();
    expect((await call(pl, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    const c = await individual(pl);
    await doc(pl, c.id, 'PASSPORT');
    const v = await verify(pl, c.id);
    expect(v.verificationStatus).toBe('IN_PROGRESS');
    expect((await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', kycStatus: 'REJECTED' })).statusCode).toBe(200);
    await ctx.jobs.runDue();
    const ended = await read(pl, `/verifications/${v.id}`);
    expect(ended).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED' }] });
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('REJECTED');
    expect(await accountCount(pl, c.id)).toBe(0);
    expect(await events(pl, c.id)).toEqual([
      ['CUSTOMER.KYC_PENDING', 'PENDING'],
      ['CUSTOMER.KYC_REJECTED', 'REJECTED'],
    ]);
  });
  it('a business whose review ends after the platform rejected it settles the owners it held PENDING: they follow the business', async () => {
    const pl = await reviewingPlatform();
    expect((await call(pl, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    const { b, owner } = await business(pl);
    const v = await verify(pl, b.id);
    expect(v.verificationStatus).toBe('IN_PROGRESS');
    expect((await read(pl, `/beneficial-owners/${String(owner.id)}`)).kycStatus).toBe('PENDING');
    expect((await call(pl, 'PATCH', `/customers/${String(b.id)}`, { customerType: 'BUSINESS', kybStatus: 'REJECTED' })).statusCode).toBe(200);
    await ctx.jobs.runDue();
    expect(await read(pl, `/verifications/${v.id}`)).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: b.id, type: 'APPLICANT_REJECTED' }] });
    expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('REJECTED');
    expect((await read(pl, `/beneficial-owners/${String(owner.id)}`)).kycStatus).toBe('REJECTED');
    expect(await events(pl, b.id)).toEqual([
      ['CUSTOMER.KYB_PENDING', 'PENDING'],
      ['CUSTOMER.KYB_REJECTED', 'REJECTED'],
    ]);
  });
});

describe('a manual review ends', () => {
  it('sandbox: POST /sandbox/verifications/{id}/manual-review approves; meanwhile the review answers again and holds the documents', async () => {
    const pl = await reviewingPlatform();
    const { c, passport, v } = await inManualReview(pl);
    // One open review per customer: starting another answers it.
    expect((await verify(pl, c.id)).id).toBe(v.id);
    conflict(await call(pl, 'DELETE', `/documents/${String(passport.id)}`), 'SUBMITTED_FOR_VERIFICATION');
    conflict(await replace(pl, passport.id), 'REVIEW_UNDERWAY');

    const approved = await decide(pl, v.id, { verificationStatus: 'APPROVED' });
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toMatchObject({ id: v.id, verificationStatus: 'APPROVED', errors: [], updatedAt: ctx.clock.now().toISOString() });
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('APPROVED');
    expect(await accountCount(pl, c.id)).toBe(1);
    // The same verdict again answers it unchanged; another is 409.
    expect((await decide(pl, v.id, { verificationStatus: 'APPROVED' })).json()).toEqual(approved.json());
    conflict(await decide(pl, v.id, { verificationStatus: 'REJECTED' }));
    expect(await events(pl, v.id)).toEqual([
      ['VERIFICATION.IN_PROGRESS', 'IN_PROGRESS'],
      ['VERIFICATION.PENDING_MANUAL_REVIEW', 'PENDING_MANUAL_REVIEW'],
      ['VERIFICATION.APPROVED', 'APPROVED'],
    ]);
    expect(await events(pl, c.id)).toEqual([
      ['CUSTOMER.KYC_PENDING', 'PENDING'],
      ['CUSTOMER.KYC_APPROVED', 'APPROVED'],
    ]);
  });

  it('sandbox 001: rejects with the reviewer’s reason; the customer is REJECTED once', async () => {
    const pl = await ctx.newPlatform();
    const c = await individual(pl, { fullName: 'Jane Doe 001' });
    await doc(pl, c.id, 'PASSPORT');
    const v = await verify(pl, c.id);
    expect(v.verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    const rejected = await decide(pl, v.id, { verificationStatus: 'REJECTED', reason: 'Address could not be confirmed.' });
    expect(rejected.statusCode, rejected.body).toBe(200);
    expect(rejected.json()).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED', reason: 'Address could not be confirmed.' }] });
    expect(await events(pl, c.id)).toEqual([
      ['CUSTOMER.KYC_PENDING', 'PENDING'],
      ['CUSTOMER.KYC_REJECTED', 'REJECTED'],
    ]);
  });

  it('sandbox endpoint: 403 on production, 404 unknown, 400 bad body, 409 for a verification that is not waiting', async () => {
    const pl = await reviewingPlatform();
    const prod = await reviewingPlatform('production');
    const missing = await verify(pl, (await individual(pl, { address: undefined })).id);
    expectEnvelope(await decide(prod, missing.id, { verificationStatus: 'APPROVED' }), 403, 'FORBIDDEN');
    expectEnvelope(await decide(pl, 'Verification:019542f5-b3e7-7d02-8000-000000000001', { verificationStatus: 'APPROVED' }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await decide(pl, missing.id, { verificationStatus: 'IN_PROGRESS' }), 400, 'INVALID_INPUT');
    expectEnvelope(await decide(pl, missing.id, { verificationStatus: 'APPROVED' }), 409, 'CONFLICT');
    expect((await read(pl, `/verifications/${missing.id}`)).verificationStatus).toBe('RESOLVE_ERRORS');
  });

  it('production: a clean review waits for the operator, whose decision (decideManualReview) ends it', async () => {
    const prod = await reviewingPlatform('production');
    const c = await individual(prod);
    await doc(prod, c.id, 'PASSPORT');
    const v = await verify(prod, c.id);
    await ctx.jobs.runDue();
    expect((await read(prod, `/verifications/${v.id}`)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    const decided = await withTx(ctx.handle.db, (trx) => decideManualReview(trx, ctx.clock, prod.uuid, v.id, { verificationStatus: 'APPROVED' }));
    expect(decided).toMatchObject({ id: v.id, verificationStatus: 'APPROVED' });
    expect((await read(prod, `/customers/${String(c.id)}`)).kycStatus).toBe('APPROVED');
    expect(await events(prod, c.id)).toEqual([
      ['CUSTOMER.KYC_PENDING', 'PENDING'],
      ['CUSTOMER.KYC_APPROVED', 'APPROVED'],
    ]);
  });
});

describe('documents a review read', () => {
  it('an approved customer can neither delete nor retype the documents it was approved on; a later upload is its own', async () => {
    const pl = await reviewingPlatform();
    const c = await individual(pl);
    const passport = await doc(pl, c.id, 'PASSPORT');
    const v = await verify(pl, c.id);
    // While the review runs, its documents are held.
    conflict(await replace(pl, passport.id), 'REVIEW_UNDERWAY');
    await ctx.jobs.runDue();
    expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('APPROVED');

    conflict(await call(pl, 'DELETE', `/documents/${String(passport.id)}`), 'SUBMITTED_FOR_VERIFICATION');
    conflict(await replace(pl, passport.id, { documentType: 'UTILITY_BILL', country: 'US' }), 'ACCEPTED_IN_REVIEW');
    expect(await read(pl, `/documents/${String(passport.id)}`)).toEqual(passport);

    const later = await doc(pl, c.id, 'UTILITY_BILL');
    expect((await replace(pl, later.id, { documentType: 'ELECTRICITY_BILL', country: 'US' })).statusCode).toBe(200);
    expect((await call(pl, 'DELETE', `/documents/${String(later.id)}`)).statusCode).toBe(204);
  });

  it('a document rejected in review is replaced (again if need be) but not deleted; a review that stopped at missing requirements read none', async () => {
    const pl = await reviewingPlatform();
    const c = await individual(pl, { birthDate: undefined });
    const early = await doc(pl, c.id, 'SELFIE');
    expect((await verify(pl, c.id)).verificationStatus).toBe('RESOLVE_ERRORS');
    expect((await call(pl, 'DELETE', `/documents/${String(early.id)}`)).statusCode).toBe(204);

    expect((await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', birthDate: '1990-01-15' })).statusCode).toBe(200);
    const foreign = await doc(pl, c.id, 'PASSPORT', { country: 'CA' });
    const v = await verify(pl, c.id);
    await ctx.jobs.runDue();
    expect(await read(pl, `/verifications/${v.id}`)).toMatchObject({ verificationStatus: 'RESOLVE_ERRORS', errors: [{ resourceId: foreign.id, code: 'DATA_MISMATCH' }] });
    conflict(await call(pl, 'DELETE', `/documents/${String(foreign.id)}`), 'SUBMITTED_FOR_VERIFICATION');
    expect((await replace(pl, foreign.id, { documentType: 'PASSPORT', country: 'GB' })).statusCode).toBe(200);
    // A review that stops at something missing does not judge the new file: it can still be replaced.
    expect((await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', address: { ...ADDRESS, line2: 'Apt 1' } })).statusCode).toBe(200);
    expect((await replace(pl, foreign.id)).statusCode).toBe(200);
    const second = await verify(pl, c.id);
    await ctx.jobs.runDue();
    expect((await read(pl, `/verifications/${second.id}`)).verificationStatus).toBe('APPROVED');
    conflict(await replace(pl, foreign.id), 'ACCEPTED_IN_REVIEW');
  });

  it('a document uploaded while a review waits for a person is held until the verdict (REVIEW_UNDERWAY), then is its own', async () => {
    const pl = await reviewingPlatform();
    const { c, v } = await inManualReview(pl);
    const meanwhile = await doc(pl, c.id, 'UTILITY_BILL');
    conflict(await call(pl, 'DELETE', `/documents/${String(meanwhile.id)}`), 'REVIEW_UNDERWAY');
    conflict(await replace(pl, meanwhile.id, { documentType: 'UTILITY_BILL', country: 'US' }), 'REVIEW_UNDERWAY');
    expect(await read(pl, `/documents/${String(meanwhile.id)}`)).toEqual(meanwhile);

    expect((await decide(pl, v.id, { verificationStatus: 'APPROVED' })).statusCode).toBe(200);
    // The person decided on what the review read; the later upload was not part of it.
    expect((await replace(pl, meanwhile.id, { documentType: 'ELECTRICITY_BILL', country: 'US' })).statusCode).toBe(200);
    expect((await call(pl, 'DELETE', `/documents/${String(meanwhile.id)}`)).statusCode).toBe(204);
  });

  it('a deleted customer’s document cannot be replaced (410 CUSTOMER_DELETED); a manual review of it ends REJECTED', async () => {
    const pl = await reviewingPlatform();
    const { c, passport, v } = await inManualReview(pl);
    expect((await call(pl, 'DELETE', `/customers/${String(c.id)}`)).statusCode).toBe(200);
    expectEnvelope(await replace(pl, passport.id), 410, 'CUSTOMER_DELETED');

    const ended = await decide(pl, v.id, { verificationStatus: 'APPROVED' });
    expect(ended.statusCode, ended.body).toBe(200);
    expect(ended.json()).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED' }] });
    expect((await events(pl, v.id)).at(-1)).toEqual(['VERIFICATION.REJECTED', 'REJECTED']);
  });
});

describe('what a review reads stays as it read it', () => {
  it('PATCH /customers cannot change the profile while a review is open; contact fields can; after the verdict it can', async () => {
    const pl = await reviewingPlatform();
    const c = await individual(pl, { platformCustomerId: `SANDBOX_MANUAL_REVIEW-${++seq}` });
    await doc(pl, c.id, 'PASSPORT');
    const v = await verify(pl, c.id);
    const renamed = await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', fullName: 'Someone Else', email: 'jane@example.com' });
    expect(expectEnvelope(renamed, 409, 'CONFLICT').details).toEqual({ reason: 'UNDER_REVIEW', fields: ['fullName'] });
    expect((await read(pl, `/customers/${String(c.id)}`)).email).toBeUndefined();
    // Sending what is on file changes nothing, so it is not refused.
    expect((await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', email: 'jane@example.com' })).statusCode).toBe(200);
    conflict(await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', identifier: '123-45-6789', idType: 'SSN' }), 'UNDER_REVIEW');
    // The tax identifier too: the one on file, sent again, is no change.
    const identified = await individual(pl, { platformCustomerId: `SANDBOX_MANUAL_REVIEW-${++seq}`, idType: 'SSN', identifier: '123-45-6789' });
    await doc(pl, identified.id, 'PASSPORT');
    await verify(pl, identified.id);
    const same = await call(pl, 'PATCH', `/customers/${String(identified.id)}`, { customerType: 'INDIVIDUAL', idType: 'SSN', identifier: '123-45-6789' });
    expect(same.statusCode, same.body).toBe(200);
    const other = await call(pl, 'PATCH', `/customers/${String(identified.id)}`, { customerType: 'INDIVIDUAL', idType: 'SSN', identifier: '123-45-6780' });
    expect(expectEnvelope(other, 409, 'CONFLICT').details).toEqual({ reason: 'UNDER_REVIEW', fields: ['identifier'] });

    await ctx.jobs.runDue();
    expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    conflict(await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', nationality: 'CA' }), 'UNDER_REVIEW');
    expect((await decide(pl, v.id, { verificationStatus: 'APPROVED' })).statusCode).toBe(200);
    expect((await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Q. Doe' })).statusCode).toBe(200);
  });

  it('beneficial owners cannot be added or changed while the business is reviewed; a changed person is UNVERIFIED again after approval', async () => {
    const pl = await reviewingPlatform();
    const { b, owner } = await business(pl);
    const v = await verify(pl, b.id);
    expect(v.verificationStatus).toBe('IN_PROGRESS');
    conflict(await addOwner(pl, b.id, 'Park', 10), 'UNDER_REVIEW');
    conflict(await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { personalInfo: { lastName: 'Kim' } }), 'UNDER_REVIEW');
    await ctx.jobs.runDue();
    expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('APPROVED');
    expect((await read(pl, `/beneficial-owners/${String(owner.id)}`)).kycStatus).toBe('APPROVED');

    // Roles and shares are the business's structure, judged again by its next review; the person is unchanged.
    const reshared = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { ownershipPercentage: 70, personalInfo: { lastName: 'Lee' } });
    expect(reshared.statusCode, reshared.body).toBe(200);
    expect((reshared.json() as Body).kycStatus).toBe('APPROVED');
    const renamed = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { personalInfo: { lastName: 'Kim' } });
    expect((renamed.json() as Body).kycStatus).toBe('UNVERIFIED');
    expect((await addOwner(pl, b.id, 'Park', 10)).json()).toMatchObject({ kycStatus: 'UNVERIFIED' });
    expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('UNVERIFIED');
    expect(await events(pl, b.id)).toEqual([
      ['CUSTOMER.KYB_PENDING', 'PENDING'],
      ['CUSTOMER.KYB_APPROVED', 'APPROVED'],
    ]);
  });
});

describe('GET /verifications filters', () => {
  it('narrows by customer and status together, and counts that', async () => {
    const pl = await reviewingPlatform();
    const c = await individual(pl, { address: undefined });
    const other = await individual(pl, { address: undefined });
    await verify(pl, c.id);
    await verify(pl, other.id);
    expect((await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', address: ADDRESS })).statusCode).toBe(200);
    await doc(pl, c.id, 'PASSPORT');
    const running = await verify(pl, c.id);
    const both = (await read(pl, `/verifications?customerId=${String(c.id)}&verificationStatus=IN_PROGRESS`)) as { data: Verification[]; totalCount: number };
    expect(both.data.map((v) => v.id)).toEqual([running.id]);
    expect(both.totalCount).toBe(1);
    expect(((await read(pl, `/verifications?customerId=${String(c.id)}&verificationStatus=APPROVED`)) as { data: unknown[]; totalCount: number })).toMatchObject({ data: [], totalCount: 0 });
    expect(((await read(pl, '/verifications?verificationStatus=RESOLVE_ERRORS')) as { data: unknown[] }).data).toHaveLength(2);
  });
});
