import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';

/**
 * A SWIFT account names the account at the bank by its number or its IBAN: with neither it would
 * be a payout destination that names only a bank. 400 INVALID_INPUT on accountInfo.accountNumber,
 * and nothing is created; either one alone is enough.
 */

type Body = Record<string, any>;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('a SWIFT account', () => {
  it('needs an accountNumber or an iban', async () => {
    const p = await ctx.newPlatform();
    const post = (body: Body) => ctx.app.inject({ method: 'POST', url: `${BASE}/platform/external-accounts`, headers: { authorization: p.auth }, payload: body });
    const sample = validSamples(ctx.clock.now()).SWIFT_ACCOUNT!;
    const { iban, ...bankOnly } = sample.accountInfo;
    const refused = expectEnvelope(await post({ ...sample, accountInfo: bankOnly }), 400, 'INVALID_INPUT');
    expect((refused.details?.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['accountInfo.accountNumber']);
    const listed = (await ctx.app.inject({ method: 'GET', url: `${BASE}/platform/external-accounts`, headers: { authorization: p.auth } })).json() as Body;
    expect(listed.totalCount).toBe(0);
    expect((await post({ ...sample, accountInfo: { ...bankOnly, iban } })).statusCode).toBe(201);
    expect((await post({ ...sample, accountInfo: { ...bankOnly, accountNumber: '0123456789' } })).statusCode).toBe(201);
  });
});
