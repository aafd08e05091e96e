/** Upstream request fields on customer create and update (issue 12 B13): kycStatus/kybStatus, EIN, query parameters. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type FieldErrors = { field: string; message?: string; constraint?: Record<string, unknown> }[];

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const business = (extra: Body = {}) => ({
  customerType: 'BUSINESS',
  businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' },
  ...extra,
});

/** A production platform the operator made a regulated financial institution (`corridor platforms create --regulated`), as its config says. */
async function regulatedProduction(): Promise<TestPlatform> {
  const p = await ctx.newPlatform('production', { regulated: true });
  expect((await call(p, 'GET', '/config')).json()).toMatchObject({ isRegulatedFinancialInstitution: true });
  return p;
}

async function customerCount(p: TestPlatform): Promise<number> {
  return ((await call(p, 'GET', '/customers')).json() as { totalCount: number }).totalCount;
}

async function eventTypes(resourceId: string): Promise<string[]> {
  const rows = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', resourceId).orderBy('created_at').execute();
  return rows.map((r) => r.type);
}

describe('kycStatus / kybStatus on create', () => {
  it('is refused with 400 naming the field and the setting unless the platform runs its own KYC, and creates nothing', async () => {
    const p = await ctx.newPlatform('production');
    const before = await customerCount(p);
    const individual = expectEnvelope(await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', kycStatus: 'APPROVED' }), 400, 'INVALID_INPUT');
    const errors = individual.details!.errors as FieldErrors;
    expect(errors.map((e) => e.field)).toEqual(['kycStatus']);
    expect(errors[0]!.message).toMatch(/platformKyc/);
    const biz = expectEnvelope(await call(p, 'POST', '/customers', business({ kybStatus: 'APPROVED' })), 400, 'INVALID_INPUT');
    expect((biz.details!.errors as FieldErrors).map((e) => e.field)).toEqual(['kybStatus']);
    // The status field of the other customer type is unknown, as any other unknown field.
    const crossed = expectEnvelope(await call(p, 'POST', '/customers', business({ kycStatus: 'APPROVED' })), 400, 'INVALID_INPUT');
    expect((crossed.details!.errors as FieldErrors).map((e) => e.field)).toContain('kycStatus');
    expect(await customerCount(p)).toBe(before);
  });

  it('a production platform never auto-approves: GET shows sandboxAutoApprove false, turning it on is 403 and changes nothing', async () => {
    const p = await ctx.newPlatform('production');
    expect((await call(p, 'GET', '/customers/settings')).json()).toEqual({ sandboxAutoApprove: false, platformKyc: false });
    const refused = expectEnvelope(await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: true }), 403, 'FORBIDDEN');
    expect(refused.details).toEqual({ field: 'sandboxAutoApprove' });
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).json()).toEqual({ sandboxAutoApprove: false, platformKyc: false });
    const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'prod-1', fullName: 'Jane Doe' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ kycStatus: 'UNVERIFIED' });
  });

  it('a production platform runs its own KYC only as a regulated financial institution: turning it on otherwise is 403, and a setting on from before is not honoured', async () => {
    const p = await ctx.newPlatform('production');
    const refused = expectEnvelope(await call(p, 'PATCH', '/customers/settings', { platformKyc: true }), 403, 'FORBIDDEN');
    expect(refused.details).toEqual({ field: 'platformKyc' });
    expect((await call(p, 'GET', '/customers/settings')).json()).toMatchObject({ platformKyc: false });
    // Turned on before the rule (stored as it was): its kycStatus is still refused, nothing created.
    await ctx.handle.db
      .insertInto('customer_settings')
      .values({ platform_id: p.uuid, sandbox_auto_approve: true, platform_kyc: true, updated_at: new Date() })
      .onConflict((oc) => oc.column('platform_id').doUpdateSet({ platform_kyc: true }))
      .execute();
    const before = await customerCount(p);
    expectEnvelope(await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', kycStatus: 'APPROVED' }), 400, 'INVALID_INPUT');
    expect(await customerCount(p)).toBe(before);
    // A sandbox platform may, to test the flow.
    const sandbox = await ctx.newPlatform();
    expect((await call(sandbox, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
  });

  it('is honoured for a platform configured as running its own KYC: the status is set and its event recorded', async () => {
    const p = await regulatedProduction();
    expect((await call(p, 'GET', '/customers/settings')).json()).toEqual({ sandboxAutoApprove: false, platformKyc: false });
    const settings = await call(p, 'PATCH', '/customers/settings', { platformKyc: true });
    expect(settings.statusCode, settings.body).toBe(200);
    expect(settings.json()).toEqual({ sandboxAutoApprove: false, platformKyc: true });

    const approved = await call(p, 'POST', '/customers', business({ kybStatus: 'APPROVED' }));
    expect(approved.statusCode, approved.body).toBe(201);
    const biz = approved.json() as Body;
    expect(biz.kybStatus).toBe('APPROVED');
    expect(await eventTypes(biz.id as string)).toContain('CUSTOMER.KYB_APPROVED');

    const rejected = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', kycStatus: 'REJECTED' });
    expect(rejected.statusCode, rejected.body).toBe(201);
    expect((rejected.json() as Body).kycStatus).toBe('REJECTED');
    expect((await call(p, 'GET', `/customers/${(rejected.json() as Body).id}`)).json()).toMatchObject({ kycStatus: 'REJECTED' });

    // Left out, the customer starts as usual.
    const plain = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'John Doe' });
    expect((plain.json() as Body).kycStatus).toBe('UNVERIFIED');
    expect(expectEnvelope(await call(p, 'PATCH', '/customers/settings', {}), 400, 'INVALID_INPUT').status).toBe(400);
  });
});

