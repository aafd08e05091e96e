import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { call, type Json } from '../helpers/payments.js';

/**
 * What POST /quotes refuses from the request alone is refused before anything is read, the rates
 * included (quotes README, "Refusals"): a production platform whose deployment has no rate
 * provider (503 SERVICE_UNAVAILABLE, retryable, for any request it must price) answers each 400
 * as a sandbox one does — not 503, which a client would retry for a request that can never
 * succeed. To a UMA address they also come before the Idempotency-Key's claim and the pay request.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const internal = 'InternalAccount:019542f5-b3e7-1d02-0000-000000000001';
const external = 'ExternalAccount:019542f5-b3e7-1d02-0000-000000000002';
const umaLookup = 'Lookup:019542f5-b3e7-1d02-0000-000000000003';
const locked = { lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 };
const toAccount = { destinationType: 'ACCOUNT', accountId: external };
const toUma = { destinationType: 'UMA_ADDRESS', umaAddress: '$bob@vasp.example' };
const fromAccount = (accountId: string) => ({ sourceType: 'ACCOUNT', accountId });

const malformed: Array<[string, Json, string, string]> = [
  ['a UMA lookup’s id to an account', { lookupId: umaLookup, source: fromAccount(internal), destination: toAccount, ...locked }, 'INVALID_INPUT', 'lookupId'],
  ['real-time funding in USDC without its network', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC' }, destination: toAccount, ...locked }, 'INVALID_INPUT', 'source.cryptoNetwork'],
  ['real-time funding in USD on a network', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', cryptoNetwork: 'SOLANA' }, destination: toAccount, ...locked }, 'INVALID_INPUT', 'source.cryptoNetwork'],
  ['a UMA address without lookupId', { source: fromAccount(internal), destination: toUma, ...locked }, 'INVALID_INPUT', 'lookupId'],
  ['a UMA address from an external account', { lookupId: umaLookup, source: fromAccount(external), destination: toUma, ...locked }, 'INVALID_INPUT', 'source.accountId'],
  ['a malformed UMA address', { lookupId: umaLookup, source: fromAccount(internal), destination: { ...toUma, umaAddress: 'bob@vasp' }, ...locked }, 'INVALID_UMA_ADDRESS', 'destination.umaAddress'],
];

describe('POST /quotes: the request’s own refusals before the rates', () => {
  it.each(malformed)('%s: 400 on a production platform without a rate provider, with or without an Idempotency-Key', async (name, body, code, field) => {
    const production = await ctx.newPlatform('production');
    for (const headers of [{}, { 'idempotency-key': `malformed-${name}` }] as Array<Record<string, string>>) {
      const refused = expectEnvelope(await call(ctx, production, 'POST', '/quotes', body, headers), 400, code);
      expect(JSON.stringify(refused)).toContain(field);
    }
    // The Idempotency-Key was not claimed: nothing was written.
    expect(await ctx.handle.db.selectFrom('idempotency_keys').select('key').where('platform_id', '=', production.uuid).execute()).toEqual([]);
  });

  it('a well-formed request on that platform is the rate provider’s 503 (the refusals above are not the platform’s)', async () => {
    const production = await ctx.newPlatform('production');
    expectEnvelope(await call(ctx, production, 'POST', '/quotes', { source: fromAccount(internal), destination: toAccount, ...locked }), 503, 'SERVICE_UNAVAILABLE');
  });
});
