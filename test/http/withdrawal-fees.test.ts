import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { bolt11Invoice, evmWallet, solanaWallet, sparkWallet, tronWallet } from '../helpers/external-accounts.js';

let ctx: TestContext;
const accounts: Record<string, string> = {};

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const estimate = (body: Record<string, unknown>, p: TestPlatform = ctx.platform) => call(p, 'POST', '/crypto/estimate-withdrawal-fee', body);
const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });

async function cryptoAccounts(p: TestPlatform): Promise<Record<string, string>> {
  const patched = await call(p, 'PATCH', '/config', { supportedCurrencies: ['USD', 'USDC', 'USDT', 'BTC'].map(currency) });
  expect(patched.statusCode, patched.body).toBe(200);
  const list = (await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string; type: string; balance: { currency: { code: string } } }> };
  return Object.fromEntries(list.data.map((a) => [a.balance.currency.code, a.id]));
}

beforeAll(async () => {
  ctx = await createTestContext();
  Object.assign(accounts, await cryptoAccounts(ctx.platform));
});
afterAll(() => ctx.close());

describe('POST /crypto/estimate-withdrawal-fee (sandbox fee model)', () => {
  it('USDC on Solana: 5,000 lamports at the sandbox SOL price, converted and rounded up', async () => {
    const response = await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: solanaWallet().address });
    expect(response.statusCode, response.body).toBe(200);
    // 5,000 lamports × $150 / 1e9 = $0.00075 = 750 micro-USDC.
    expect(response.json()).toEqual({ networkFee: 5000, networkFeeAsset: 'SOL', applicationFee: 0, totalFee: 750, netAmount: 999_250 });
  });

  it('each network by its own row of the table', async () => {
    const cases: Array<[string, string, string, number, Record<string, unknown>]> = [
      // 65,000 gas × 20 gwei = 1.3e15 wei; × $3,000 = $3.90.
      ['USDT', 'ETHEREUM', evmWallet().address, 10_000_000, { networkFee: 1_300_000_000_000_000, networkFeeAsset: 'ETH', totalFee: 3_900_000, netAmount: 6_100_000 }],
      // 65,000 gas × 0.01 gwei = 6.5e11 wei; × $3,000 = $0.00195.
      ['USDC', 'BASE', evmWallet().address, 10_000_000, { networkFee: 650_000_000_000, networkFeeAsset: 'ETH', totalFee: 1950, netAmount: 9_998_050 }],
      // 65,000 gas × 50 gwei = 3.25e15 wei; × $0.50 = $0.001625.
      ['USDC', 'POLYGON', evmWallet().address, 10_000_000, { networkFee: 3_250_000_000_000_000, networkFeeAsset: 'POL', totalFee: 1625, netAmount: 9_998_375 }],
      // 13.4 TRX of energy; × $0.25 = $3.35.
      ['USDT', 'TRON', tronWallet().address, 10_000_000, { networkFee: 13_400_000, networkFeeAsset: 'TRX', totalFee: 3_350_000, netAmount: 6_650_000 }],
      // 141 vB × 10 sat/vB, paid in the asset withdrawn.
      ['BTC', 'BITCOIN', 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq', 100_000, { networkFee: 1410, networkFeeAsset: 'BTC', totalFee: 1410, netAmount: 98_590 }],
      // 1 sat + 1,000 ppm of 100,000 sats.
      ['BTC', 'LIGHTNING', bolt11Invoice(ctx.clock.now(), 'tb'), 100_000, { networkFee: 101, networkFeeAsset: 'BTC', totalFee: 101, netAmount: 99_899 }],
      ['BTC', 'SPARK', sparkWallet('sparkrt').address, 100_000, { networkFee: 0, networkFeeAsset: 'BTC', totalFee: 0, netAmount: 100_000 }],
    ];
    for (const [code, network, address, amount, expected] of cases) {
      const response = await estimate({ internalAccountId: accounts[code], currency: code, cryptoNetwork: network, amount, destinationAddress: address });
      expect(response.statusCode, `${network}: ${response.body}`).toBe(200);
      expect(response.json()).toEqual({ applicationFee: 0, ...expected });
    }
  });

  it('an amount that does not cover the fee is INVALID_AMOUNT', async () => {
    const response = await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 3_900_000, destinationAddress: evmWallet().address });
    const body = expectEnvelope(response, 400, 'INVALID_AMOUNT');
    expect(body.details).toEqual({ amount: 3_900_000, totalFee: 3_900_000 });
  });

  it('at the edges: a fee of 0 leaves the whole amount, one unit over the fee nets one, 2^53 − 1 satoshis is priced exactly, past it is INVALID_INPUT', async () => {
    const btc = (cryptoNetwork: string, amount: number, destinationAddress: string) => estimate({ internalAccountId: accounts.BTC, currency: 'BTC', cryptoNetwork, amount, destinationAddress });
    const onchain = 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq';
    // Spark pays no network fee: one satoshi arrives whole.
    expect((await btc('SPARK', 1, sparkWallet('sparkrt').address)).json()).toEqual({ networkFee: 0, networkFeeAsset: 'BTC', applicationFee: 0, totalFee: 0, netAmount: 1 });
    // On-chain 1,410 sat: the fee itself is refused, one satoshi more nets one.
    expect(expectEnvelope(await btc('BITCOIN', 1410, onchain), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 1410, totalFee: 1410 });
    expect((await btc('BITCOIN', 1411, onchain)).json()).toMatchObject({ totalFee: 1410, netAmount: 1 });
    // Lightning: 1 sat + 1,000 ppm rounded up, so 1 sat costs 2.
    expect(expectEnvelope(await btc('LIGHTNING', 1, bolt11Invoice(ctx.clock.now(), 'tb')), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 1, totalFee: 2 });
    const max = Number.MAX_SAFE_INTEGER;
    // 1 + ⌈(2^53 − 1) × 1,000 / 10^6⌉ = 9,007,199,254,742 sat, in integers throughout.
    expect((await btc('LIGHTNING', max, bolt11Invoice(ctx.clock.now(), 'tb'))).json()).toEqual({
      networkFee: 9_007_199_254_742,
      networkFeeAsset: 'BTC',
      applicationFee: 0,
      totalFee: 9_007_199_254_742,
      netAmount: max - 9_007_199_254_742,
    });
    const past = expectEnvelope(await btc('LIGHTNING', max + 1, bolt11Invoice(ctx.clock.now(), 'tb')), 400, 'INVALID_INPUT');
    expect(past.details).toMatchObject({ errors: [{ field: 'amount' }] });
    // USDC's 6 decimals: Solana's 750 micro-USDC, and 751 nets one.
    const usdc = await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 751, destinationAddress: solanaWallet().address });
    expect(usdc.json()).toMatchObject({ totalFee: 750, netAmount: 1 });
  });

  it('names every mismatch at once: currency vs account, network vs currency, address vs network', async () => {
    const body = expectEnvelope(
      await estimate({ internalAccountId: accounts.USDC, currency: 'USDT', cryptoNetwork: 'BASE', amount: 1000, destinationAddress: solanaWallet().address }),
      400,
      'INVALID_INPUT',
    );
    expect((body.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['currency', 'cryptoNetwork', 'destinationAddress']);
    expectEnvelope(await estimate({ internalAccountId: accounts.USD, currency: 'USD', cryptoNetwork: 'SOLANA', amount: 1000, destinationAddress: solanaWallet().address }), 400, 'INVALID_INPUT');
    const schema = expectEnvelope(await estimate({ currency: 'usdc', cryptoNetwork: 'DOGE', amount: 0 }), 400, 'INVALID_INPUT');
    expect((schema.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort()).toEqual(['amount', 'cryptoNetwork', 'currency', 'destinationAddress', 'internalAccountId']);
  });

  it('an account that is not the platform\'s is 404 REFERENCE_NOT_FOUND', async () => {
    const other = await ctx.newPlatform();
    expectEnvelope(
      await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1000, destinationAddress: solanaWallet().address }, other),
      404,
      'REFERENCE_NOT_FOUND',
    );
    expectEnvelope(
      await estimate({ internalAccountId: 'InternalAccount:019542f5-b3e7-7d02-8000-000000000001', currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1000, destinationAddress: solanaWallet().address }),
      404,
      'REFERENCE_NOT_FOUND',
    );
  });

  it('production platforms: mainnet addresses only, and 503 without a deployment estimator', async () => {
    const production = await ctx.newPlatform('production');
    const own = await cryptoAccounts(production);
    const testnet = expectEnvelope(
      await estimate({ internalAccountId: own.BTC, currency: 'BTC', cryptoNetwork: 'BITCOIN', amount: 100_000, destinationAddress: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx' }, production),
      400,
      'INVALID_INPUT',
    );
    expect(testnet.details).toMatchObject({ errors: [{ field: 'destinationAddress' }] });
    expectEnvelope(
      await estimate({ internalAccountId: own.USDC, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: solanaWallet().address }, production),
      503,
      'SERVICE_UNAVAILABLE',
    );
  });

});