describe('kycStatus / kybStatus on update', () => {
  it('is refused with 400 naming the field unless the platform runs its own KYC, and changes nothing', async () => {
    const p = await ctx.newPlatform('production');
    const created = (await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe' })).json() as Body;
    const refused = expectEnvelope(await call(p, 'PATCH', `/customers/${created.id}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Q Doe', kycStatus: 'APPROVED' }), 400, 'INVALID_INPUT');
    expect((refused.details!.errors as FieldErrors).map((e) => e.field)).toEqual(['kycStatus']);
    expect((await call(p, 'GET', `/customers/${created.id}`)).json()).toMatchObject({ fullName: 'Jane Doe', kycStatus: 'UNVERIFIED' });
    expect(await eventTypes(created.id as string)).toEqual([]);
  });

  it('moves the status the platform established: approval opens the accounts, each decision records its event', async () => {
    const p = await regulatedProduction();
    expect((await call(p, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    const created = (await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', kycStatus: 'PENDING' })).json() as Body;
    const accounts = async () => ((await call(p, 'GET', `/customers/internal-accounts?customerId=${String(created.id)}`)).json() as { data: unknown[] }).data;
    expect(await accounts()).toEqual([]);

    // Each decision a second apart, so the events read back in the order they were recorded.
    ctx.clock.advance(1_000);
    const approved = await call(p, 'PATCH', `/customers/${created.id}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Q Doe', kycStatus: 'APPROVED' });
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toMatchObject({ fullName: 'Jane Q Doe', kycStatus: 'APPROVED' });
    expect((await accounts()).length).toBeGreaterThan(0);
    // The same status again is no decision: no second event.
    expect((await call(p, 'PATCH', `/customers/${created.id}`, { customerType: 'INDIVIDUAL', kycStatus: 'APPROVED' })).statusCode).toBe(200);
    ctx.clock.advance(1_000);
    const rejected = await call(p, 'PATCH', `/customers/${created.id}`, { customerType: 'INDIVIDUAL', kycStatus: 'REJECTED' });
    expect(rejected.json()).toMatchObject({ kycStatus: 'REJECTED' });
    expect(await eventTypes(created.id as string)).toEqual(['CUSTOMER.KYC_PENDING', 'CUSTOMER.KYC_APPROVED', 'CUSTOMER.KYC_REJECTED']);

    const biz = (await call(p, 'POST', '/customers', business())).json() as Body;
    const kyb = await call(p, 'PATCH', `/customers/${biz.id}`, { customerType: 'BUSINESS', kybStatus: 'APPROVED' });
    expect(kyb.json()).toMatchObject({ kybStatus: 'APPROVED' });
    // The other type's status field is unknown, as on create.
    expectEnvelope(await call(p, 'PATCH', `/customers/${biz.id}`, { customerType: 'BUSINESS', kycStatus: 'APPROVED' }), 400, 'INVALID_INPUT');
  });
});

describe('EIN as an idType', () => {
  it('accepts an individual with an EIN (##-#######), never returns it, and refuses a malformed one', async () => {
    const ok = await call(ctx.platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Sole Trader', idType: 'EIN', identifier: '12-3456789' });
    expect(ok.statusCode, ok.body).toBe(201);
    expect((ok.json() as Body).idType).toBe('EIN');
    expect(ok.body).not.toContain('3456789');
    const bad = expectEnvelope(await call(ctx.platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Sole Trader', idType: 'EIN', identifier: '123-45-678' }), 400, 'INVALID_INPUT');
    expect(bad.details!.errors).toEqual([{ field: 'identifier', constraint: { pattern: '^\\d{2}-\\d{7}$' }, message: 'must be a valid EIN (##-#######)' }]);
  });
});

describe('query parameters', () => {
  it('an unknown query parameter is 400 naming it', async () => {
    const body = expectEnvelope(await call(ctx.platform, 'GET', '/customers?limit=5&colour=blue'), 400, 'INVALID_INPUT');
    expect(JSON.stringify(body.details)).toContain('colour');
  });
});
