import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentType } from '../../src/modules/documents/catalogue.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

// Upstream's sandbox test values (last three characters of a name or registration number),
// accepted beside Corridor's own triggers: customers/README.md and verifications/README.md.

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
const ADDRESS = { line1: '1 Main St', postalCode: '62701', country: 'US' };

async function individual(pl: TestPlatform, fullName: string, extra: Body = {}): Promise<Body> {
  const response = await call(pl, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `sfx-${++seq}`,
    fullName,
    birthDate: '1990-01-15',
    nationality: 'US',
    address: ADDRESS,
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

async function business(pl: TestPlatform, registrationNumber: string): Promise<Body> {
  const response = await call(pl, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId: `sfx-b-${++seq}`,
    address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

async function owner(pl: TestPlatform, customerId: unknown, lastName: string, ownershipPercentage: number): Promise<Body> {
  const response = await call(pl, 'POST', '/beneficial-owners', {
    customerId,
    roles: ['UBO', 'CONTROL_PERSON'],
    ownershipPercentage,
    personalInfo: { firstName: 'Ann', lastName, birthDate: '1975-07-07', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

const doc = (pl: TestPlatform, holder: unknown, documentType: DocumentType, extra: Record<string, string> = {}) => uploadPdf(ctx.app, pl, holder, documentType, extra);
const verify = (pl: TestPlatform, customerId: unknown) => startVerification(ctx.app, pl, customerId);

const read = async (pl: TestPlatform, path: string) => (await call(pl, 'GET', path)).json() as Body;
const accountCount = async (pl: TestPlatform, customerId: unknown) =>
  ((await call(pl, 'GET', `/customers/internal-accounts?customerId=${String(customerId)}`)).json() as { data: Body[] }).data.length;
/** The events recorded for a resource, as webhooks deliver them: type and the status the payload carries. */
const events = async (pl: TestPlatform, resourceId: unknown) =>
  (
    await ctx.handle.db
      .selectFrom('events')
      .select(['type', 'data'])
      .where('platform_id', '=', pl.uuid)
      .where('resource_id', '=', String(resourceId))
      .orderBy('id')
      .execute()
  ).map((e) => {
    const data = e.data as Body;
    return [e.type, data.kycStatus ?? data.kybStatus ?? data.verificationStatus];
  });

describe('INDIVIDUAL customers: the last three characters of fullName at creation', () => {
  it('001 → PENDING, 002 → REJECTED, 003 → UNVERIFIED, whatever the auto-approve setting; no accounts, each decision announced', async () => {
    const auto = await ctx.newPlatform();
    const manual = await ctx.newPlatform();
    expect((await call(manual, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
    for (const pl of [auto, manual]) {
      const pending = await individual(pl, 'Jane Doe 001');
      const rejected = await individual(pl, 'Jane Doe 002');
      const unverified = await individual(pl, 'Jane Doe 003');
      expect([pending.kycStatus, rejected.kycStatus, unverified.kycStatus]).toEqual(['PENDING', 'REJECTED', 'UNVERIFIED']);
      expect((await read(pl, `/customers/${String(rejected.id)}`)).kycStatus).toBe('REJECTED');
      for (const c of [pending, rejected, unverified]) expect(await accountCount(pl, c.id)).toBe(0);
      expect(await events(pl, pending.id)).toEqual([['CUSTOMER.KYC_PENDING', 'PENDING']]);
      expect(await events(pl, rejected.id)).toEqual([['CUSTOMER.KYC_REJECTED', 'REJECTED']]);
      expect(await events(pl, unverified.id)).toEqual([]);
    }
    // Any other name follows the setting, as before.
    expect((await individual(auto, 'Jane Doe 004')).kycStatus).toBe('APPROVED');
    expect((await individual(manual, 'Jane Doe 004')).kycStatus).toBe('UNVERIFIED');
  });

  it('the bulk CSV import applies the same rule', async () => {
    const pl = await ctx.newPlatform();
    const file = ['platformCustomerId,customerType,fullName', 'csv-1,INDIVIDUAL,Ann Lee 001', 'csv-2,INDIVIDUAL,Ann Lee 002', 'csv-3,INDIVIDUAL,Ann Lee'].join('\n');
    const { payload, headers } = csvForm(file);
    const accepted = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: pl.auth, ...headers }, payload });
    expect(accepted.statusCode, accepted.body).toBe(202);
    while ((await ctx.jobs.runDue()) > 0);
    const byId = async (id: string) => ((await call(pl, 'GET', `/customers?platformCustomerId=${id}`)).json() as { data: Body[] }).data[0]!;
    expect([(await byId('csv-1')).kycStatus, (await byId('csv-2')).kycStatus, (await byId('csv-3')).kycStatus]).toEqual(['PENDING', 'REJECTED', 'APPROVED']);
    expect(await events(pl, (await byId('csv-2')).id)).toEqual([['CUSTOMER.KYC_REJECTED', 'REJECTED']]);
  });

  it('a status sent by a platform that runs its own KYC wins over the name', async () => {
    const pl = await ctx.newPlatform();
    expect((await call(pl, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    expect((await individual(pl, 'Jane Doe 002', { kycStatus: 'APPROVED' })).kycStatus).toBe('APPROVED');
  });
});

describe('INDIVIDUAL customers: POST /verifications', () => {
  it('001 with everything on file: PENDING_MANUAL_REVIEW at once, the customer stays PENDING', async () => {
    const pl = await ctx.newPlatform();
    const c = await individual(pl, 'Jane Doe 001');
    await doc(pl, c.id, 'PASSPORT', { documentNumber: 'P1234567' });
    const v = await verify(pl, c.id);
    expect(v).toMatchObject({ verificationStatus: 'PENDING_MANUAL_REVIEW', errors: [] });
    expect(await ctx.jobs.runDue()).toBe(0);
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('PENDING');
    expect(await events(pl, c.id)).toEqual([['CUSTOMER.KYC_PENDING', 'PENDING']]);
    expect(await events(pl, v.id)).toEqual([['VERIFICATION.PENDING_MANUAL_REVIEW', 'PENDING_MANUAL_REVIEW']]);
    expect(await accountCount(pl, c.id)).toBe(0);
  });

  it('003 with everything on file: RESOLVE_ERRORS with one LOW_QUALITY entry on the identity document', async () => {
    const pl = await ctx.newPlatform();
    const c = await individual(pl, 'Jane Doe 003');
    const passport = await doc(pl, c.id, 'PASSPORT', { documentNumber: 'P1234567' });
    const v = await verify(pl, c.id);
    expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(v.errors).toEqual([{ resourceId: passport.id, type: 'POOR_QUALITY_DOCUMENT', code: 'LOW_QUALITY', reason: expect.any(String) }]);
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('UNVERIFIED');
    expect(await events(pl, v.id)).toEqual([['VERIFICATION.RESOLVE_ERRORS', 'RESOLVE_ERRORS']]);
  });

  it('001 or 003 with something missing: RESOLVE_ERRORS listing it; real document problems come before the test value', async () => {
    const pl = await ctx.newPlatform();
    for (const name of ['Jane Doe 001', 'Jane Doe 003']) {
      const c = await individual(pl, name, { birthDate: undefined });
      const v = await verify(pl, c.id);
      expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(v.errors.map((e) => e.field ?? e.type)).toEqual(['customer.birthDate', 'MISSING_IDENTITY_DOCUMENT']);
      expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('UNVERIFIED');
    }
    const mismatched = await individual(pl, 'Jane Doe 001');
    await doc(pl, mismatched.id, 'PASSPORT', { country: 'GB' });
    expect((await verify(pl, mismatched.id)).errors.map((e) => e.code)).toEqual(['DATA_MISMATCH']);
  });

  it('002: REJECTED at once without any check, the customer stays REJECTED', async () => {
    const pl = await ctx.newPlatform();
    const c = await individual(pl, 'Jane Doe 002');
    const v = await verify(pl, c.id);
    expect(v).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: c.id, type: 'APPLICANT_REJECTED' }] });
    expect(await ctx.jobs.runDue()).toBe(0);
    expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('REJECTED');
    expect(await events(pl, c.id)).toEqual([['CUSTOMER.KYC_REJECTED', 'REJECTED']]);
    expect(await events(pl, v.id)).toEqual([['VERIFICATION.REJECTED', 'REJECTED']]);
  });

  it('other names keep Corridor’s flow and triggers: IN_PROGRESS, then the job’s verdict', async () => {
    const pl = await ctx.newPlatform();
    expect((await call(pl, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
    const c = await individual(pl, 'Jane Doe', { platformCustomerId: `SANDBOX_MANUAL_REVIEW-${++seq}` });
    await doc(pl, c.id, 'PASSPORT');
    const v = await verify(pl, c.id);
    expect(v.verificationStatus).toBe('IN_PROGRESS');
    await ctx.jobs.runDue();
    expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
  });
});

describe('BUSINESS customers: the last three characters of registrationNumber', () => {
  it('002: created UNVERIFIED; POST /verifications rejects at once without checks; owners settled by lastName', async () => {
    const pl = await ctx.newPlatform();
    const b = await business(pl, 'DE-1234002');
    expect(b.kybStatus).toBe('UNVERIFIED');
    const pending = await owner(pl, b.id, 'Lee 001', 30);
    const rejected = await owner(pl, b.id, 'Lee 002', 30);
    const approved = await owner(pl, b.id, 'Lee', 30);
    // No documents at all: nothing is checked.
    const v = await verify(pl, b.id);
    expect(v).toMatchObject({ verificationStatus: 'REJECTED', errors: [{ resourceId: b.id, type: 'APPLICANT_REJECTED' }] });
    expect(await ctx.jobs.runDue()).toBe(0);
    expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('REJECTED');
    const ownerStatus = async (o: Body) => (await read(pl, `/beneficial-owners/${String(o.id)}`)).kycStatus;
    expect([await ownerStatus(pending), await ownerStatus(rejected), await ownerStatus(approved)]).toEqual(['PENDING', 'REJECTED', 'APPROVED']);
    expect(await events(pl, b.id)).toEqual([['CUSTOMER.KYB_REJECTED', 'REJECTED']]);
    expect(await events(pl, v.id)).toEqual([['VERIFICATION.REJECTED', 'REJECTED']]);
    expect(await accountCount(pl, b.id)).toBe(0);
  });

  it('001 and 003 are reviewed as any business: missing requirements listed, owners follow the business', async () => {
    const pl = await ctx.newPlatform();
    for (const registrationNumber of ['DE-1234001', 'DE-1234003']) {
      const b = await business(pl, registrationNumber);
      expect(b.kybStatus).toBe('UNVERIFIED');
      const o = await owner(pl, b.id, 'Lee 002', 50);
      const v = await verify(pl, b.id);
      expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(v.errors.map((e) => e.type)).toContain('MISSING_LEGAL_PRESENCE_DOCUMENT');
      expect((await read(pl, `/beneficial-owners/${String(o.id)}`)).kycStatus).toBe('UNVERIFIED');
    }
  });
});

describe('production platforms', () => {
  it('ignore the test values', async () => {
    const prod = await ctx.newPlatform('production');
    const c = await individual(prod, 'Jane Doe 002');
    expect(c.kycStatus).toBe('UNVERIFIED');
    expect(await events(prod, c.id)).toEqual([]);
    await doc(prod, c.id, 'PASSPORT');
    expect((await verify(prod, c.id)).verificationStatus).toBe('IN_PROGRESS');
    const b = await business(prod, 'DE-1234002');
    await owner(prod, b.id, 'Lee', 50);
    const v = await verify(prod, b.id);
    expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
    expect((await read(prod, `/customers/${String(b.id)}`)).kybStatus).toBe('UNVERIFIED');
  });
});

function csvForm(content: string) {
  const boundary = '----corridor-suffix-boundary';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="customers.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  return { payload: Buffer.concat([Buffer.from(head), Buffer.from(content), Buffer.from(`\r\n--${boundary}--\r\n`)]), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}
