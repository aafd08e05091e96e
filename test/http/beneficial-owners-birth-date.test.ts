import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const personalInfo = (birthDate: string): Body => ({
  firstName: 'Maria',
  lastName: 'Garcia',
  birthDate,
  nationality: 'MX',
  address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' },
  idType: 'NON_US_TAX_ID',
  identifier: 'GAMM800520XX1',
});

describe('beneficial owner birth dates', () => {
  it('refuses a birth date before 1900, as for an individual customer, on create and on update, and changes nothing', async () => {
    const biz = (await call('POST', '/customers', { customerType: 'BUSINESS', businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } })).json() as Body;
    const expected = [{ field: 'personalInfo.birthDate', constraint: { format: 'date' }, message: 'must not be before 1900-01-01' }];
    for (const birthDate of ['1899-12-31', '1800-01-01', '0000-01-01']) {
      const body = expectEnvelope(await call('POST', '/beneficial-owners', { customerId: biz.id, roles: ['UBO'], ownershipPercentage: 10, personalInfo: personalInfo(birthDate) }), 400, 'INVALID_INPUT');
      expect(body.details!.errors).toEqual(expected);
    }
    const list = async () => ((await call('GET', `/beneficial-owners?customerId=${String(biz.id)}`)).json() as { data: Body[] }).data;
    expect(await list()).toEqual([]);

    const created = await call('POST', '/beneficial-owners', { customerId: biz.id, roles: ['UBO'], ownershipPercentage: 10, personalInfo: personalInfo('1900-01-01') });
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as Body).id as string;
    const body = expectEnvelope(await call('PATCH', `/beneficial-owners/${id}`, { personalInfo: { birthDate: '1899-12-31' } }), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual(expected);
    expect(((await call('GET', `/beneficial-owners/${id}`)).json() as { personalInfo: Body }).personalInfo.birthDate).toBe('1900-01-01');
  });
});
