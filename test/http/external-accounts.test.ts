import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const call = (p: TestPlatform, method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
async function newCustomer(p: TestPlatform): Promise<string> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `ext-${++seq}`, fullName: 'Ann Lee' });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { id: string }).id;
}

const person = { beneficiaryType: 'INDIVIDUAL', fullName: 'John Doe' };

describe('smoke', () => {
  it('creates, reads, lists and deletes a USD account', async () => {
    const customerId = await newCustomer(ctx.platform);
    const created = await call(ctx.platform, 'POST', '/customers/external-accounts', {
      customerId,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '12345678901', routingNumber: '021000021', beneficiary: person },
    });
    expect(created.statusCode, created.body).toBe(201);
    const account = created.json() as Body & { id: string };
    const got = await call(ctx.platform, 'GET', `/customers/external-accounts/${account.id}`);
    expect(got.json()).toEqual(account);
    const bad = await call(ctx.platform, 'POST', '/customers/external-accounts', {
      customerId,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '12345678901', routingNumber: '021000022', beneficiary: person },
    });
    const list = await call(ctx.platform, 'GET', `/customers/external-accounts`);
    expect((await call(ctx.platform, 'DELETE', `/customers/external-accounts/${account.id}`)).statusCode).toBe(204);
    expectEnvelope(await call(ctx.platform, 'GET', `/customers/external-accounts/${account.id}`), 404, 'REFERENCE_NOT_FOUND');
  });
});
