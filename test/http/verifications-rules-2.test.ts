import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentType } from '../../src/modules/documents/catalogue.js';
import { reviewVerification } from '../../src/modules/verifications/service.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf, type Verification } from '../helpers/verifications.js';

// Rules of the verifications module that its mutation audit found unguarded: each test fails
// with one small change to src/modules/verifications (named in the test).

let ctx: TestContext;
let p: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext();
  p = await ctx.newPlatform();
  expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const read = async (pl: TestPlatform, path: string) => (await call(pl, 'GET', path)).json() as Body;
const doc = (holder: unknown, documentType: DocumentType, extra: Record<string, string> = {}) => uploadPdf(ctx.app, p, holder, documentType, extra);
const verify = (customerId: unknown) => startVerification(ctx.app, p, customerId);

let seq = 0;
const ADDRESS = { line1: '1 Main St', postalCode: '62701', country: 'US' };

async function business(registrationNumber = 'DE-1234567'): Promise<Body> {
  const created = await call(p, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId: `vr2-b-${++seq}`,
    address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Body;
}

async function individual(extra: Body = {}): Promise<Body> {
  const created = await call(p, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `vr2-i-${++seq}`,
    fullName: 'Jane Doe',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: ADDRESS,
    ...extra,
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Body;
}

async function addOwner(customerId: unknown, roles: string[], ownershipPercentage: number, extra: Body = {}): Promise<Body> {
  const response = await call(p, 'POST', '/beneficial-owners', {
    customerId,
    roles,
    ownershipPercentage,
    personalInfo: { firstName: 'Ann', lastName: `Lee${++seq}`, birthDate: '1975-07-07', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789', ...extra },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

/** The four business documents a review requires. */
async function businessDocuments(b: Body, certificateNumber = 'DE-1234567'): Promise<void> {
  await doc(b.id, 'CERTIFICATE_OF_INCORPORATION', { documentNumber: certificateNumber });
  await doc(b.id, 'DIRECTOR_REGISTRY');
  await doc(b.id, 'SHAREHOLDER_REGISTER');
  await doc(b.id, 'BANK_STATEMENT');
}

const types = (v: Verification) => v.errors.map((e) => e.type);

describe('verification requirements', () => {
  // rules.ts CONTROL_ROLES (mutant: only CONTROL_PERSON and DIRECTOR) and `owners.some` (mutant: `every`).
  it('counts each control role, held by any one of the owners, as the control person', async () => {
    for (const role of ['COMPANY_OFFICER', 'GENERAL_PARTNER', 'TRUSTEE', 'CONTROL_PERSON', 'DIRECTOR']) {
      const b = await business();
      await addOwner(b.id, ['UBO'], 60);
      await addOwner(b.id, [role], 0);
      const v = await verify(b.id);
      expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(types(v), role).not.toContain('MISSING_CONTROL_PERSON');
    }
    const onlyOwners = await business();
    await addOwner(onlyOwners.id, ['UBO'], 60);
    expect(types(await verify(onlyOwners.id))).toContain('MISSING_CONTROL_PERSON');
  });

  // rules.ts documentsOf: only the holder's own documents count (mutant: every document on file counts for every holder).
  it("asks for each owner's own identity document: another owner's passport is not one", async () => {
    const b = await business();
    const withPassport = await addOwner(b.id, ['UBO', 'CONTROL_PERSON'], 60);
    const without = await addOwner(b.id, ['UBO'], 40);
    await businessDocuments(b);
    await doc(withPassport.id, 'PASSPORT');
    const v = await verify(b.id);
    expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(v.errors).toEqual([{ resourceId: without.id, type: 'MISSING_IDENTITY_DOCUMENT', acceptedDocumentTypes: ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID'], reason: expect.any(String) }]);
  });
});

describe('document review', () => {
  // rules.ts reviewDocuments: a NATIONAL_ID, as a PASSPORT, must come from the holder's nationality (mutant: PASSPORT only).
  it('rejects a national id issued by another country than the nationality on file (DATA_MISMATCH on each side)', async () => {
    const c = await individual();
    const front = await doc(c.id, 'NATIONAL_ID', { side: 'FRONT', country: 'MX' });
    const back = await doc(c.id, 'NATIONAL_ID', { side: 'BACK', country: 'MX' });
    const v = await verify(c.id);
    expect(v.verificationStatus).toBe('IN_PROGRESS');
    await ctx.jobs.runDue();
    expect(await read(p, `/verifications/${v.id}`)).toMatchObject({
      verificationStatus: 'RESOLVE_ERRORS',
      errors: [
        { resourceId: front.id, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', field: 'country' },
        { resourceId: back.id, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', field: 'country' },
      ],
    });
    expect((await read(p, `/customers/${String(c.id)}`)).kycStatus).toBe('UNVERIFIED');
  });
});

describe('verdicts', () => {
  // rules.ts sandboxSuffixOutcome: a business's registration number ending 001 is reviewed like any other (mutant: the individual's table, 001 → PENDING_MANUAL_REVIEW).
  it('approves a complete sandbox business whose registration number ends in 001, after the review job', async () => {
    const b = await business('DE-1234001');
    const owner = await addOwner(b.id, ['UBO', 'DIRECTOR'], 60);
    await businessDocuments(b, 'DE-1234001');
    await doc(owner.id, 'PASSPORT');
    const v = await verify(b.id);
    expect(v).toMatchObject({ verificationStatus: 'IN_PROGRESS', errors: [] });
    await ctx.jobs.runDue();
    expect((await read(p, `/verifications/${v.id}`)).verificationStatus).toBe('APPROVED');
    expect((await read(p, `/customers/${String(b.id)}`)).kybStatus).toBe('APPROVED');
  });

  // service.ts finalRejection: a verdict reached on a customer rejected meanwhile is REJECTED (mutant: the verdict as reached).
  it('ends REJECTED a review whose customer was rejected while it ran, and the customer stays REJECTED', async () => {
    const c = await individual();
    await doc(c.id, 'PASSPORT');
    const v = await verify(c.id);
    expect(v.verificationStatus).toBe('IN_PROGRESS');
    // Rejected meanwhile (as the operator or a platform's own KYC would): the row as such a change leaves it.
    await ctx.handle.db.updateTable('customers').set({ review_status: 'REJECTED' }).where('id', '=', String(c.id).split(':')[1]!).execute();
    await ctx.jobs.runDue();
    const done = await read(p, `/verifications/${v.id}`);
    expect(done).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED' }] });
    expect((await read(p, `/customers/${String(c.id)}`)).kycStatus).toBe('REJECTED');
    expect(((await read(p, `/customers/internal-accounts?customerId=${String(c.id)}`)) as { totalCount: number }).totalCount).toBe(0);
  });

  // service.ts startVerification: for a REJECTED customer the answer is the verification that rejected it (mutant: a new REJECTED one each time).
  it('answers a rejected customer with the verification that rejected it, starting nothing', async () => {
    const c = await individual({ platformCustomerId: `SANDBOX_REJECT-${++seq}` });
    await doc(c.id, 'PASSPORT');
    const v = await verify(c.id);
    await ctx.jobs.runDue();
    const rejected = await read(p, `/verifications/${v.id}`);
    expect(rejected.verificationStatus).toBe('REJECTED');
    ctx.clock.advance(1000);
    expect(await verify(c.id)).toEqual(rejected);
    expect(((await read(p, `/verifications?customerId=${String(c.id)}`)).data as Body[]).map((x) => x.id)).toEqual([v.id]);
  });
});

describe('a person\'s decision on a manual review', () => {
  const decide = (id: string, verificationStatus: 'APPROVED' | 'REJECTED') => call(p, 'POST', `/sandbox/verifications/${id}/manual-review`, { verificationStatus });

  async function pendingManualReview(): Promise<{ c: Body; v: Verification }> {
    const c = await individual({ platformCustomerId: `SANDBOX_MANUAL_REVIEW-${++seq}` });
    await doc(c.id, 'PASSPORT');
    const v = await verify(c.id);
    await ctx.jobs.runDue();
    expect((await read(p, `/verifications/${v.id}`)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    return { c, v };
  }

  // repo.ts OPEN_STATUSES: a review waiting for a person is still open (mutant: IN_PROGRESS only, so a second review starts beside it).
  it('answers a new POST /verifications with the review waiting for a person, starting nothing', async () => {
    const { c, v } = await pendingManualReview();
    const waiting = await read(p, `/verifications/${v.id}`);
    ctx.clock.advance(1000);
    expect(await verify(c.id)).toEqual(waiting);
    expect(((await read(p, `/verifications?customerId=${String(c.id)}`)).data as Body[]).map((x) => x.id)).toEqual([v.id]);
    expect((await read(p, `/customers/${String(c.id)}`)).kycStatus).toBe('PENDING');
  });

  // service.ts decideManualReview: the same verdict again answers the verification as it is (mutant: that check dropped, 409).
  it('answers the same verdict sent again with the verification unchanged', async () => {
    const { v } = await pendingManualReview();
    const first = await decide(v.id, 'APPROVED');
    expect(first.statusCode, first.body).toBe(200);
    ctx.clock.advance(1000);
    const again = await decide(v.id, 'APPROVED');
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual(first.json());
  });

  // service.ts decideManualReview: only a PENDING_MANUAL_REVIEW verification awaits a decision (mutant: any but APPROVED may be decided).
  it('is 409 CONFLICT for a verification IN_PROGRESS or already REJECTED, changing nothing', async () => {
    const c = await individual();
    await doc(c.id, 'PASSPORT');
    const running = await verify(c.id);
    expect(running.verificationStatus).toBe('IN_PROGRESS');
    const early = expectEnvelope(await decide(running.id, 'APPROVED'), 409, 'CONFLICT');
    expect(early.details).toEqual({ verificationStatus: 'IN_PROGRESS' });
    expect(await read(p, `/verifications/${running.id}`)).toEqual(running);
    await ctx.jobs.runDue();

    const { c: refused, v } = await pendingManualReview();
    expect((await decide(v.id, 'REJECTED')).statusCode).toBe(200);
    const rejected = await read(p, `/verifications/${v.id}`);
    const late = expectEnvelope(await decide(v.id, 'APPROVED'), 409, 'CONFLICT');
    expect(late.details).toEqual({ verificationStatus: 'REJECTED' });
    expect(await read(p, `/verifications/${v.id}`)).toEqual(rejected);
    expect((await read(p, `/customers/${String(refused.id)}`)).kycStatus).toBe('REJECTED');
  });

  // service.ts reviewVerification: a job reaching a verification that is no longer IN_PROGRESS leaves it alone (mutant: it decides again).
  it('a review job run again after a person decided leaves the verification and the customer as they are', async () => {
    const { c, v } = await pendingManualReview();
    expect((await decide(v.id, 'REJECTED')).statusCode).toBe(200);
    const decided = await read(p, `/verifications/${v.id}`);
    ctx.clock.advance(1000);
    // What a retried job delivery does (the job's handler, as routes.ts registers it).
    await withTx(ctx.handle.db, (trx) => reviewVerification(trx, ctx.clock, p.uuid, { verificationId: v.id.split(':')[1]!, environment: 'sandbox' }));
    expect(await read(p, `/verifications/${v.id}`)).toEqual(decided);
    expect((await read(p, `/customers/${String(c.id)}`)).kycStatus).toBe('REJECTED');
  });
});
