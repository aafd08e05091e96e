import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';

/**
 * A platform that sends from no currency (none of its supportedCurrencies enables OUTGOING) has
 * nothing to offer a sender: an external-account lookup is refused 400, storing no lookup, not
 * priced from a currency it does not send (nor a 500).
 */
let ctx: TestContext;
let receiving: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext();
  receiving = await ctx.newPlatform();
});
afterAll(() => ctx.close());

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: receiving.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

describe('GET /receiver/external-account/{accountId} on a platform that only receives', () => {
  it('is 400 INVALID_INPUT naming why, and stores no lookup', async () => {
    const patched = await call('PATCH', '/config', {
      supportedCurrencies: [{ currencyCode: 'USD', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING'] }],
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'only-receives', fullName: 'Ann Lee' });
    expect(created.statusCode, created.body).toBe(201);
    const sender = (created.json() as { id: string }).id;
    const account = await call('POST', '/platform/external-accounts', validSamples(ctx.clock.now()).MXN_ACCOUNT);
    expect(account.statusCode, account.body).toBe(201);
    const accountId = (account.json() as { id: string }).id;

    const refused = expectEnvelope(await call('GET', `/receiver/external-account/${accountId}?customerId=${sender}`), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [expect.objectContaining({ field: 'customerId', message: expect.stringMatching(/sends from no currency/) })] });
    expect(await ctx.handle.db.selectFrom('receiver_lookups').select('id').where('platform_id', '=', receiving.uuid).execute()).toEqual([]);
  });
});
