import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

// Rules of the beneficial-owners module that its mutation audit found unguarded: each test fails
// with one small change to src/modules/beneficial-owners (named in the test).

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const read = async (pl: TestPlatform, path: string) => (await call(pl, 'GET', path)).json() as Body;

let seq = 0;
const ADDRESS = { line1: '1 Main St', postalCode: '62701', country: 'US' };

async function business(pl: TestPlatform): Promise<Body> {
  const created = await call(pl, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId: `bor-${++seq}`,
    address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'DE-1234567' },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Body;
}

const personalInfo = (extra: Body = {}): Body => ({
  firstName: 'Ann',
  lastName: 'Lee',
  birthDate: '1975-07-07',
  nationality: 'US',
  address: ADDRESS,
  idType: 'SSN',
  identifier: '123-45-6789',
  ...extra,
});

async function addOwner(pl: TestPlatform, customerId: unknown, ownershipPercentage: number, info: Body = {}): Promise<Body> {
  const response = await call(pl, 'POST', '/beneficial-owners', { customerId, roles: ['UBO', 'CONTROL_PERSON'], ownershipPercentage, personalInfo: personalInfo(info) });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

/** Every document a review of the business and its one owner reads. */
async function fileEverything(pl: TestPlatform, b: Body, owner: Body): Promise<void> {
  await uploadPdf(ctx.app, pl, b.id, 'CERTIFICATE_OF_INCORPORATION', { documentNumber: 'DE-1234567' });
  await uploadPdf(ctx.app, pl, b.id, 'DIRECTOR_REGISTRY');
  await uploadPdf(ctx.app, pl, b.id, 'SHAREHOLDER_REGISTER');
  await uploadPdf(ctx.app, pl, b.id, 'BANK_STATEMENT');
  await uploadPdf(ctx.app, pl, owner.id, 'PASSPORT');
}

/** A sandbox business with one owner, approved by a review (its job run). */
async function approvedBusiness(pl: TestPlatform): Promise<{ b: Body; owner: Body }> {
  const b = await business(pl);
  const owner = await addOwner(pl, b.id, 60);
  await fileEverything(pl, b, owner);
  const v = await startVerification(ctx.app, pl, b.id);
  expect(v.verificationStatus).toBe('IN_PROGRESS');
  await ctx.jobs.runDue();
  expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('APPROVED');
  expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('APPROVED');
  expect((await read(pl, `/beneficial-owners/${String(owner.id)}`)).kycStatus).toBe('APPROVED');
  return { b, owner };
}

describe('beneficial owner rules', () => {
  // service.ts personalInfoErrors: `birthDate > latestDateOnEarth(now)` (mutant: `>=`).
  it('accepts a birth date of the latest date anywhere on Earth today, refuses the day after', async () => {
    const pl = ctx.platform;
    const b = await business(pl);
    const latest = new Date(ctx.clock.now().getTime() + 14 * 3_600_000);
    const today = latest.toISOString().slice(0, 10);
    const tomorrow = new Date(latest.getTime() + 86_400_000).toISOString().slice(0, 10);
    const owner = await addOwner(pl, b.id, 10, { birthDate: today });
    expect((owner.personalInfo as Body).birthDate).toBe(today);
    const refused = await call(pl, 'POST', '/beneficial-owners', { customerId: b.id, roles: ['UBO'], ownershipPercentage: 10, personalInfo: personalInfo({ birthDate: tomorrow }) });
    expect(expectEnvelope(refused, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'personalInfo.birthDate', constraint: { format: 'date' }, message: 'must not be in the future' },
    ]);
    const patched = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { personalInfo: { birthDate: today } });
    expect(patched.statusCode, patched.body).toBe(200);
  });

  // service.ts personalInfoErrors: the identifier is checked when it alone is sent (mutant: only when idType is sent).
  it('holds an identifier patched alone to the US format of the idType on file, and keeps the old one', async () => {
    const pl = ctx.platform;
    const b = await business(pl);
    const owner = await addOwner(pl, b.id, 10);
    const bad = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { personalInfo: { identifier: '12-3451111' } });
    expect(expectEnvelope(bad, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'personalInfo.identifier', constraint: { format: 'us-ssn' }, message: 'must be a valid SSN (###-##-####)' },
    ]);
    expect(((await read(pl, `/beneficial-owners/${String(owner.id)}`)).personalInfo as Body).identifier).toBe('*******6789');
    // service.ts updateBeneficialOwner: a valid new identifier is sealed and stored (mutant: the sealing spread dropped).
    const good = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { personalInfo: { identifier: '234-56-7890' } });
    expect(good.statusCode, good.body).toBe(200);
    expect(((good.json() as Body).personalInfo as Body).identifier).toBe('*******7890');
    expect(((await read(pl, `/beneficial-owners/${String(owner.id)}`)).personalInfo as Body).identifier).toBe('*******7890');
  });

  // service.ts updateBeneficialOwner: a share of 0 is a share (mutant: `update.ownershipPercentage ? … : {}` drops it).
  it('stores an ownership percentage patched to 0, and lets a lone owner take 100', async () => {
    const pl = ctx.platform;
    const b = await business(pl);
    const owner = await addOwner(pl, b.id, 60);
    const zero = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { ownershipPercentage: 0 });
    expect(zero.statusCode, zero.body).toBe(200);
    expect((zero.json() as Body).ownershipPercentage).toBe(0);
    expect((await read(pl, `/beneficial-owners/${String(owner.id)}`)).ownershipPercentage).toBe(0);
    const all = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { ownershipPercentage: 100 });
    expect(all.statusCode, all.body).toBe(200);
    expect((await read(pl, `/beneficial-owners/${String(owner.id)}`)).ownershipPercentage).toBe(100);
  });

  // service.ts updateBeneficialOwner: personChanged compares each sent field with the one on file (mutant: any personalInfo sent counts as a change).
  it('a PATCH resending the person as it is on file keeps the owner and its business APPROVED', async () => {
    const pl = ctx.platform;
    const { b, owner } = await approvedBusiness(pl);
    const same = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, {
      personalInfo: { firstName: 'Ann', lastName: 'Lee', birthDate: '1975-07-07', address: ADDRESS, identifier: '123-45-6789', countryOfIssuance: 'US' },
    });
    expect(same.statusCode, same.body).toBe(200);
    expect((same.json() as Body).kycStatus).toBe('APPROVED');
    expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('APPROVED');
    // A real change does move both (the rule the comparison serves).
    const changed = await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { personalInfo: { firstName: 'Anne' } });
    expect((changed.json() as Body).kycStatus).toBe('UNVERIFIED');
    expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('UNVERIFIED');
  });

  // schemas.ts: ownershipPercentage minimum 0 (mutant: -100), roles minItems 1 (mutant: 0), uniqueItems (mutant: dropped), update minProperties 1 (mutant: dropped).
  it('refuses a negative share, no roles, a repeated role and an empty PATCH, changing nothing', async () => {
    const pl = ctx.platform;
    const b = await business(pl);
    const owner = await addOwner(pl, b.id, 10);
    const fields = (response: { statusCode: number; json(): unknown }) =>
      (expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors as Array<{ field: string }>).map((e) => e.field);
    const create = (extra: Body) => call(pl, 'POST', '/beneficial-owners', { customerId: b.id, roles: ['UBO'], ownershipPercentage: 10, personalInfo: personalInfo(), ...extra });
    expect(fields(await create({ ownershipPercentage: -1 }))).toEqual(['ownershipPercentage']);
    expect(fields(await create({ roles: [] }))).toEqual(['roles']);
    expect(fields(await create({ roles: ['UBO', 'UBO'] }))).toEqual(['roles']);
    expect(fields(await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { ownershipPercentage: -5 }))).toEqual(['ownershipPercentage']);
    expect(fields(await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, { roles: [] }))).toEqual(['roles']);
    expectEnvelope(await call(pl, 'PATCH', `/beneficial-owners/${String(owner.id)}`, {}), 400, 'INVALID_INPUT');
    expect(await read(pl, `/beneficial-owners/${String(owner.id)}`)).toEqual(owner);
    expect(((await read(pl, `/beneficial-owners?customerId=${String(b.id)}`)).data as Body[]).map((o) => o.id)).toEqual([owner.id]);
  });

  // repo.ts listOwners: the cursor excludes the last owner shown (mutant: `<=`).
  it('pages the owners without repeating one across pages', async () => {
    const pl = ctx.platform;
    const b = await business(pl);
    const ids: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      ctx.clock.advance(1000);
      ids.push((await addOwner(pl, b.id, 10)).id);
    }
    const first = await read(pl, `/beneficial-owners?customerId=${String(b.id)}&limit=2`);
    expect((first.data as Body[]).map((o) => o.id)).toEqual([ids[2], ids[1]]);
    const rest = await read(pl, `/beneficial-owners?customerId=${String(b.id)}&limit=2&cursor=${String(first.nextCursor)}`);
    expect((rest.data as Body[]).map((o) => o.id)).toEqual([ids[0]]);
    expect(rest.hasMore).toBe(false);
  });
});
