import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * A customer deleted while its review is IN_PROGRESS (the DELETE is accepted: only the fields a
 * review reads are frozen): the background verdict ends the verification REJECTED ("deleted
 * during the review") and nothing else of the customer moves. A complete sandbox applicant would
 * otherwise be APPROVED, which opens internal accounts: money could be sent to a customer who can
 * never send it on.
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

describe('a customer deleted during its review', () => {
  it('the review ends REJECTED; the customer is not approved and gets no accounts', async () => {
    const created = await call('POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: 'deleted-mid-review',
      fullName: 'Jane Doe',
      birthDate: '1990-01-15',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const customer = created.json() as Body;
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
