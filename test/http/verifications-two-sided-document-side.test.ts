import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * A two-sided identity document (NATIONAL_ID, DRIVERS_LICENSE) uploaded without its `side` (the
 * upload allows it: the field is optional) proves only one side of the card: the review asks
 * for it (RESOLVE_ERRORS, INCOMPLETE on `side`) and does not approve the customer on it.
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

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });

describe('a two-sided document without its side', () => {
  it('is INCOMPLETE on side, and the customer is not approved on it', async () => {
    const created = await call('POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: 'one-sided',
      fullName: 'Jane Doe',
      birthDate: '1990-01-15',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const customer = created.json() as Body;
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
