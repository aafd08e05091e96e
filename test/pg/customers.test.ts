import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';

/** Races between concurrent writers, which only a server with several connections can run. */
describe.runIf(onPostgres)('customers on PostgreSQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  const post = (app: TestContext['app'], path: string, payload: object) =>
    app.inject({ method: 'POST', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, payload });

  it('two simultaneous creates with the same platformCustomerId: exactly one wins, the other is 409', async () => {
    const other = await ctx.secondApp();
    for (let round = 0; round < 5; round++) {
      const body = { customerType: 'INDIVIDUAL', platformCustomerId: `race-${round}`, fullName: 'Racer' };
      const responses = await Promise.all([post(ctx.app, '/customers', body), post(other, '/customers', body)]);
      expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 409]);
      const loser = responses.find((r) => r.statusCode === 409)!.json() as { code: string; details: unknown };
      expect(loser).toMatchObject({ code: 'CONFLICT', details: { field: 'platformCustomerId', platformCustomerId: `race-${round}` } });
      const list = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?platformCustomerId=race-${round}`, headers: { authorization: ctx.platform.auth } });
      expect((list.json() as { totalCount: number }).totalCount).toBe(1);
    }
  });

  it('two simultaneous creates with the same umaAddress: exactly one wins, the other is UMA_ADDRESS_EXISTS', async () => {
    const bodies = [0, 1].map((i) => ({ customerType: 'INDIVIDUAL', platformCustomerId: `uma-${i}`, umaAddress: '$racer@pay.example.com' }));
    const responses = await Promise.all(bodies.map((b) => post(ctx.app, '/customers', b)));
    expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    expect((responses.find((r) => r.statusCode === 409)!.json() as { code: string }).code).toBe('UMA_ADDRESS_EXISTS');
  });

  it('concurrent beneficial owners cannot together pass 100% ownership', async () => {
    const created = await post(ctx.app, '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Race Inc', country: 'GB', incorporatedOn: '2020-01-01', taxId: 'GB1' },
    });
    const customerId = (created.json() as { id: string }).id;
    const owner = {
      customerId,
      roles: ['UBO'],
      ownershipPercentage: 60,
      personalInfo: {
        firstName: 'A',
        lastName: 'B',
        birthDate: '1980-01-01',
        nationality: 'GB',
        address: { line1: '1 High St', postalCode: 'SW1', country: 'GB' },
        idType: 'NON_US_TAX_ID',
        identifier: 'AB123456C',
      },
    };
    const responses = await Promise.all([post(ctx.app, '/beneficial-owners', owner), post(ctx.app, '/beneficial-owners', owner)]);
    expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 400]);
  });
});
