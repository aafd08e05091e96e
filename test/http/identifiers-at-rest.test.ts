import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESEAL_JOB, SEAL_PLAINTEXT_JOB } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { enqueueJob } from '../../src/platform/jobs/index.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * Issue 12 A5: SSN/ITIN/EIN/tax identifiers are sealed at rest under a per-platform key version;
 * the database holds no identifier, responses never return an individual's, an owner's comes back
 * masked, and legacy plaintext rows and rotated keys are re-sealed by a job.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const SSN = '123-45-6789';
const ITIN = '912-70-1234';
const EIN = '47-1234567';
const OWNER_SSN = '234-56-7890';
const ALL = [SSN, ITIN, EIN, OWNER_SSN];

/** Every text cell of every customer and owner row, as a dump would show them. */
async function dump(): Promise<string> {
  const customers = await sql<{ row: string }>`select row_to_json(c)::text as row from customers c`.execute(ctx.handle.db);
  const owners = await sql<{ row: string }>`select row_to_json(o)::text as row from beneficial_owners o`.execute(ctx.handle.db);
  return [...customers.rows, ...owners.rows].map((r) => r.row).join('\n');
}

const ownerBody = (customerId: unknown, identifier = OWNER_SSN) => ({
  customerId,
  roles: ['UBO'],
  ownershipPercentage: 50,
  personalInfo: {
    firstName: 'Olga',
    lastName: 'Owner',
    birthDate: '1980-01-01',
    nationality: 'US',
    address: { line1: '1 Main St', postalCode: '10001', country: 'US' },
    idType: 'SSN',
    identifier,
  },
});

