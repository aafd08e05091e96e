import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * Reviews that must not approve a customer: one deleted while its review is IN_PROGRESS, and one
 * whose two-sided identity document came without its side. Sandbox auto-approval is off, so the
 * background verdict decides.
 */

type Body = Record<string, any>;

let ctx: TestContext;
let p: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext();
  p = await ctx.newPlatform();
  expect((await call('PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
});
afterAll(() => ctx.close());

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });
const eventTypes = async (resourceId: string) =>
  (await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('resource_id', '=', resourceId).orderBy('id').execute()).map((e) => e.type);

/** An individual with every field a review reads, and no documents yet. */
async function applicant(platformCustomerId: string): Promise<Body> {
  const created = await call('POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId,
    fullName: 'Jane Doe',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Body;
}

describe('a customer deleted during its review', () => {
  // The DELETE is accepted (only the fields a review reads are frozen). A complete sandbox applicant
  // would otherwise be APPROVED, which opens internal accounts: money could be sent to a customer
  // who can never send it on.
  it('the review ends REJECTED; the customer is not approved and gets no accounts', async () => {
    const customer = await applicant('deleted-mid-review');
    await uploadPdf(ctx.app, p, customer.id, 'PASSPORT', { documentNumber: 'P1234567' });
    await uploadPdf(ctx.app, p, customer.id, 'SELFIE');
    const verification = await startVerification(ctx.app, p, customer.id);
    expect(verification.verificationStatus).toBe('IN_PROGRESS');

    const deleted = await call('DELETE', `/customers/${customer.id}`);
    expect(deleted.statusCode, deleted.body).toBe(200);
    ctx.clock.advance(2000);
    expect(await ctx.jobs.runDue()).toBe(1);

    const ended = (await call('GET', `/verifications/${verification.id}`)).json() as Body;
    expect(ended).toMatchObject({
      verificationStatus: 'REJECTED',
      errors: [{ resourceId: customer.id, type: 'APPLICANT_REJECTED', reason: 'The customer was deleted during the review.' }],
    });
    expect(((await call('GET', `/customers/${customer.id}?includeDeleted=true`)).json() as Body).kycStatus).toBe('PENDING');
    expect(((await call('GET', `/customers/internal-accounts?customerId=${customer.id}`)).json() as Body).totalCount).toBe(0);
    expect(await eventTypes(customer.id)).toEqual(['CUSTOMER.KYC_PENDING', 'CUSTOMER.DELETED']);
    expect(await eventTypes(verification.id)).toEqual(['VERIFICATION.IN_PROGRESS', 'VERIFICATION.REJECTED']);
    expect(await ctx.jobs.runDue()).toBe(0);
  });
});

describe('a two-sided document without its side', () => {
  // NATIONAL_ID and DRIVERS_LICENSE uploaded without `side` (the field is optional) prove only one
  // side of the card: the review asks for it.
  it('is INCOMPLETE on side, and the customer is not approved on it', async () => {
    const customer = await applicant('one-sided');
    const card = await uploadPdf(ctx.app, p, customer.id, 'NATIONAL_ID', { documentNumber: 'N1234567' });
    expect(card.side).toBeUndefined();
    await uploadPdf(ctx.app, p, customer.id, 'SELFIE');

    const first = await startVerification(ctx.app, p, customer.id);
    ctx.clock.advance(2000);
    await ctx.jobs.runDue();
    const judged = (await call('GET', `/verifications/${first.id}`)).json() as Body;
    expect(judged.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(judged.errors).toContainEqual(expect.objectContaining({ resourceId: card.id, code: 'INCOMPLETE', field: 'side' }));
    expect(((await call('GET', `/customers/${customer.id}`)).json() as Body).kycStatus).not.toBe('APPROVED');
  });
});
