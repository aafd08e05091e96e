import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type FieldErrors = Array<{ field: string; constraint?: Record<string, unknown>; message?: string }>;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function createCustomer(p: TestPlatform, type: 'INDIVIDUAL' | 'BUSINESS'): Promise<Body> {
  const body =
    type === 'BUSINESS'
      ? { customerType: 'BUSINESS', businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } }
      : { customerType: 'INDIVIDUAL', fullName: 'Solo Person' };
  const response = await call(p, 'POST', '/customers', body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

const personalInfo = (extra: Body = {}): Body => ({
  firstName: 'Maria',
  lastName: 'Garcia',
  birthDate: '1980-05-20',
  nationality: 'MX',
  email: 'maria@example.com',
  phoneNumber: '+525512345678',
  address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' },
  idType: 'NON_US_TAX_ID',
  identifier: 'GAMM800520XX1',
  ...extra,
});

const owner = (customerId: unknown, extra: Body = {}): Body => ({ customerId, roles: ['UBO', 'DIRECTOR'], ownershipPercentage: 60, personalInfo: personalInfo(), ...extra });

const fieldsOf = (body: { details?: Record<string, unknown> }) => (body.details!.errors as FieldErrors).map((e) => e.field).sort();

async function ownersOf(p: TestPlatform, customerId: unknown) {
  return (await call(p, 'GET', `/beneficial-owners?customerId=${String(customerId)}`)).json() as { data: Body[]; totalCount: number; hasMore: boolean; nextCursor?: string };
}

describe('beneficial owners', () => {
  it('creates, reads back, lists and patches an owner of a business, returning the identifier only masked', async () => {
    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    const created = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id));
    expect(created.statusCode).toBe(201);
    const shownInfo = { ...personalInfo(), identifier: '*********0XX1' };
    const expected = {
      id: expect.stringMatching(/^BeneficialOwner:[0-9a-f-]{36}$/),
      customerId: biz.id,
      roles: ['UBO', 'DIRECTOR'],
      ownershipPercentage: 60,
      personalInfo: shownInfo,
      kycStatus: 'UNVERIFIED',
      createdAt: ctx.clock.now().toISOString(),
      updatedAt: ctx.clock.now().toISOString(),
    };
    const bo = created.json() as Body;
    expect(bo).toEqual(expected);
    expect(created.body).not.toContain('GAMM800520XX1');
    expect((await call(ctx.platform, 'GET', `/beneficial-owners/${bo.id}`)).json()).toEqual(bo);
    expect(await ownersOf(ctx.platform, biz.id)).toEqual({ data: [bo], hasMore: false, totalCount: 1 });

    ctx.clock.advance(1000);
    const patched = await call(ctx.platform, 'PATCH', `/beneficial-owners/${bo.id}`, { ownershipPercentage: 40, personalInfo: { middleName: 'Luisa' } });
    expect(patched.statusCode).toBe(200);
    const after = { ...bo, ownershipPercentage: 40, personalInfo: { ...shownInfo, middleName: 'Luisa' }, updatedAt: ctx.clock.now().toISOString() };
    expect(patched.json()).toEqual(after);
    expect((await call(ctx.platform, 'GET', `/beneficial-owners/${bo.id}`)).json()).toEqual(after);
  });

  it('a business customer answers its beneficial owners (masked) on create, read, list, update and delete; an individual has none', async () => {
    const created = await createCustomer(ctx.platform, 'BUSINESS');
    expect(created.beneficialOwners).toEqual([]);
    const individual = await createCustomer(ctx.platform, 'INDIVIDUAL');
    expect(individual).not.toHaveProperty('beneficialOwners');

    const first = (await call(ctx.platform, 'POST', '/beneficial-owners', owner(created.id, { ownershipPercentage: 30 }))).json() as Body;
    const second = (await call(ctx.platform, 'POST', '/beneficial-owners', owner(created.id, { roles: ['CONTROL_PERSON'], ownershipPercentage: 0 }))).json() as Body;
    const owners = [first, second];

    const read = (await call(ctx.platform, 'GET', `/customers/${created.id}`)).json() as Body;
    expect(read.beneficialOwners).toEqual(owners);
    expect(JSON.stringify(read)).not.toContain('GAMM800520XX1');

    const listed = (await call(ctx.platform, 'GET', '/customers?customerType=BUSINESS&limit=100')).json() as { data: Body[] };
    expect(listed.data.find((c) => c.id === created.id)!.beneficialOwners).toEqual(owners);
    expect(listed.data.every((c) => Array.isArray(c.beneficialOwners))).toBe(true);
    const all = (await call(ctx.platform, 'GET', '/customers?limit=100')).json() as { data: Body[] };
    expect(all.data.find((c) => c.id === individual.id)).not.toHaveProperty('beneficialOwners');

    const patched = await call(ctx.platform, 'PATCH', `/customers/${created.id}`, { customerType: 'BUSINESS', businessInfo: { doingBusinessAs: 'Acme' } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((patched.json() as Body).beneficialOwners).toEqual(owners);
    // Another platform's business shows only its own owners.
    const other = await createCustomer(await ctx.newPlatform(), 'BUSINESS');
    expect(other.beneficialOwners).toEqual([]);

    const deleted = await call(ctx.platform, 'DELETE', `/customers/${created.id}`);
    expect(deleted.statusCode).toBe(200);
    expect((deleted.json() as Body).beneficialOwners).toEqual(owners);
  });

  it('defaults countryOfIssuance to US for SSN and checks the SSN format', async () => {
    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    const ok = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 10, personalInfo: personalInfo({ idType: 'SSN', identifier: '123-45-6789', nationality: 'US' }) }));
    expect(ok.statusCode).toBe(201);
    expect((ok.json() as { personalInfo: Body }).personalInfo.countryOfIssuance).toBe('US');
    const bad = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { personalInfo: personalInfo({ idType: 'SSN', identifier: '666-12-3456', countryOfIssuance: 'MX' }) }));
    const body = expectEnvelope(bad, 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([
      { field: 'personalInfo.identifier', constraint: { format: 'us-ssn' }, message: 'must be a valid SSN (###-##-####)' },
      { field: 'personalInfo.countryOfIssuance', constraint: { enum: ['US'] }, message: 'must be US for SSN' },
    ]);
    // A PATCH of the country alone is held to the SSN on file, and changes nothing.
    const id = (ok.json() as Body).id as string;
    const before = (await call(ctx.platform, 'GET', `/beneficial-owners/${id}`)).json() as Body;
    const moved = await call(ctx.platform, 'PATCH', `/beneficial-owners/${id}`, { personalInfo: { countryOfIssuance: 'FR' } });
    expect(expectEnvelope(moved, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'personalInfo.countryOfIssuance', constraint: { enum: ['US'] }, message: 'must be US for SSN' },
    ]);
    expect((await call(ctx.platform, 'GET', `/beneficial-owners/${id}`)).json()).toEqual(before);
  });

  it('refuses blank names and control characters in the person, on create and update', async () => {
    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    const bad = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { personalInfo: personalInfo({ firstName: '  ', lastName: 'Garcia\u0007' }) }));
    expect(expectEnvelope(bad, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'personalInfo.firstName', message: 'must not be blank' },
      { field: 'personalInfo.lastName', message: 'must not contain control characters (U+0000–U+001F, U+007F–U+009F)' },
    ]);
    expect((await ownersOf(ctx.platform, biz.id)).totalCount).toBe(0);
    const created = (await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id))).json() as Body;
    const patched = await call(ctx.platform, 'PATCH', `/beneficial-owners/${String(created.id)}`, { personalInfo: { address: { line1: '\u200b', postalCode: '06600', country: 'MX' } } });
    expect(fieldsOf(expectEnvelope(patched, 400, 'INVALID_INPUT'))).toEqual(['personalInfo.address.line1']);
    expect((await call(ctx.platform, 'GET', `/beneficial-owners/${String(created.id)}`)).json()).toEqual(created);
  });

  it('masks at most half of a short identifier, never answering it whole', async () => {
    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    const shown: unknown[] = [];
    for (const identifier of ['X', 'AB12', 'ABC1234', 'ABCD1234']) {
      const created = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 0, personalInfo: personalInfo({ identifier }) }));
      expect(created.statusCode, created.body).toBe(201);
      shown.push((created.json() as { personalInfo: Body }).personalInfo.identifier);
    }
    expect(shown).toEqual(['*', '**12', '****234', '****1234']);
  });

  it("offers upstream's IdentificationType, holding an EIN to the format individuals use", async () => {
    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    const ok = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 10, personalInfo: personalInfo({ idType: 'EIN', identifier: '12-3456789' }) }));
    expect(ok.statusCode, ok.body).toBe(201);
    expect((ok.json() as { personalInfo: Body }).personalInfo).toMatchObject({ idType: 'EIN', identifier: '******6789', countryOfIssuance: 'US' });
    const bad = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { personalInfo: personalInfo({ idType: 'EIN', identifier: '123456789', countryOfIssuance: 'MX' }) }));
    expect(expectEnvelope(bad, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'personalInfo.identifier', constraint: { pattern: '^\\d{2}-\\d{7}$' }, message: 'must be a valid EIN (##-#######)' },
      { field: 'personalInfo.countryOfIssuance', constraint: { enum: ['US'] }, message: 'must be US for EIN' },
    ]);
    // Switching an owner to EIN checks the identifier it keeps.
    const id = (ok.json() as Body).id as string;
    const other = await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 10 }));
    const patched = await call(ctx.platform, 'PATCH', `/beneficial-owners/${String((other.json() as Body).id)}`, { personalInfo: { idType: 'EIN' } });
    expect(fieldsOf(expectEnvelope(patched, 400, 'INVALID_INPUT'))).toEqual(['personalInfo.identifier']);
    expect((await call(ctx.platform, 'PATCH', `/beneficial-owners/${id}`, { personalInfo: { identifier: '98-7654321' } })).statusCode).toBe(200);
  });

  it('reports every invalid field at once and creates nothing', async () => {
    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    // The day after today's date at UTC+14, where a day starts first: in the future everywhere.
    const tomorrow = new Date(ctx.clock.now().getTime() + 14 * 3_600_000 + 86_400_000).toISOString().slice(0, 10);
    const response = await call(ctx.platform, 'POST', '/beneficial-owners', {
      customerId: biz.id,
      roles: ['OWNER'],
      ownershipPercentage: 101,
      personalInfo: { firstName: '', lastName: 'X', birthDate: tomorrow, nationality: 'XX', email: 'bad', address: { line1: 'a', country: 'US' }, idType: 'PASSPORT', identifier: 'x' },
      extra: true,
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual([
      'extra',
      'ownershipPercentage',
      'personalInfo.address.postalCode',
      'personalInfo.birthDate',
      'personalInfo.email',
      'personalInfo.firstName',
      'personalInfo.idType',
      'personalInfo.nationality',
      'roles.0',
    ]);
    expect((await ownersOf(ctx.platform, biz.id)).data).toEqual([]);
  });

  it('refuses individuals, unknown and foreign customers, and ownership above 100% in total', async () => {
    const person = await createCustomer(ctx.platform, 'INDIVIDUAL');
    const notBiz = expectEnvelope(await call(ctx.platform, 'POST', '/beneficial-owners', owner(person.id)), 400, 'INVALID_INPUT');
    expect(fieldsOf(notBiz)).toEqual(['customerId']);
    const other = await ctx.newPlatform();
    const foreign = await createCustomer(other, 'BUSINESS');
    expectEnvelope(await call(ctx.platform, 'POST', '/beneficial-owners', owner(foreign.id)), 404, 'USER_NOT_FOUND');
    expectEnvelope(await call(ctx.platform, 'GET', `/beneficial-owners?customerId=${String(foreign.id)}`), 404, 'USER_NOT_FOUND');

    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    const first = (await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 70 }))).json() as Body;
    const over = expectEnvelope(await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 31 })), 400, 'INVALID_INPUT');
    expect(over.details!.errors).toEqual([{ field: 'ownershipPercentage', message: "would bring the customer's owners to 101%; at most 30% is left" }]);
    expect((await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 30 }))).statusCode).toBe(201);
    expectEnvelope(await call(ctx.platform, 'PATCH', `/beneficial-owners/${first.id}`, { ownershipPercentage: 71 }), 400, 'INVALID_INPUT');
    expect(((await call(ctx.platform, 'GET', `/beneficial-owners/${first.id}`)).json() as Body).ownershipPercentage).toBe(70);

    await call(ctx.platform, 'DELETE', `/customers/${biz.id}`);
    expectEnvelope(await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 0 })), 410, 'CUSTOMER_DELETED');
    expect((await ownersOf(ctx.platform, biz.id)).totalCount).toBe(2);
  });

  it("answers 404 for another platform's owner and unknown ids; pages the list", async () => {
    const other = await ctx.newPlatform();
    const foreignBiz = await createCustomer(other, 'BUSINESS');
    const theirs = (await call(other, 'POST', '/beneficial-owners', owner(foreignBiz.id))).json() as Body;
    for (const id of [theirs.id, 'BeneficialOwner:019542f5-b3e7-7d02-8000-000000000001']) {
      expectEnvelope(await call(ctx.platform, 'GET', `/beneficial-owners/${id}`), 404, 'REFERENCE_NOT_FOUND');
      expectEnvelope(await call(ctx.platform, 'PATCH', `/beneficial-owners/${id}`, { roles: ['UBO'] }), 404, 'REFERENCE_NOT_FOUND');
    }
    expect(((await call(other, 'GET', `/beneficial-owners/${theirs.id}`)).json() as Body).roles).toEqual(['UBO', 'DIRECTOR']);

    const biz = await createCustomer(ctx.platform, 'BUSINESS');
    for (let i = 0; i < 3; i++) await call(ctx.platform, 'POST', '/beneficial-owners', owner(biz.id, { ownershipPercentage: 10 }));
    const page = (await call(ctx.platform, 'GET', `/beneficial-owners?customerId=${String(biz.id)}&limit=2`)).json() as { data: Body[]; hasMore: boolean; nextCursor: string };
    expect(page.hasMore).toBe(true);
    const rest = (await call(ctx.platform, 'GET', `/beneficial-owners?customerId=${String(biz.id)}&limit=2&cursor=${page.nextCursor}`)).json() as { data: Body[]; hasMore: boolean };
    expect(rest.hasMore).toBe(false);
    expect(new Set([...page.data, ...rest.data].map((o) => o.id)).size).toBe(3);
    const missing = expectEnvelope(await call(ctx.platform, 'GET', '/beneficial-owners'), 400, 'INVALID_INPUT');
    expect(fieldsOf(missing)).toEqual(['customerId']);
  });
});