describe('tax identifiers at rest', () => {
  it('are sealed in the database, never returned for individuals or businesses, and masked for owners', async () => {
    const p = await ctx.newPlatform();
    const person = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ida', idType: 'SSN', identifier: SSN });
    expect(person.statusCode, person.body).toBe(201);
    const business = await call(p, 'POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme', country: 'US', incorporatedOn: '2015-01-01', taxId: EIN },
    });
    expect(business.statusCode, business.body).toBe(201);
    const owner = await call(p, 'POST', '/beneficial-owners', ownerBody((business.json() as Body).id));
    expect(owner.statusCode, owner.body).toBe(201);
    expect((owner.json() as { personalInfo: Body }).personalInfo.identifier).toBe('*******7890');
    const patched = await call(p, 'PATCH', `/customers/${String((person.json() as Body).id)}`, { customerType: 'INDIVIDUAL', idType: 'ITIN', identifier: ITIN });
    expect(patched.statusCode, patched.body).toBe(200);

    const responses = [person, business, owner, patched].map((r) => r.body).join('\n');
    const listed = [(await call(p, 'GET', '/customers')).body, (await call(p, 'GET', `/beneficial-owners?customerId=${String((business.json() as Body).id)}`)).body].join('\n');
    for (const value of ALL) {
      expect(responses).not.toContain(value);
      expect(listed).not.toContain(value);
    }
    const raw = await dump();
    for (const value of ALL) expect(raw).not.toContain(value);
    for (const digits of ['123456789', '912701234', '471234567', '234567890']) expect(raw).not.toContain(digits);
    const sealed = await ctx.handle.db.selectFrom('customers').select(['identifier', 'identifier_sealed', 'identifier_key_version']).where('platform_id', '=', p.uuid).execute();
    expect(sealed.every((r) => r.identifier === null && r.identifier_sealed?.startsWith('v1.') && r.identifier_key_version === 1)).toBe(true);
  });

  it('seals legacy plaintext rows with the migration job, and re-seals under a rotated key', async () => {
    const p = await ctx.newPlatform();
    const person = (await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Lee' })).json() as Body;
    const business = (await call(p, 'POST', '/customers', { customerType: 'BUSINESS', businessInfo: { legalName: 'Old Co', country: 'GB', incorporatedOn: '2001-01-01', taxId: 'GB-999' } })).json() as Body;
    const owner = (await call(p, 'POST', '/beneficial-owners', ownerBody(business.id))).json() as Body;
    const uuid = (id: unknown) => String(id).split(':')[1]!;
    // As rows written before sealing existed: plaintext columns, a business taxId in the profile.
    await ctx.handle.db.updateTable('customers').set({ identifier: SSN, identifier_sealed: null, identifier_key_version: null }).where('id', '=', uuid(person.id)).execute();
    await sql`update customers set profile = jsonb_set(profile, '{businessInfo,taxId}', '"GB-999"'), identifier_sealed = null, identifier_key_version = null where id = ${uuid(business.id)}`.execute(ctx.handle.db);
    await ctx.handle.db.updateTable('beneficial_owners').set({ identifier: OWNER_SSN, identifier_sealed: null, identifier_key_version: null }).where('id', '=', uuid(owner.id)).execute();
    expect(await dump()).toContain(SSN);
    // Legacy rows answer as sealed ones do, before the job has run.
    expect((await call(p, 'GET', `/customers/${String(business.id)}`)).body).not.toContain('GB-999');
    expect(((await call(p, 'GET', `/beneficial-owners/${String(owner.id)}`)).json() as { personalInfo: Body }).personalInfo.identifier).toBe('*******7890');

    await withTx(ctx.handle.db, (trx) => enqueueJob(trx, ctx.clock, { kind: SEAL_PLAINTEXT_JOB, payload: {} }));
    await ctx.jobs.runDue();
    let raw = await dump();
    for (const value of [SSN, OWNER_SSN, 'GB-999']) expect(raw).not.toContain(value);

    // Rotation (what `corridor identifiers rotate-key` does): a new version, then the job re-seals.
    await ctx.handle.db.updateTable('platforms').set({ identifier_key_version: 2 }).where('id', '=', p.uuid).execute();
    const before = await ctx.handle.db.selectFrom('beneficial_owners').select('identifier_sealed').where('id', '=', uuid(owner.id)).executeTakeFirstOrThrow();
    await withTx(ctx.handle.db, (trx) => enqueueJob(trx, ctx.clock, { kind: RESEAL_JOB, platformId: p.uuid, payload: {} }));
    await ctx.jobs.runDue();
    const versions = await ctx.handle.db.selectFrom('customers').select('identifier_key_version').where('platform_id', '=', p.uuid).where('identifier_sealed', 'is not', null).execute();
    expect(versions.map((v) => v.identifier_key_version)).toEqual([2, 2]);
    const after = await ctx.handle.db.selectFrom('beneficial_owners').select(['identifier_sealed', 'identifier_key_version']).where('id', '=', uuid(owner.id)).executeTakeFirstOrThrow();
    expect(after.identifier_key_version).toBe(2);
    expect(after.identifier_sealed).not.toBe(before.identifier_sealed);
    // Still opens (under v2): the masked value is unchanged.
    expect(((await call(p, 'GET', `/beneficial-owners/${String(owner.id)}`)).json() as { personalInfo: Body }).personalInfo.identifier).toBe('*******7890');
    raw = await dump();
    for (const value of [SSN, OWNER_SSN, 'GB-999']) expect(raw).not.toContain(value);
  });

  it("seals under each platform's own key: a value moved to another row or platform does not open", async () => {
    const [a, b] = [await ctx.newPlatform(), await ctx.newPlatform()];
    const bizA = (await call(a, 'POST', '/customers', { customerType: 'BUSINESS', businessInfo: { legalName: 'A', country: 'GB', incorporatedOn: '2001-01-01', taxId: 'X' } })).json() as Body;
    const bizB = (await call(b, 'POST', '/customers', { customerType: 'BUSINESS', businessInfo: { legalName: 'B', country: 'GB', incorporatedOn: '2001-01-01', taxId: 'Y' } })).json() as Body;
    const ownerA = (await call(a, 'POST', '/beneficial-owners', ownerBody(bizA.id))).json() as Body;
    const ownerB = (await call(b, 'POST', '/beneficial-owners', ownerBody(bizB.id, '345-67-8901'))).json() as Body;
    const sealedA = await ctx.handle.db.selectFrom('beneficial_owners').select('identifier_sealed').where('id', '=', String(ownerA.id).split(':')[1]!).executeTakeFirstOrThrow();
    await ctx.handle.db.updateTable('beneficial_owners').set({ identifier_sealed: sealedA.identifier_sealed }).where('id', '=', String(ownerB.id).split(':')[1]!).execute();
    expect((await call(b, 'GET', `/beneficial-owners/${String(ownerB.id)}`)).statusCode).toBe(500);
  });
});
