import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, type Json } from '../helpers/payments.js';

/**
 * A deposit to a BTC account's Bitcoin address (its `BITCOIN_L1` funding instruction) arrives on
 * the BITCOIN network, as the API names it (`onChainTransaction.network`, an IncomingTransaction's
 * network enum): the instruction's account type is not a network name.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

describe('a sandbox deposit to a Bitcoin (L1) address', () => {
  it('is credited on the BITCOIN network, its transaction hash shown; another rail is refused', async () => {
    const p = await ctx.newPlatform();
    const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
    expect((await call(ctx, p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('BTC')] })).statusCode).toBe(200);
    const created = await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'btc-1', fullName: 'Ann Lee', currencies: ['BTC'] });
    expect(created.statusCode, created.body).toBe(201);
    const account = ((await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${(created.json() as Json).id}&currency=BTC`)).json() as { data: Json[] }).data[0]!;
    const address = (account.fundingPaymentInstructions as Json[]).find((i) => i.accountOrWalletInfo.accountType === 'BITCOIN_L1')!.accountOrWalletInfo.address as string;
    const hash = 'a1075db55d416d3ca199f55b6084e2115b9345e16c5cf302fc80e9d5fbf5d48d';

    const refused = expectEnvelope(await call(ctx, p, 'POST', '/sandbox/deposits', { reference: address, amount: 5_000, rail: 'LIGHTNING' }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'rail', constraint: { enum: ['BITCOIN'] } }] });

    const credited = await call(ctx, p, 'POST', '/sandbox/deposits', { reference: address, amount: 5_000, sender: { transactionHash: hash } });
    expect(credited.statusCode, credited.body).toBe(200);
    expect(credited.json()).toMatchObject({
      status: 'COMPLETED',
      source: { sourceType: 'REALTIME_FUNDING', currency: 'BTC', onChainTransaction: { network: 'BITCOIN', transactionHash: hash } },
      destination: { accountId: account.id, currency: 'BTC' },
      receivedAmount: { amount: 5_000 },
    });
  });
});
