import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESEAL_BATCH, RESEAL_JOB } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { enqueueJob } from '../../src/platform/jobs/index.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { postCsvImport } from '../helpers/multipart.js';
import { call } from '../helpers/payments.js';

/**
 * Boundaries of the customer rules (src/modules/customers/README.md) that the broader suites
 * (customers.test.ts, identifiers-at-rest.test.ts) do not pin: each test here fails if one guard
 * of validation.ts or identifiers.ts is loosened.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type FieldErrors = Array<{ field: string; constraint?: Record<string, unknown>; message?: string }>;

const errorsOf = (body: { details?: Record<string, unknown> }) => body.details!.errors as FieldErrors;

let seq = 0;
const individual = (extra: Body = {}): Body => ({
  customerType: 'INDIVIDUAL',
  platformCustomerId: `rules-ind-${++seq}`,
  fullName: 'Jane Doe',
  birthDate: '1990-01-15',
  idType: 'SSN',
  identifier: '123-45-6789',
  ...extra,
});
const businessInfo = (extra: Body = {}): Body => ({ legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', entityType: 'LLC', ...extra });

async function create(p: TestPlatform, body: Body): Promise<Body> {
  const response = await call(ctx, p, 'POST', '/customers', body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

describe('customer rules at their boundaries', () => {
  it('takes dates from 1900-01-01 on and refuses the day before, for birth and incorporation dates', async () => {
    const p = ctx.platform;
    await create(p, individual({ birthDate: '1900-01-01' }));
    const born = expectEnvelope(await call(ctx, p, 'POST', '/customers', individual({ birthDate: '1899-12-31' })), 400, 'INVALID_INPUT');
    expect(errorsOf(born)).toEqual([{ field: 'birthDate', constraint: { format: 'date' }, message: 'must not be before 1900-01-01' }]);
    await create(p, { customerType: 'BUSINESS', businessInfo: businessInfo({ incorporatedOn: '1900-01-01' }) });
    const incorporated = expectEnvelope(await call(ctx, p, 'POST', '/customers', { customerType: 'BUSINESS', businessInfo: businessInfo({ incorporatedOn: '1899-12-31' }) }), 400, 'INVALID_INPUT');
    expect(errorsOf(incorporated)).toEqual([{ field: 'businessInfo.incorporatedOn', constraint: { format: 'date' }, message: 'must not be before 1900-01-01' }]);
  });

  it('on PATCH, takes the idType on file again without an identifier, but not another idType', async () => {
    const p = ctx.platform;
    const jane = await create(p, individual());
    const same = await call(ctx, p, 'PATCH', `/customers/${String(jane.id)}`, { customerType: 'INDIVIDUAL', idType: 'SSN' });
    expect(same.statusCode, same.body).toBe(200);
    const other = expectEnvelope(await call(ctx, p, 'PATCH', `/customers/${String(jane.id)}`, { customerType: 'INDIVIDUAL', idType: 'ITIN' }), 400, 'INVALID_INPUT');
    expect(errorsOf(other).map((e) => e.field)).toEqual(['identifier']);
    expect(((await call(ctx, p, 'GET', `/customers/${String(jane.id)}`)).json() as Body).idType).toBe('SSN');
  });

  it('takes line breaks in a business’s sourceOfFunds (its own words), as in the descriptions, and nowhere else', async () => {
    const p = ctx.platform;
    const words = 'Revenue from consulting\nand a 2019 seed round';
    const biz = await create(p, { customerType: 'BUSINESS', businessInfo: businessInfo({ sourceOfFunds: words }) });
    expect((biz.businessInfo as Body).sourceOfFunds).toBe(words);
    const named = expectEnvelope(await call(ctx, p, 'POST', '/customers', { customerType: 'BUSINESS', businessInfo: businessInfo({ doingBusinessAs: 'Acme\nTrading' }) }), 400, 'INVALID_INPUT');
    expect(errorsOf(named).map((e) => e.field)).toEqual(['businessInfo.doingBusinessAs']);
  });

  it('names an unknown field once, not again for the blank text inside it', async () => {
    const response = await call(ctx, ctx.platform, 'POST', '/customers', individual({ favourites: { colour: '   ', food: 'x\u0007' } }));
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(errorsOf(body).map((e) => e.field)).toEqual(['favourites']);
  });

  it('a BUSINESS row imported beside individuals on an auto-approving sandbox starts UNVERIFIED; only the individual is approved', async () => {
    const p = await ctx.newPlatform();
    const csv = [
      'platformCustomerId,customerType,fullName,addressLine1,city,state,postalCode,country,businessLegalName,businessTaxId,businessIncorporatedOn',
      'mixed-person,INDIVIDUAL,John Doe,,,,,,,,',
      'mixed-business,BUSINESS,,400 Commerce Way,Austin,TX,78701,US,Acme Inc.,12-3456789,2010-06-01',
    ].join('\r\n');
    const accepted = await postCsvImport(ctx.app, p, csv);
    expect(accepted.statusCode, accepted.body).toBe(202);
    while ((await ctx.jobs.runDue()) > 0);
    const named = async (id: string) => ((await call(ctx, p, 'GET', `/customers?platformCustomerId=${id}`)).json() as { data: Body[] }).data;
    expect(await named('mixed-person')).toEqual([expect.objectContaining({ kycStatus: 'APPROVED' })]);
    expect(await named('mixed-business')).toEqual([expect.objectContaining({ customerType: 'BUSINESS', kybStatus: 'UNVERIFIED' })]);
  });

  it('re-seals every customer after a key rotation, over more than one batch', async () => {
    const p = await ctx.newPlatform();
    const total = RESEAL_BATCH + 5;
    for (let i = 0; i < total; i += 25) {
      await Promise.all(
        Array.from({ length: Math.min(25, total - i) }, (_, k) =>
          create(p, { customerType: 'BUSINESS', platformCustomerId: `reseal-${i + k}`, businessInfo: { legalName: 'Old Co', country: 'GB', incorporatedOn: '2001-01-01', taxId: `GB-${i + k}` } }),
        ),
      );
    }
    await ctx.handle.db.updateTable('platforms').set({ identifier_key_version: 2 }).where('id', '=', p.uuid).execute();
    await withTx(ctx.handle.db, (trx) => enqueueJob(trx, ctx.clock, { kind: RESEAL_JOB, platformId: p.uuid, payload: {} }));
    await ctx.jobs.runDue();
    const rows = await ctx.handle.db.selectFrom('customers').select('identifier_key_version').where('platform_id', '=', p.uuid).execute();
    expect(rows).toHaveLength(total);
    expect(rows.filter((r) => r.identifier_key_version !== 2)).toEqual([]);
  }, 60_000);
});
