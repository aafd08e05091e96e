import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * A UMA address is unique among one platform's live customers only (DESIGN §2 Tenancy: every
 * query is scoped by the platform). Creating two platforms' customers with the same address is
 * tested elsewhere; a mutation audit found that the PATCH path's check, looked up without the
 * platform, went unnoticed: platform B could not take an address only platform A's customer held.
 */
let ctx: TestContext;
let a: TestPlatform;
let b: TestPlatform;

beforeAll(async () => {
  ctx = await createTestContext();
  a = await ctx.newPlatform();
  b = await ctx.newPlatform();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const call = (p: TestPlatform, method: 'POST' | 'PATCH' | 'GET', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
async function create(p: TestPlatform, extra: Body = {}): Promise<Body & { id: string }> {
  const response = await call(p, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `guard-${++seq}`,
    fullName: 'Jane Doe',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: { line1: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body & { id: string };
}

describe('PATCH /customers/{customerId} umaAddress', () => {
  it("takes an address only another platform's customer holds (200), and refuses one its own platform's customer holds (409)", async () => {
    await create(a, { umaAddress: '$held@pay.example.com' });
    const mine = await create(b);
    const taken = await call(b, 'PATCH', `/customers/${mine.id}`, { customerType: 'INDIVIDUAL', umaAddress: '$Held@pay.example.com' });
    expect(taken.statusCode, taken.body).toBe(200);
    expect((taken.json() as Body).umaAddress).toBe('$Held@pay.example.com');

    const sibling = await create(b);
    expectEnvelope(await call(b, 'PATCH', `/customers/${sibling.id}`, { customerType: 'INDIVIDUAL', umaAddress: '$held@pay.example.com' }), 409, 'UMA_ADDRESS_EXISTS');
  });
});

/**
 * GET /customers/kyc-link names the customer by the platform's own id (platformCustomerId), which
 * two platforms may both use: a mutation audit found that looking it up without the platform went
 * unnoticed. Each platform must get a link for its own customer (the lookup without the platform
 * finds the same row for both, so one of them would get the other's customer, or a 404).
 */
describe('GET /customers/kyc-link?platformCustomerId=', () => {
  it("names each platform's own customer when two platforms use the same platformCustomerId, and is 404 USER_NOT_FOUND for an id only another platform uses", async () => {
    const theirs = await create(a, { platformCustomerId: 'guard-shared-kyc' });
    const mine = await create(b, { platformCustomerId: 'guard-shared-kyc' });
    for (const [platform, customer] of [
      [a, theirs],
      [b, mine],
    ] as const) {
      const link = await call(platform, 'GET', '/customers/kyc-link?platformCustomerId=guard-shared-kyc');
      expect(link.statusCode, link.body).toBe(200);
      expect((link.json() as Body).customerId).toBe(customer.id);
    }
    const onlyTheirs = await create(a);
    expectEnvelope(await call(b, 'GET', `/customers/kyc-link?platformCustomerId=${String(onlyTheirs.platformCustomerId)}`), 404, 'USER_NOT_FOUND');
  });
});
