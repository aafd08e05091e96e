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
  it('USDC on Solana: 5,000 lamports at the sandbox SOL price, converted and rounded up, and the route\'s service fee', async () => {
    const response = await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: solanaWallet().address });
    expect(response.statusCode, response.body).toBe(200);
    // 5,000 lamports × $150 / 1e9 = $0.00075 = 750 micro-USDC; Solana's service fee 5 US cents = 50,000.
    expect(response.json()).toEqual({ networkFee: 5000, networkFeeAsset: 'SOL', applicationFee: 50_000, totalFee: 50_750, netAmount: 949_250 });
  });

  it('each network by its own row of the table, plus its route\'s service fee (rates/rails.ts)', async () => {
    // Service fees: Ethereum and Tron 100 US cents (1,000,000 micro-dollars), the others 5 (50,000;
    // in BTC at the sandbox's 0.0000091 BTC per dollar, 45.5 satoshis rounded up to 46).
    const cases: Array<[string, string, string, number, Record<string, unknown>]> = [
      // 65,000 gas × 20 gwei = 1.3e15 wei; × $3,000 = $3.90.
      ['USDT', 'ETHEREUM', evmWallet().address, 10_000_000, { networkFee: 1_300_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 1_000_000, totalFee: 4_900_000, netAmount: 5_100_000 }],
      // 65,000 gas × 0.01 gwei = 6.5e11 wei; × $3,000 = $0.00195.
      ['USDC', 'BASE', evmWallet().address, 10_000_000, { networkFee: 650_000_000_000, networkFeeAsset: 'ETH', applicationFee: 50_000, totalFee: 51_950, netAmount: 9_948_050 }],
      // 65,000 gas × 50 gwei = 3.25e15 wei; × $0.50 = $0.001625.
      ['USDC', 'POLYGON', evmWallet().address, 10_000_000, { networkFee: 3_250_000_000_000_000, networkFeeAsset: 'POL', applicationFee: 50_000, totalFee: 51_625, netAmount: 9_948_375 }],
      // 13.4 TRX of energy; × $0.25 = $3.35.
      ['USDT', 'TRON', tronWallet().address, 10_000_000, { networkFee: 13_400_000, networkFeeAsset: 'TRX', applicationFee: 1_000_000, totalFee: 4_350_000, netAmount: 5_650_000 }],
      // 141 vB × 10 sat/vB, paid in the asset withdrawn; no quote pays out on-chain, so no service fee.
      ['BTC', 'BITCOIN', 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq', 100_000, { networkFee: 1410, networkFeeAsset: 'BTC', applicationFee: 0, totalFee: 1410, netAmount: 98_590 }],
      // 1 sat + 1,000 ppm of 100,000 sats.
      ['BTC', 'LIGHTNING', bolt11Invoice(ctx.clock.now(), 'tb'), 100_000, { networkFee: 101, networkFeeAsset: 'BTC', applicationFee: 46, totalFee: 147, netAmount: 99_853 }],
      ['BTC', 'SPARK', sparkWallet('sparkrt').address, 100_000, { networkFee: 0, networkFeeAsset: 'BTC', applicationFee: 46, totalFee: 46, netAmount: 99_954 }],
    ];
    for (const [code, network, address, amount, expected] of cases) {
      const response = await estimate({ internalAccountId: accounts[code], currency: code, cryptoNetwork: network, amount, destinationAddress: address });
      expect(response.statusCode, `${network}: ${response.body}`).toBe(200);
      expect(response.json()).toEqual(expected);
    }
  });

  it('an amount that does not cover the fee is INVALID_AMOUNT', async () => {
    const response = await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 4_900_000, destinationAddress: evmWallet().address });
    const body = expectEnvelope(response, 400, 'INVALID_AMOUNT');
    expect(body.details).toEqual({ amount: 4_900_000, totalFee: 4_900_000 });
  });

  it('at the edges: one unit over the fee nets one, 2^53 − 1 satoshis is priced exactly, past it is INVALID_INPUT', async () => {
    const btc = (cryptoNetwork: string, amount: number, destinationAddress: string) => estimate({ internalAccountId: accounts.BTC, currency: 'BTC', cryptoNetwork, amount, destinationAddress });
    const onchain = 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq';
    // Spark pays no network fee, only the service fee (46 sat): the fee itself is refused, one satoshi more nets one.
    expect(expectEnvelope(await btc('SPARK', 46, sparkWallet('sparkrt').address), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 46, totalFee: 46 });
    expect((await btc('SPARK', 47, sparkWallet('sparkrt').address)).json()).toEqual({ networkFee: 0, networkFeeAsset: 'BTC', applicationFee: 46, totalFee: 46, netAmount: 1 });
    // On-chain 1,410 sat: the fee itself is refused, one satoshi more nets one.
    expect(expectEnvelope(await btc('BITCOIN', 1410, onchain), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 1410, totalFee: 1410 });
    expect((await btc('BITCOIN', 1411, onchain)).json()).toMatchObject({ totalFee: 1410, netAmount: 1 });
    // Lightning: 1 sat + 1,000 ppm rounded up, so 1 sat costs 2, and the service fee 46.
    expect(expectEnvelope(await btc('LIGHTNING', 1, bolt11Invoice(ctx.clock.now(), 'tb')), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 1, totalFee: 48 });
    const max = Number.MAX_SAFE_INTEGER;
    // 1 + ⌈(2^53 − 1) × 1,000 / 10^6⌉ = 9,007,199,254,742 sat, in integers throughout.
    expect((await btc('LIGHTNING', max, bolt11Invoice(ctx.clock.now(), 'tb'))).json()).toEqual({
      networkFee: 9_007_199_254_742,
      networkFeeAsset: 'BTC',
      applicationFee: 46,
      totalFee: 9_007_199_254_788,
      netAmount: max - 9_007_199_254_788,
    });
    const past = expectEnvelope(await btc('LIGHTNING', max + 1, bolt11Invoice(ctx.clock.now(), 'tb')), 400, 'INVALID_INPUT');
    expect(past.details).toMatchObject({ errors: [{ field: 'amount' }] });
    // USDC's 6 decimals: Solana's 750 micro-USDC and 50,000 of service fee, and 50,751 nets one.
    const usdc = await estimate({ internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 50_751, destinationAddress: solanaWallet().address });
    expect(usdc.json()).toMatchObject({ totalFee: 50_750, netAmount: 1 });
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

// A deployment's fee model (production, with exchange rates): test/http/quotes-crypto-network-fee.test.ts.
