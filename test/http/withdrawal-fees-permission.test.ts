import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { solanaWallet } from '../helpers/external-accounts.js';

/**
 * POST /crypto/estimate-withdrawal-fee only reads: what a withdrawal would cost, nothing reserved
 * or moved (upstream: "to show fee information to customers before they initiate a
 * withdrawal"). A POST, it fell to the default for writes (MANAGE); it needs only VIEW, which
 * every token holds, as the other reads do.
 */
let ctx: TestContext;
let usdcAccount: string;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

beforeAll(async () => {
  ctx = await createTestContext();
  const usdc = { currencyCode: 'USDC', minAmount: 1, maxAmount: 1_000_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] };
  const patched = await call(ctx.platform, 'PATCH', '/config', { supportedCurrencies: [usdc] });
  expect(patched.statusCode, patched.body).toBe(200);
  const list = (await call(ctx.platform, 'GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> };
  usdcAccount = list.data.find((a) => a.balance.currency.code === 'USDC')!.id;
});
afterAll(() => ctx.close());

describe('POST /crypto/estimate-withdrawal-fee permissions', () => {
  it.each([[['VIEW']], [['TRANSACT']]] as const)('answers a token holding %j', async (permissions) => {
    const token = await ctx.newToken(ctx.platform, [...permissions]);
    const response = await call(token, 'POST', '/crypto/estimate-withdrawal-fee', {
      internalAccountId: usdcAccount,
      currency: 'USDC',
      cryptoNetwork: 'SOLANA',
      amount: 1_000_000,
      destinationAddress: solanaWallet().address,
    });
    expect(response.statusCode, response.body).toBe(200);
    // 750 micro-USDC of Solana fee and Solana's service fee, 5 US cents.
    expect(response.json()).toMatchObject({ totalFee: 50_750, netAmount: 949_250 });
  });
});
