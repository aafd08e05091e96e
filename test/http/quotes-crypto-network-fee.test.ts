import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { evmWallet, solanaWallet, sparkWallet, tronWallet } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs, type Json } from '../helpers/payments.js';

/**
 * A quote that pays out onto a crypto network (to an external wallet) charges the network's fee
 * from the withdrawal fee model besides the route's service fee, so `POST
 * /crypto/estimate-withdrawal-fee` tells the customer what the withdrawal deducts: a same-currency
 * quote locking the estimate's amount on the SENDING side has `feesIncluded` = `totalFee` and
 * delivers `netAmount` (modules/withdrawal-fees/README.md, modules/quotes/README.md "Fees").
 */

const currencyConfig = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });

const call = (ctx: TestContext, p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

/** The platform's internal account per currency, after enabling USD, USDC, USDT and BTC. */
async function platformAccounts(ctx: TestContext, p: TestPlatform): Promise<Record<string, string>> {
  const patched = await call(ctx, p, 'PATCH', '/config', { supportedCurrencies: ['USD', 'USDC', 'USDT', 'BTC'].map(currencyConfig) });
  expect(patched.statusCode, patched.body).toBe(200);
  const list = (await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> };
  return Object.fromEntries(list.data.map((a) => [a.balance.currency.code, a.id]));
}

async function wallet(ctx: TestContext, p: TestPlatform, currency: string, accountType: string, address: string): Promise<string> {
  const created = await call(ctx, p, 'POST', '/platform/external-accounts', { currency, accountInfo: { accountType, address } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as { id: string }).id;
}

const quoteBody = (source: string, destination: string, lockedCurrencySide: 'SENDING' | 'RECEIVING', lockedCurrencyAmount: number) => ({
  source: { sourceType: 'ACCOUNT', accountId: source },
  destination: { destinationType: 'ACCOUNT', accountId: destination },
  lockedCurrencySide,
  lockedCurrencyAmount,
});

async function quote(ctx: TestContext, p: TestPlatform, body: Json): Promise<Json> {
  const created = await call(ctx, p, 'POST', '/quotes', body);
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Json;
}

async function estimate(ctx: TestContext, p: TestPlatform, body: Json): Promise<Json> {
  const answered = await call(ctx, p, 'POST', '/crypto/estimate-withdrawal-fee', body);
  expect(answered.statusCode, answered.body).toBe(200);
  return answered.json() as Json;
}

/** What the ledger's SERVICE_FEES account of `currency` holds, settled and pending. */
async function serviceFees(ctx: TestContext, p: TestPlatform, currency: string) {
  const b = await accountBalance(ctx.handle.db, p.uuid, { kind: 'SERVICE_FEES', currency });
  return { posted: b.creditsPosted - b.debitsPosted, pending: b.creditsPending };
}

describe('sandbox: a payout onto a crypto network charges the estimate’s fees', () => {
  let ctx: TestContext;
  let p: TestPlatform;
  let accounts: Record<string, string>;
  let ethereum: { id: string; address: string };
  beforeAll(async () => {
    ctx = await createTestContext();
    p = ctx.platform;
    accounts = await platformAccounts(ctx, p);
    for (const [code, amount] of [['USD', 10_000_000], ['USDC', 1_000_000_000]] as const) {
      const funded = await call(ctx, p, 'POST', `/sandbox/internal-accounts/${accounts[code]}/fund`, { amount });
      expect(funded.statusCode, funded.body).toBe(200);
    }
    const address = evmWallet().address;
    ethereum = { id: await wallet(ctx, p, 'USDC', 'ETHEREUM_WALLET', address), address };
  });
  afterAll(() => ctx.close());

  it('USDC → USDC on Ethereum: feesIncluded is the estimate’s totalFee, both sides locked; executed, the fees reach SERVICE_FEES and the ledger balances', async () => {
    const withdrawal = { internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 100_000_000, destinationAddress: ethereum.address };
    // 65,000 gas × 20 gwei at $3,000 = 3,900,000 micro-USDC; Ethereum's service fee 100 US cents = 1,000,000.
    expect(await estimate(ctx, p, withdrawal)).toEqual({ networkFee: 1_300_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 1_000_000, totalFee: 4_900_000, netAmount: 95_100_000 });

    const sending = await quote(ctx, p, quoteBody(accounts.USDC!, ethereum.id, 'SENDING', 100_000_000));
    expect(sending).toMatchObject({ totalSendingAmount: 100_000_000, feesIncluded: 4_900_000, platformFeesIncluded: 0, totalReceivingAmount: 95_100_000, exchangeRate: 1 });
    // The network fee is a fixed part of Corridor's service fee: fixed + variable + the platform's = feesIncluded.
    expect(sending.rateDetails).toMatchObject({ gridApiFixedFee: 4_900_000, gridApiVariableFeeAmount: 0 });

    // Locking what arrives: the same fees on top.
    const receiving = await quote(ctx, p, quoteBody(accounts.USDC!, ethereum.id, 'RECEIVING', 95_100_000));
    expect(receiving).toMatchObject({ totalSendingAmount: 100_000_000, feesIncluded: 4_900_000, totalReceivingAmount: 95_100_000 });

    const before = await serviceFees(ctx, p, 'USDC');
    const executed = await call(ctx, p, 'POST', `/quotes/${sending.id}/execute`);
    expect(executed.statusCode, executed.body).toBe(200);
    // Fixed at creation: the execution hands over the quote's numbers.
    expect(executed.json()).toMatchObject({ feesIncluded: 4_900_000, totalReceivingAmount: 95_100_000 });
    expect(await serviceFees(ctx, p, 'USDC')).toEqual({ posted: before.posted, pending: before.pending + 4_900_000n });
    await drainJobs(ctx);
    ctx.clock.advance(600_000);
    await drainJobs(ctx);
    const transaction = (await call(ctx, p, 'GET', `/transactions/${sending.transactionId}`)).json() as Json;
    // sentAmount: what was converted and delivered, the fees excluded.
    expect(transaction).toMatchObject({ status: 'COMPLETED', fees: 4_900_000, sentAmount: { amount: 95_100_000 }, receivedAmount: { amount: 95_100_000 } });
    expect(await serviceFees(ctx, p, 'USDC')).toEqual({ posted: before.posted + 4_900_000n, pending: before.pending });
    const usdc = (await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string; balance: { amount: number } }> };
    expect(usdc.data.find((a) => a.id === accounts.USDC)!.balance.amount).toBe(1_000_000_000 - 100_000_000);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('every network a wallet is paid on: the quote’s fees and net are the estimate’s', async () => {
    const cases: Array<[string, string, string, string, number]> = [
      ['USDC', 'SOLANA', 'SOLANA_WALLET', solanaWallet().address, 1_000_000],
      ['USDC', 'BASE', 'BASE_WALLET', evmWallet().address, 10_000_000],
      ['USDC', 'POLYGON', 'POLYGON_WALLET', evmWallet().address, 10_000_000],
      ['USDT', 'PLASMA', 'PLASMA_WALLET', evmWallet().address, 10_000_000],
      ['USDT', 'TRON', 'TRON_WALLET', tronWallet().address, 10_000_000],
      ['BTC', 'SPARK', 'SPARK_WALLET', sparkWallet('sparkrt').address, 100_000],
    ];
    for (const [currency, network, accountType, address, amount] of cases) {
      const fee = await estimate(ctx, p, { internalAccountId: accounts[currency], currency, cryptoNetwork: network, amount, destinationAddress: address });
      const q = await quote(ctx, p, quoteBody(accounts[currency]!, await wallet(ctx, p, currency, accountType, address), 'SENDING', amount));
      expect({ feesIncluded: q.feesIncluded, totalReceivingAmount: q.totalReceivingAmount }, network).toEqual({ feesIncluded: fee.totalFee, totalReceivingAmount: fee.netAmount });
    }
  });

  it('USD → a USDC wallet: the network fee in cents at the quote’s own rate, rounded up; executed, the ledger balances', async () => {
    // USD → USDC: 1 less the 10 bps spread = 0.999. 3,900,000 micro-USDC cost ⌈3,900,000 / 9,990⌉ = 391 cents; Ethereum's fee 100.
    const sending = await quote(ctx, p, quoteBody(accounts.USD!, ethereum.id, 'SENDING', 100_000));
    expect(sending).toMatchObject({ exchangeRate: 0.999, totalSendingAmount: 100_000, platformFeesIncluded: 0, feesIncluded: 491 });
    expect(sending.rateDetails).toMatchObject({ gridApiFixedFee: 491, gridApiVariableFeeAmount: 0 });
    // What is left, 99,509 cents, converted and rounded down.
    expect(sending.totalReceivingAmount).toBe(Math.floor((99_509 * 999 * 10_000) / 1000));

    // 50 USDC arriving: the fewest cents that buy it, ⌈50,000,000 / 9,990⌉ = 5,006, plus the same 491.
    const receiving = await quote(ctx, p, quoteBody(accounts.USD!, ethereum.id, 'RECEIVING', 50_000_000));
    expect(receiving).toMatchObject({ totalReceivingAmount: 50_000_000, feesIncluded: 491, totalSendingAmount: 5_006 + 491 });

    const before = await serviceFees(ctx, p, 'USD');
    expect((await call(ctx, p, 'POST', `/quotes/${receiving.id}/execute`)).statusCode).toBe(200);
    await drainJobs(ctx);
    ctx.clock.advance(600_000);
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${receiving.transactionId}`)).json() as Json).status).toBe('COMPLETED');
    expect((await serviceFees(ctx, p, 'USD')).posted).toBe(before.posted + 491n);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('an amount the fees take whole is INVALID_AMOUNT for the quote as for the estimate', async () => {
    const body = { internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 4_900_000, destinationAddress: ethereum.address };
    const refused = await call(ctx, p, 'POST', '/crypto/estimate-withdrawal-fee', body);
    expect(expectEnvelope(refused, 400, 'INVALID_AMOUNT').details).toEqual({ amount: 4_900_000, totalFee: 4_900_000 });
    expectEnvelope(await call(ctx, p, 'POST', '/quotes', quoteBody(accounts.USDC!, ethereum.id, 'SENDING', 4_900_000)), 400, 'INVALID_AMOUNT');
    expect((await quote(ctx, p, quoteBody(accounts.USDC!, ethereum.id, 'SENDING', 4_900_001))).totalReceivingAmount).toBe(1);
  });
});

/** The rate provider production platforms price with: every currency at one US dollar but BTC. */
async function rateProvider() {
  const server: Server = createServer(async (request, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const { currencies } = JSON.parse(text) as { currencies: string[] };
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ asOf: new Date().toISOString(), rates: Object.fromEntries(currencies.map((c) => [c, c === 'BTC' ? '0.00001' : '1'])) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rates`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('production: the deployment’s fee model prices the payout, and without one it is 503', () => {
  let rates: Awaited<ReturnType<typeof rateProvider>>;
  let modelled: TestContext;
  let unmodelled: TestContext;
  // What the deployment's estimator answers; a test may break it.
  let wei = 9_750_000_000_000_000n;
  let inCurrency = 29_250_000n;
  /** The amounts the deployment's estimator was asked to price, in the wallet's currency. */
  const askedAmounts: bigint[] = [];
  beforeAll(async () => {
    rates = await rateProvider();
    modelled = await createTestContext({
      env: { CORRIDOR_RATES_URL: rates.url },
      // A gas oracle's answer: 65,000 gas × 150 gwei at $3,000 = $29.25.
      withdrawalFees: {
        carries: () => ['USDC'],
        estimate: async (_network, _currency, amount) => {
          askedAmounts.push(amount);
          return { networkFee: wei, networkFeeAsset: 'ETH', networkFeeInCurrency: inCurrency };
        },
      },
    });
    unmodelled = await createTestContext({ env: { CORRIDOR_RATES_URL: rates.url } });
  }, 120_000);
  afterAll(async () => {
    await modelled.close();
    await unmodelled.close();
    await rates.close();
  });

  it('with a model: the quote charges its network fee, and agrees with the estimate', async () => {
    const p = await modelled.newPlatform('production');
    const accounts = await platformAccounts(modelled, p);
    const address = evmWallet().address;
    const destination = await wallet(modelled, p, 'USDC', 'ETHEREUM_WALLET', address);
    const fee = await estimate(modelled, p, { internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 100_000_000, destinationAddress: address });
    expect(fee).toEqual({ networkFee: 9_750_000_000_000_000, networkFeeAsset: 'ETH', applicationFee: 1_000_000, totalFee: 30_250_000, netAmount: 69_750_000 });
    const q = await quote(modelled, p, quoteBody(accounts.USDC!, destination, 'SENDING', 100_000_000));
    expect(q).toMatchObject({ feesIncluded: 30_250_000, totalReceivingAmount: 69_750_000 });
  });

  it('asks the model the fee of what the wallet is to receive: a SENDING lock in cents converted to USDC at the quote’s rate, rounded down; a RECEIVING lock as it is', async () => {
    const p = await modelled.newPlatform('production');
    const accounts = await platformAccounts(modelled, p);
    const destination = await wallet(modelled, p, 'USDC', 'ETHEREUM_WALLET', evmWallet().address);
    askedAmounts.length = 0;
    const sending = await quote(modelled, p, quoteBody(accounts.USD!, destination, 'SENDING', 100_001));
    const received = (amount: number) => BigInt(Math.floor(amount * (sending.exchangeRate as number) * 10_000));
    expect(sending.exchangeRate).not.toBe(1);
    await quote(modelled, p, quoteBody(accounts.USD!, destination, 'RECEIVING', 70_000_000));
    expect(askedAmounts).toEqual([received(100_001), 70_000_000n]);
  });

  it('a fee in wei past 2^53 − 1 is written exactly; one outside int64, or in the currency outside 0…2^53 − 1, is the estimator\'s fault (503) for the estimate and the quote', async () => {
    const p = await modelled.newPlatform('production');
    const accounts = await platformAccounts(modelled, p);
    const address = evmWallet().address;
    const destination = await wallet(modelled, p, 'USDC', 'ETHEREUM_WALLET', address);
    const send = () => call(modelled, p, 'POST', '/crypto/estimate-withdrawal-fee', { internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 100_000_000, destinationAddress: address });
    const quoted = () => call(modelled, p, 'POST', '/quotes', quoteBody(accounts.USDC!, destination, 'SENDING', 100_000_000));
    try {
      // Plus one wei, so that a double would show it rounded.
      wei = 9_750_000_000_000_001n;
      const exact = await send();
      expect(exact.statusCode, exact.body).toBe(200);
      expect(exact.body).toBe('{"networkFee":9750000000000001,"networkFeeAsset":"ETH","applicationFee":1000000,"totalFee":30250000,"netAmount":69750000}');
      for (const [badWei, badInCurrency] of [[2n ** 63n, 29_250_000n], [-1n, 29_250_000n], [9_750_000_000_000_000n, 2n ** 53n], [9_750_000_000_000_000n, -1n]] as const) {
        wei = badWei;
        inCurrency = badInCurrency;
        expectEnvelope(await send(), 503, 'SERVICE_UNAVAILABLE');
        expectEnvelope(await quoted(), 503, 'SERVICE_UNAVAILABLE');
      }
      // A fee that, with Ethereum's service fee, takes the amount whole.
      wei = 9_750_000_000_000_000n;
      inCurrency = 99_000_000n;
      expect(expectEnvelope(await send(), 400, 'INVALID_AMOUNT').details).toEqual({ amount: 100_000_000, totalFee: 100_000_000 });
      expectEnvelope(await quoted(), 400, 'INVALID_AMOUNT');
    } finally {
      wei = 9_750_000_000_000_000n;
      inCurrency = 29_250_000n;
    }
  });

  it('without one: a quote paying out onto a network is 503 as the estimate is; other payouts are priced', async () => {
    const p = await unmodelled.newPlatform('production');
    const accounts = await platformAccounts(unmodelled, p);
    const address = evmWallet().address;
    const destination = await wallet(unmodelled, p, 'USDC', 'ETHEREUM_WALLET', address);
    const withdrawal = { internalAccountId: accounts.USDC, currency: 'USDC', cryptoNetwork: 'ETHEREUM', amount: 100_000_000, destinationAddress: address };
    expectEnvelope(await call(unmodelled, p, 'POST', '/crypto/estimate-withdrawal-fee', withdrawal), 503, 'SERVICE_UNAVAILABLE');
    for (const side of ['SENDING', 'RECEIVING'] as const) {
      expectEnvelope(await call(unmodelled, p, 'POST', '/quotes', quoteBody(accounts.USDC!, destination, side, 100_000_000)), 503, 'SERVICE_UNAVAILABLE');
    }
    // A book transfer between its own accounts pays out on no network: no fee model needed.
    expect((await call(unmodelled, p, 'POST', '/quotes', quoteBody(accounts.USDC!, accounts.USD!, 'SENDING', 100_000))).statusCode).toBe(201);
  });
});
