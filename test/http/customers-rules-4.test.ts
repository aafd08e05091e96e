import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { createReviewableIndividual, startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * Customers' review state and masked identifiers at the edges a mutation audit found
 * no test holding (customers/README.md): each test fails when the rule it names is removed.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('PATCH /customers/settings', () => {
  it('keeps the setting a request leaves out, both ways round', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).json()).toEqual({ sandboxAutoApprove: false, platformKyc: false });
    expect((await call(p, 'PATCH', '/customers/settings', { platformKyc: true })).json()).toEqual({ sandboxAutoApprove: false, platformKyc: true });
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: true })).json()).toEqual({ sandboxAutoApprove: true, platformKyc: true });
    expect((await call(p, 'GET', '/customers/settings')).json()).toEqual({ sandboxAutoApprove: true, platformKyc: true });
  });
});

const eventTypes = async (resourceId: string) =>
  (await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', resourceId).orderBy('id').execute()).map((e) => e.type);

describe('kycStatus / kybStatus moved after creation (setReviewStatus)', () => {
  it('records each new status under its customer type’s prefix: KYC_PENDING for an individual, KYB_APPROVED and KYB_PENDING for a business', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false, platformKyc: true })).statusCode).toBe(200);
    const person = (await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe' })).json() as Body & { id: string };
    expect(person.kycStatus).toBe('UNVERIFIED');
    const pending = await call(p, 'PATCH', `/customers/${person.id}`, { customerType: 'INDIVIDUAL', kycStatus: 'PENDING' });
    expect(pending.json()).toMatchObject({ kycStatus: 'PENDING' });
    expect(await eventTypes(person.id)).toEqual(['CUSTOMER.KYC_PENDING']);

    const created = await call(p, 'POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' },
    });
    const business = created.json() as Body & { id: string };
    expect(business.kybStatus).toBe('UNVERIFIED');
    ctx.clock.advance(1_000);
    expect((await call(p, 'PATCH', `/customers/${business.id}`, { customerType: 'BUSINESS', kybStatus: 'APPROVED' })).json()).toMatchObject({ kybStatus: 'APPROVED' });
    ctx.clock.advance(1_000);
    expect((await call(p, 'PATCH', `/customers/${business.id}`, { customerType: 'BUSINESS', kybStatus: 'PENDING' })).json()).toMatchObject({ kybStatus: 'PENDING' });
    expect(await eventTypes(business.id)).toEqual(['CUSTOMER.KYB_APPROVED', 'CUSTOMER.KYB_PENDING']);
  });

  it('a review approving a customer already approved is no new decision: no second CUSTOMER.KYC_APPROVED', async () => {
    const p = await ctx.newPlatform();
    const customer = await createReviewableIndividual(ctx.app, p, 'approved-again');
    expect(customer.kycStatus).toBe('APPROVED');
    await uploadPdf(ctx.app, p, customer.id, 'PASSPORT');
    const opened = await startVerification(ctx.app, p, customer.id);
    while ((await ctx.jobs.runDue()) > 0);
    const decided = (await call(p, 'GET', `/verifications/${opened.id}`)).json() as Body;
    expect(decided.verificationStatus).toBe('APPROVED');
    expect((await eventTypes(String(customer.id))).filter((type) => type.startsWith('CUSTOMER.'))).toEqual(['CUSTOMER.KYC_APPROVED']);
  });
});

describe('identifiers answered masked (identifiers.ts maskIdentifier)', () => {
  it('shows the last four characters, never more than half: a four-character foreign tax id is not answered whole', async () => {
    const p = await ctx.newPlatform();
    const created = await call(p, 'POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme GmbH', country: 'DE', incorporatedOn: '2015-03-01', taxId: 'DE999' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const masked = [];
    for (const identifier of ['AB12', 'X12345', 'DE123456789']) {
      const owner = await call(p, 'POST', '/beneficial-owners', {
        customerId: (created.json() as Body).id,
        roles: ['UBO'],
        ownershipPercentage: 10,
        personalInfo: {
          firstName: 'Anna',
          lastName: 'Berg',
          birthDate: '1975-07-07',
          nationality: 'DE',
          address: { line1: 'Hauptstr. 1', postalCode: '10115', country: 'DE' },
          idType: 'NON_US_TAX_ID',
          identifier,
          countryOfIssuance: 'DE',
        },
      });
      expect(owner.statusCode, owner.body).toBe(201);
      masked.push(((owner.json() as Body).personalInfo as Body).identifier);
    }
    expect(masked).toEqual(['**12', '***345', '*******6789']);
  });
});