describe("POST /crypto/estimate-withdrawal-fee (a deployment's fee model)", () => {
  let deployment: TestContext;
  let wei = 0n;
  let inCurrency = 29_250_000n;
  beforeAll(async () => {
    deployment = await createTestContext({
      withdrawalFees: {
        carries: () => ['USDC'],
        estimate: async () => ({ networkFee: wei, networkFeeAsset: 'ETH', networkFeeInCurrency: inCurrency }),
      },
    });
  });
  afterAll(() => deployment.close());

  it('a fee in wei past 2^53 − 1 is written exactly; one outside int64 is the estimator\'s fault (503)', async () => {
    const production = await deployment.newPlatform('production');
    const patched = await deployment.app.inject({
      method: 'PATCH',
      url: `${BASE}/config`,
      headers: { authorization: production.auth },
      payload: { supportedCurrencies: ['USD', 'USDC'].map(currency) },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const list = (await deployment.app.inject({ method: 'GET', url: `${BASE}/platform/internal-accounts`, headers: { authorization: production.auth } })).json() as {
      data: Array<{ id: string; balance: { currency: { code: string } } }>;
    };
    const usdc = list.data.find((a) => a.balance.currency.code === 'USDC')!.id;
    const body = { internalAccountId: usdc, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 100_000_000, destinationAddress: evmWallet().address };
    const send = () => deployment.app.inject({ method: 'POST', url: `${BASE}/crypto/estimate-withdrawal-fee`, headers: { authorization: production.auth }, payload: body });
    // 65,000 gas × 150 gwei, plus one wei so that a double would show it rounded.
    wei = 9_750_000_000_000_001n;
    const exact = await send();
    expect(exact.statusCode, exact.body).toBe(200);
    expect(exact.body).toBe('{"networkFee":9750000000000001,"networkFeeAsset":"ETH","applicationFee":0,"totalFee":29250000,"netAmount":70750000}');
    wei = 2n ** 63n;
    expectEnvelope(await send(), 503, 'SERVICE_UNAVAILABLE');
    wei = -1n;
    expectEnvelope(await send(), 503, 'SERVICE_UNAVAILABLE');
    // The fee in the withdrawal currency too: past 2^53 − 1 it was a 500 (INVALID_AMOUNT could not
    // write it), below zero it answered a net amount above the amount.
    wei = 9_750_000_000_000_000n;
    inCurrency = 2n ** 53n;
    expectEnvelope(await send(), 503, 'SERVICE_UNAVAILABLE');
    inCurrency = -1n;
    expectEnvelope(await send(), 503, 'SERVICE_UNAVAILABLE');
    inCurrency = 100_000_000n;
    expect(expectEnvelope(await send(), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 100_000_000, totalFee: 100_000_000 });
  });
});
