import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentType } from '../../src/modules/documents/catalogue.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf, type Verification } from '../helpers/verifications.js';

let ctx: TestContext;
let p: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext();
  p = await sandboxWithReview();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function sandboxWithReview(environment: 'sandbox' | 'production' = 'sandbox'): Promise<TestPlatform> {
  const platform = await ctx.newPlatform(environment);
  expect((await call(platform, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
  return platform;
}

let seq = 0;
async function individual(pl: TestPlatform, extra: Body = {}): Promise<Body> {
  const response = await call(pl, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `v-${++seq}`,
    fullName: 'Jane Doe',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

async function business(pl: TestPlatform, extra: Body = {}): Promise<Body> {
  const response = await call(pl, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId: `b-${++seq}`,
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'DE-1234567' },
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

type DocumentExtra = { side?: 'FRONT' | 'BACK'; country?: string; documentNumber?: string };

const doc = (pl: TestPlatform, holder: unknown, documentType: DocumentType, extra: DocumentExtra = {}) => uploadPdf(ctx.app, pl, holder, documentType, extra);
const verify = (pl: TestPlatform, customerId: unknown) => startVerification(ctx.app, pl, customerId);

const read = async (pl: TestPlatform, id: string) => (await call(pl, 'GET', `/verifications/${id}`)).json() as Verification;
const customer = async (pl: TestPlatform, id: unknown) => (await call(pl, 'GET', `/customers/${String(id)}`)).json() as Body;
const eventTypes = async (pl: TestPlatform, resourceId: unknown) =>
  (await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', pl.uuid).where('resource_id', '=', String(resourceId)).orderBy('id').execute()).map(
    (e) => e.type,
  );

const IDENTITY = ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID'];

describe('POST /verifications: requirements', () => {
  it('answers RESOLVE_ERRORS naming each missing field and the identity documents accepted', async () => {
    const c = await individual(p, { birthDate: undefined, nationality: undefined, address: undefined });
    const v = await verify(p, c.id);
    expect(v).toEqual({
      id: expect.stringMatching(/^Verification:[0-9a-f-]{36}$/),
      customerId: c.id,
      verificationStatus: 'RESOLVE_ERRORS',
      errors: [
        { resourceId: c.id, type: 'MISSING_FIELD', field: 'customer.birthDate', reason: expect.any(String) },
        { resourceId: c.id, type: 'MISSING_FIELD', field: 'customer.nationality', reason: expect.any(String) },
        { resourceId: c.id, type: 'MISSING_FIELD', field: 'customer.address', reason: expect.any(String) },
        { resourceId: c.id, type: 'MISSING_IDENTITY_DOCUMENT', acceptedDocumentTypes: IDENTITY, reason: expect.any(String) },
      ],
      createdAt: ctx.clock.now().toISOString(),
      updatedAt: ctx.clock.now().toISOString(),
    });
    expect(await read(p, v.id)).toEqual(v);
    expect((await customer(p, c.id)).kycStatus).toBe('UNVERIFIED');
    expect(await eventTypes(p, v.id)).toEqual(['VERIFICATION.RESOLVE_ERRORS']);
    expect(await ctx.jobs.runDue()).toBe(0);
  });

  it('lists every missing business requirement, then owner problems', async () => {
    const b = await business(p);
    let v = await verify(p, b.id);
    expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(v.errors.map((e) => [e.type, e.field ?? e.acceptedDocumentTypes ?? null])).toEqual([
      ['MISSING_FIELD', 'customer.address'],
      ['MISSING_LEGAL_PRESENCE_DOCUMENT', ['CERTIFICATE_OF_INCORPORATION', 'ARTICLES_OF_INCORPORATION', 'ARTICLES_OF_ASSOCIATION', 'STATE_REGISTRY_EXCERPT']],
      ['MISSING_CONTROL_STRUCTURE_DOCUMENT', ['DIRECTOR_REGISTRY', 'TRUST_AGREEMENT', 'STATE_COMPANY_REGISTRY', 'PARTNERSHIP_CONTROL_AGREEMENT']],
      ['MISSING_OWNERSHIP_STRUCTURE_DOCUMENT', ['SHAREHOLDER_REGISTER', 'TRUST_AGREEMENT', 'PARTNERSHIP_AGREEMENT']],
      ['MISSING_PROOF_OF_ADDRESS_DOCUMENT', ['UTILITY_BILL', 'RENT_OR_LEASE_AGREEMENT', 'ELECTRICITY_BILL', 'BANK_STATEMENT', 'TAX_RETURN']],
      ['MISSING_BENEFICIAL_OWNER', null],
    ]);
    const bo = (await call(p, 'POST', '/beneficial-owners', {
      customerId: b.id,
      roles: ['UBO'],
      ownershipPercentage: 100,
      personalInfo: {
        firstName: 'Ola',
        lastName: 'Nord',
        birthDate: '1970-01-01',
        nationality: 'NO',
        address: { line1: 'Gate 1', postalCode: '0150', country: 'NO' },
        idType: 'NON_US_TAX_ID',
        identifier: '01017012345',
      },
    })).json() as Body;
    v = await verify(p, b.id);
    expect(v.errors.filter((e) => ['MISSING_CONTROL_PERSON', 'MISSING_IDENTITY_DOCUMENT', 'MISSING_BENEFICIAL_OWNER'].includes(String(e.type)))).toEqual([
      { resourceId: b.id, type: 'MISSING_CONTROL_PERSON', reason: expect.any(String) },
      { resourceId: bo.id, type: 'MISSING_IDENTITY_DOCUMENT', acceptedDocumentTypes: IDENTITY, reason: 'Upload an identity document for Ola Nord.' },
    ]);
  });

  it("answers 404 for another platform's customer, 410 for a deleted one, 400 for a bad body", async () => {
    const other = await sandboxWithReview();
    const theirs = await individual(other);
    expectEnvelope(await call(p, 'POST', '/verifications', { customerId: theirs.id }), 404, 'USER_NOT_FOUND');
    const gone = await individual(p);
    await call(p, 'DELETE', `/customers/${String(gone.id)}`);
    expectEnvelope(await call(p, 'POST', '/verifications', { customerId: gone.id }), 410, 'CUSTOMER_DELETED');
    const bad = expectEnvelope(await call(p, 'POST', '/verifications', { customerId: 'Customer:nope', extra: 1 }), 400, 'INVALID_INPUT');
    expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['customerId', 'extra']);
    expect((await call(p, 'GET', `/verifications?customerId=${String(theirs.id)}`)).json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
  });
});

describe('background review', () => {
  it('approves a complete sandbox individual, opening accounts and recording events', async () => {
    const c = await individual(p);
    await doc(p, c.id, 'PASSPORT', { documentNumber: 'P1234567' });
    await doc(p, c.id, 'SELFIE');
    const v = await verify(p, c.id);
    expect(v).toMatchObject({ verificationStatus: 'IN_PROGRESS', errors: [] });
    expect((await customer(p, c.id)).kycStatus).toBe('PENDING');
    expect(await verify(p, c.id)).toEqual(v);
    ctx.clock.advance(2000);
    expect(await ctx.jobs.runDue()).toBe(1);
    expect(await read(p, v.id)).toEqual({ ...v, verificationStatus: 'APPROVED', updatedAt: ctx.clock.now().toISOString() });
    expect((await customer(p, c.id)).kycStatus).toBe('APPROVED');
    const accounts = (await call(p, 'GET', `/customers/internal-accounts?customerId=${String(c.id)}`)).json() as { data: Body[] };
    expect(accounts.data.map((a) => a.type)).toEqual(['INTERNAL_FIAT']);
    expect(await eventTypes(p, c.id)).toEqual(['CUSTOMER.KYC_PENDING', 'CUSTOMER.KYC_APPROVED']);
    expect(await eventTypes(p, v.id)).toEqual(['VERIFICATION.IN_PROGRESS', 'VERIFICATION.APPROVED']);
    expect(await ctx.jobs.runDue()).toBe(0);
  });

  it('rejects documents by rule, keeps the errors until a new verification gives a new verdict', async () => {
    const c = await individual(p);
    const front = await doc(p, c.id, 'DRIVERS_LICENSE', { side: 'FRONT' });
    const foreign = await doc(p, c.id, 'PASSPORT', { country: 'CA' });
    const wrong = await doc(p, c.id, 'CERTIFICATE_OF_INCORPORATION');
    const bill = await doc(p, c.id, 'UTILITY_BILL', { country: 'GB' });
    const first = await verify(p, c.id);
    expect(first.verificationStatus).toBe('IN_PROGRESS');
    await ctx.jobs.runDue();
    const reviewed = await read(p, first.id);
    expect(reviewed.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(reviewed.errors).toEqual([
      { resourceId: front.id, type: 'INCOMPLETE_DOCUMENT', code: 'INCOMPLETE', field: 'side', reason: 'The BACK of this DRIVERS_LICENSE is missing.' },
      { resourceId: foreign.id, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', field: 'country', reason: expect.stringContaining('nationality on file is US') },
      { resourceId: wrong.id, type: 'WRONG_DOCUMENT_TYPE', code: 'UNSUITABLE_DOCUMENT', acceptedDocumentTypes: expect.arrayContaining(IDENTITY), reason: expect.any(String) },
      { resourceId: bill.id, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', field: 'country', reason: expect.stringContaining('address on file is in US') },
    ]);
    expect((await customer(p, c.id)).kycStatus).toBe('UNVERIFIED');

    // The fixes alone change nothing already decided.
    await doc(p, c.id, 'DRIVERS_LICENSE', { side: 'BACK' });
    await call(p, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', nationality: 'CA', address: { line1: '1 Bay St', postalCode: 'M5J', country: 'GB' } });
    expect((await read(p, first.id)).errors).toHaveLength(4);
    const filtered = (await call(p, 'GET', `/verifications?customerId=${String(c.id)}`)).json() as { data: Verification[] };
    expect(filtered.data.map((v) => v.verificationStatus)).toEqual(['RESOLVE_ERRORS']);

    const second = await verify(p, c.id);
    await ctx.jobs.runDue();
    const again = await read(p, second.id);
    expect(again.errors).toEqual([{ resourceId: wrong.id, type: 'WRONG_DOCUMENT_TYPE', code: 'UNSUITABLE_DOCUMENT', acceptedDocumentTypes: expect.any(Array), reason: expect.any(String) }]);
    expect((await read(p, first.id)).errors).toHaveLength(4);
  });

  it('applies the documented sandbox triggers', async () => {
    const fraud = await individual(p);
    await doc(p, fraud.id, 'PASSPORT', { documentNumber: 'x-sandbox_fraud-1' });
    const expired = await individual(p);
    const expiredDoc = await doc(p, expired.id, 'PASSPORT', { documentNumber: 'SANDBOX_EXPIRED' });
    const rejected = await individual(p, { platformCustomerId: 'user-SANDBOX_REJECT' });
    await doc(p, rejected.id, 'PASSPORT');
    const manual = await individual(p, { platformCustomerId: 'user-SANDBOX_MANUAL_REVIEW' });
    await doc(p, manual.id, 'NATIONAL_ID', { side: 'FRONT' });
    await doc(p, manual.id, 'NATIONAL_ID', { side: 'BACK' });
    const blurry = await individual(p);
    const blurryDoc = await doc(p, blurry.id, 'PASSPORT', { documentNumber: 'SANDBOX_LOW_QUALITY' });
    const applicants = [fraud, expired, rejected, manual, blurry];
    const started = [];
    for (const c of applicants) started.push((await verify(p, c.id)).id);
    expect(await ctx.jobs.runDue()).toBe(5);
    const [f, e, r, m, b] = await Promise.all(started.map((id) => read(p, id)));
    expect(b).toMatchObject({ verificationStatus: 'RESOLVE_ERRORS', errors: [{ resourceId: blurryDoc.id, type: 'POOR_QUALITY_DOCUMENT', code: 'LOW_QUALITY' }] });
    expect(f).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ type: 'SUSPECTED_FRAUD_DOCUMENT', code: 'SUSPECTED_FRAUD' }] });
    expect(e).toMatchObject({ verificationStatus: 'RESOLVE_ERRORS', errors: [{ resourceId: expiredDoc.id, type: 'EXPIRED_DOCUMENT', code: 'EXPIRED' }] });
    expect(r).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: rejected.id, type: 'APPLICANT_REJECTED' }] });
    expect(m).toMatchObject({ verificationStatus: 'PENDING_MANUAL_REVIEW', errors: [] });
    expect((await customer(p, fraud.id)).kycStatus).toBe('REJECTED');
    expect((await customer(p, rejected.id)).kycStatus).toBe('REJECTED');
    expect((await customer(p, manual.id)).kycStatus).toBe('PENDING');
    expect(await eventTypes(p, rejected.id)).toEqual(['CUSTOMER.KYC_PENDING', 'CUSTOMER.KYC_REJECTED']);
    const list = (await call(p, 'GET', '/verifications?verificationStatus=REJECTED')).json() as { data: Verification[] };
    expect(list.data.map((v) => v.id).sort()).toEqual([started[0], started[2]].sort());
  });

  it('leaves production applicants for manual review and ignores sandbox triggers there', async () => {
    const prod = await sandboxWithReview('production');
    const c = await individual(prod, { platformCustomerId: 'SANDBOX_REJECT' });
    await doc(prod, c.id, 'PASSPORT', { documentNumber: 'SANDBOX_FRAUD' });
    const v = await verify(prod, c.id);
    await ctx.jobs.runDue();
    expect(await read(prod, v.id)).toMatchObject({ verificationStatus: 'PENDING_MANUAL_REVIEW', errors: [] });
    expect((await customer(prod, c.id)).kycStatus).toBe('PENDING');
  });

  async function completeBusiness(pl: TestPlatform, certificateNumber: string) {
    const b = await business(pl, { address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' } });
    const bo = (await call(pl, 'POST', '/beneficial-owners', {
      customerId: b.id,
      roles: ['UBO', 'CONTROL_PERSON'],
      ownershipPercentage: 80,
      personalInfo: {
        firstName: 'Ann',
        lastName: 'Lee',
        birthDate: '1975-07-07',
        nationality: 'US',
        address: { line1: '2 Elm St', postalCode: '78702', country: 'US' },
        idType: 'SSN',
        identifier: '123-45-6789',
      },
    })).json() as Body;
    const cert = await doc(pl, b.id, 'CERTIFICATE_OF_INCORPORATION', { documentNumber: certificateNumber });
    await doc(pl, b.id, 'DIRECTOR_REGISTRY');
    await doc(pl, b.id, 'SHAREHOLDER_REGISTER');
    await doc(pl, b.id, 'BANK_STATEMENT');
    await doc(pl, bo.id, 'NATIONAL_ID', { side: 'FRONT' });
    await doc(pl, bo.id, 'NATIONAL_ID', { side: 'BACK' });
    return { b, bo, cert };
  }

  it('approves a complete business and its owners, opening the business accounts', async () => {
    const { b, bo } = await completeBusiness(p, 'de 1234567');
    const v = await verify(p, b.id);
    expect(v).toMatchObject({ verificationStatus: 'IN_PROGRESS', errors: [] });
    expect((await customer(p, b.id)).kybStatus).toBe('PENDING');
    expect(((await call(p, 'GET', `/beneficial-owners/${String(bo.id)}`)).json() as Body).kycStatus).toBe('PENDING');
    await ctx.jobs.runDue();
    expect((await read(p, v.id)).verificationStatus).toBe('APPROVED');
    expect((await customer(p, b.id)).kybStatus).toBe('APPROVED');
    expect(((await call(p, 'GET', `/beneficial-owners/${String(bo.id)}`)).json() as Body).kycStatus).toBe('APPROVED');
    expect(await eventTypes(p, b.id)).toEqual(['CUSTOMER.KYB_PENDING', 'CUSTOMER.KYB_APPROVED']);
    expect(((await call(p, 'GET', `/customers/internal-accounts?customerId=${String(b.id)}`)).json() as { totalCount: number }).totalCount).toBe(1);
  });

  it('a new review of an approved business approves the owners changed or added since, which left the business UNVERIFIED meanwhile', async () => {
    const { b, bo } = await completeBusiness(p, 'de 1234567');
    await verify(p, b.id);
    await ctx.jobs.runDue();
    expect((await customer(p, b.id)).kybStatus).toBe('APPROVED');
    const owner = async (id: unknown) => ((await call(p, 'GET', `/beneficial-owners/${String(id)}`)).json() as Body).kycStatus;
    // The person on file changes, and a director joins: neither has been judged.
    expect((await call(p, 'PATCH', `/beneficial-owners/${String(bo.id)}`, { personalInfo: { middleName: 'Mae' } })).statusCode).toBe(200);
    const director = (await call(p, 'POST', '/beneficial-owners', {
      customerId: b.id,
      roles: ['DIRECTOR'],
      ownershipPercentage: 0,
      personalInfo: { firstName: 'Bo', lastName: 'Kim', birthDate: '1980-01-01', nationality: 'US', address: { line1: '3 Oak St', postalCode: '78703', country: 'US' }, idType: 'SSN', identifier: '234-56-7890' },
    })).json() as Body;
    await doc(p, director.id, 'PASSPORT');
    expect([await owner(bo.id), await owner(director.id)]).toEqual(['UNVERIFIED', 'UNVERIFIED']);
    expect((await customer(p, b.id)).kybStatus).toBe('UNVERIFIED');

    const again = await verify(p, b.id);
    expect(again.verificationStatus).toBe('IN_PROGRESS');
    await ctx.jobs.runDue();
    expect((await read(p, again.id)).verificationStatus).toBe('APPROVED');
    expect([await owner(bo.id), await owner(director.id)]).toEqual(['APPROVED', 'APPROVED']);
    expect((await customer(p, b.id)).kybStatus).toBe('APPROVED');
    expect(await eventTypes(p, b.id)).toEqual(['CUSTOMER.KYB_PENDING', 'CUSTOMER.KYB_APPROVED', 'CUSTOMER.KYB_PENDING', 'CUSTOMER.KYB_APPROVED']);
  });

  it('rejects a legal-presence document whose number or country disagrees with the business', async () => {
    const { b, bo, cert } = await completeBusiness(p, 'DE 999');
    const foreign = await doc(p, b.id, 'STATE_REGISTRY_EXCERPT', { country: 'DE' });
    const v = await verify(p, b.id);
    await ctx.jobs.runDue();
    expect(await read(p, v.id)).toMatchObject({
      verificationStatus: 'RESOLVE_ERRORS',
      errors: [
        { resourceId: cert.id, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', field: 'documentNumber' },
        { resourceId: foreign.id, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', field: 'country' },
      ],
    });
    expect((await customer(p, b.id)).kybStatus).toBe('UNVERIFIED');
    expect(((await call(p, 'GET', `/beneficial-owners/${String(bo.id)}`)).json() as Body).kycStatus).toBe('UNVERIFIED');
  });
});

describe('GET /verifications', () => {
  it("pages, filters, and answers 404 REFERENCE_NOT_FOUND for another platform's verification", async () => {
    const pl = await sandboxWithReview();
    const c = await individual(pl);
    const made = [await verify(pl, c.id), await verify(pl, c.id), await verify(pl, c.id)];
    const page = (await call(pl, 'GET', '/verifications?limit=2')).json() as { data: Verification[]; hasMore: boolean; nextCursor: string; totalCount: number };
    expect(page).toMatchObject({ hasMore: true, totalCount: 3 });
    expect(page.data.map((v) => v.id)).toEqual([made[2]!.id, made[1]!.id]);
    const rest = (await call(pl, 'GET', `/verifications?limit=2&cursor=${page.nextCursor}`)).json() as { data: Verification[] };
    expect(rest.data.map((v) => v.id)).toEqual([made[0]!.id]);
    const approved = (await call(pl, 'GET', '/verifications?verificationStatus=APPROVED')).json() as { data: unknown[] };
    expect(approved.data).toEqual([]);
    // A status alone cannot bound its matches: no total. One customer's verifications are counted.
    expect(approved).not.toHaveProperty('totalCount');
    expect(((await call(pl, 'GET', `/verifications?customerId=${c.id}`)).json() as { totalCount: number }).totalCount).toBe(3);
    expectEnvelope(await call(p, 'GET', `/verifications/${made[0]!.id}`), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(pl, 'GET', '/verifications/Verification:019542f5-b3e7-7d02-8000-000000000001'), 404, 'REFERENCE_NOT_FOUND');
    const bad = expectEnvelope(await call(pl, 'GET', '/verifications?verificationStatus=DONE'), 400, 'INVALID_INPUT');
    expect(bad.details!.errors).toEqual([expect.objectContaining({ field: 'verificationStatus', constraint: expect.objectContaining({ enum: expect.arrayContaining(['APPROVED']) }) })]);
  });
});

describe('an approved customer and a later verification', () => {
  it('stays APPROVED while a review runs or asks for more; only a rejection changes it', async () => {
    const auto = await ctx.newPlatform();
    const customerEvents = async (id: unknown) =>
      (await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', String(id)).orderBy('id').execute()).map((e) => e.type);
    // Approved at creation with no data (the documented sandbox auto-approval) …
    const bare = (await (await call(auto, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `auto-${++seq}` })).json()) as Body;
    expect(bare.kycStatus).toBe('APPROVED');
    const asked = (await call(auto, 'POST', '/verifications', { customerId: bare.id })).json() as Verification;
    // … the review lists what is missing, and the customer is not silently downgraded.
    expect(asked.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(asked.errors.length).toBeGreaterThan(0);
    expect(((await call(auto, 'GET', `/customers/${String(bare.id)}`)).json() as Body).kycStatus).toBe('APPROVED');
    expect(await customerEvents(bare.id)).toEqual(['CUSTOMER.KYC_APPROVED']);

    // A complete review of an approved customer: still APPROVED while IN_PROGRESS and after.
    const complete = await individual(auto);
    await doc(auto, complete.id, 'PASSPORT');
    expect(((await call(auto, 'POST', '/verifications', { customerId: complete.id })).json() as Verification).verificationStatus).toBe('IN_PROGRESS');
    expect(((await call(auto, 'GET', `/customers/${String(complete.id)}`)).json() as Body).kycStatus).toBe('APPROVED');
    await ctx.jobs.runDue();
    expect(((await call(auto, 'GET', `/customers/${String(complete.id)}`)).json() as Body).kycStatus).toBe('APPROVED');

    // A rejection is a verdict, announced: it does change an approved customer.
    const rejected = await individual(auto, { platformCustomerId: `SANDBOX_REJECT-${++seq}` });
    await doc(auto, rejected.id, 'PASSPORT');
    await call(auto, 'POST', '/verifications', { customerId: rejected.id });
    await ctx.jobs.runDue();
    expect(((await call(auto, 'GET', `/customers/${String(rejected.id)}`)).json() as Body).kycStatus).toBe('REJECTED');
    expect(await customerEvents(rejected.id)).toEqual(['CUSTOMER.KYC_APPROVED', 'CUSTOMER.KYC_REJECTED']);
  });
});
