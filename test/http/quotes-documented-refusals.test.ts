import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, type Json } from '../helpers/payments.js';

/**
 * Refusals of POST /quotes the quotes README documents and no other test asks for: each before
 * anything is written, also through immediatelyExecute (the money stays where it is).
 */
let ctx: TestContext;
let p: TestPlatform;
let eurAccount: string;
let usdAccount: string;
beforeAll(async () => {
  ctx = await createTestContext();
  p = await ctx.newPlatform();
  const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
  expect((await call(ctx, p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('EUR')] })).statusCode).toBe(200);
  const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data;
  eurAccount = own.find((a) => a.balance.currency.code === 'EUR')!.id as string;
  usdAccount = own.find((a) => a.balance.currency.code === 'USD')!.id as string;
  for (const id of [eurAccount, usdAccount]) expect((await call(ctx, p, 'POST', `/sandbox/internal-accounts/${id}/fund`, { amount: 100_000 })).statusCode).toBe(200);
});
afterAll(() => ctx.close());
afterEach(async () => {
  const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data;
  expect(own.filter((a) => a.id === eurAccount || a.id === usdAccount).map((a) => a.totalBalance.amount)).toEqual([100_000, 100_000]);
  expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
  await expectLedgerConsistent(ctx.handle.db);
});

async function payee(type: string): Promise<string> {
  const created = await call(ctx, p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now())[type]!);
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as { id: string }).id;
}

const sending = (source: string, destination: Json, extra: Json = {}) => ({
  source: { sourceType: 'ACCOUNT', accountId: source },
  destination: { destinationType: 'ACCOUNT', ...destination },
  lockedCurrencySide: 'SENDING',
  lockedCurrencyAmount: 10_000,
  immediatelyExecute: true,
  ...extra,
});

describe('POST /quotes refusals', () => {
  it('platformFeeOverride from a source that is not USD: 501 NOT_IMPLEMENTED (the spec: it needs a USD source currency)', async () => {
    const override = { platformFeeOverride: { platformFixedFee: { amount: 0, currency: 'USD' }, platformVariableFeeBps: 10 } };
    expectEnvelope(await call(ctx, p, 'POST', '/quotes', sending(eurAccount, { accountId: await payee('EUR_ACCOUNT') }, override)), 501, 'NOT_IMPLEMENTED');
  });

  it('a paymentRail the destination account is not paid on in its currency: 400 INVALID_INPUT naming destination.paymentRail', async () => {
    const refused = expectEnvelope(await call(ctx, p, 'POST', '/quotes', sending(usdAccount, { accountId: await payee('USD_ACCOUNT'), paymentRail: 'SEPA' })), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'destination.paymentRail' }] });
  });
});
