import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, expectPaymentEventsMatchCatalogue, type Json } from '../helpers/payments.js';
import { stubRailProvider } from '../helpers/rail-stub.js';
import { CapturingMessages, stamp, WalletClient } from '../helpers/wallet.js';

/**
 * A quote from an embedded wallet of a PRODUCTION platform, executed by the wallet's signed retry
 * (the signed-request machinery runs QUOTE_EXECUTE_OPERATION): the execution is production's from
 * end to end — the platform's own environment, not a default — so the payout goes to the
 * production rail provider and the payment follows what it answers (docs/payments.md,
 * "Production: the rail-provider contract").
 */

/** The production rates (EUR not at the built-in table's 0.866, so the quote shows which priced it). */
const PRODUCTION_EUR_PER_USD = '0.92';

/** The stub rail provider paying out (accepted, then pending) and the production rates. */
const stubProvider = () =>
  stubRailProvider(
    {
      '/rails/payouts': { status: 'ACCEPTED' },
      '/rails/payouts/status': { status: 'PENDING' },
      '/rails/deposits/list': { deposits: [], nextCursor: null },
    },
    (currency) => (currency === 'EUR' ? PRODUCTION_EUR_PER_USD : '1'),
  );

const DAY_MS = 86_400_000;
const messages = new CapturingMessages();
let stub: Awaited<ReturnType<typeof stubProvider>>;
let prod: TestContext;
let p: TestPlatform;
let client: WalletClient;

beforeAll(async () => {
  stub = await stubProvider();
  prod = await createTestContext({ messages, env: { CORRIDOR_RAILS_URL: `${stub.base}/rails`, CORRIDOR_RAILS_TOKEN: 'rail-secret', CORRIDOR_RATES_URL: `${stub.base}/rates` } });
  p = await prod.newPlatform('production');
  client = new WalletClient(prod, p);
  await client.enableWallets();
}, 120_000);
afterAll(async () => {
  await prod.close();
  await stub.close();
});

type Quote = Json & { id: string; transactionId: string; totalSendingAmount: number; totalReceivingAmount: number; feesIncluded: number; paymentInstructions: Array<{ accountOrWalletInfo: Json }> };

const transaction = async (id: string) => (await call(prod, p, 'GET', `/transactions/${id}`)).json() as Json;
const quoteStatus = async (id: string) => ((await call(prod, p, 'GET', `/quotes/${id}`)).json() as Json).status as string;
const payoutCalls = (path: string, transactionId: string) => stub.seen.filter((s) => s.path === `/rails/${path}` && s.body.transactionId === transactionId);

async function walletBalance(accountId: string): Promise<{ available: number; total: number }> {
  const listed = (await call(prod, p, 'GET', '/customers/internal-accounts?type=EMBEDDED_WALLET&limit=100')).json() as { data: Json[] };
  const account = listed.data.find((a) => a.id === accountId)!;
  return { available: account.balance.amount as number, total: account.totalBalance.amount as number };
}

async function newQuote(body: Json): Promise<Quote> {
  const created = await call(prod, p, 'POST', '/quotes', { lockedCurrencySide: 'SENDING', ...body });
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Quote;
}

/**
 * Funds the wallet as production does: an embedded wallet has no funding instructions of its own,
 * so a deposit the provider's feed reports credits the platform's USD account, and a book transfer
 * (no rail, no provider) moves it on to the wallet.
 */
async function fundWallet(accountId: string, amount: number) {
  const own = ((await call(prod, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  const reference = (own.fundingPaymentInstructions as Array<{ accountOrWalletInfo: Json }>)[0]!.accountOrWalletInfo.reference as string;
  stub.answers['/rails/deposits/list'] = { deposits: [{ id: `dep-${accountId}`, reference, currency: 'USD', amount: String(amount), rail: 'WIRE' }], nextCursor: 'after-wallet-deposit' };
  await drainJobs(prod);
  stub.answers['/rails/deposits/list'] = { deposits: [], nextCursor: null };
  const book = await newQuote({ source: { sourceType: 'ACCOUNT', accountId: own.id }, destination: { destinationType: 'ACCOUNT', accountId }, lockedCurrencyAmount: amount, immediatelyExecute: true });
  await drainJobs(prod);
  expect(await transaction(book.transactionId)).toMatchObject({ status: 'COMPLETED' });
  expect(payoutCalls('payouts', book.transactionId)).toEqual([]);
  expect(await walletBalance(accountId)).toEqual({ available: amount, total: amount });
}

describe('a wallet-signed quote execution on a production platform', () => {
  it('is production end to end: priced by the production rates, paid out through the production rail provider, settled by its answer', async () => {
    const consent = { acceptedAt: prod.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
    const wallet = await client.newWallet({ endUserTermsConsent: consent });
    await fundWallet(wallet.accountId, 50_000);
    // A production OTP is delivered, never the sandbox code.
    const { key } = await client.login(wallet.credentialId, () => messages.lastCode());
    const payee = await call(prod, p, 'POST', '/platform/external-accounts', validSamples(prod.clock.now()).EUR_ACCOUNT);
    expect(payee.statusCode, payee.body).toBe(201);
    const payeeId = (payee.json() as Json).id as string;

    const q = await newQuote({ source: { sourceType: 'ACCOUNT', accountId: wallet.accountId }, destination: { destinationType: 'ACCOUNT', accountId: payeeId }, lockedCurrencyAmount: 10_000 });
    expect(q).toMatchObject({ status: 'PENDING', sendingCurrency: { code: 'USD' }, receivingCurrency: { code: 'EUR' }, totalSendingAmount: 10_000 });
    // Production rates priced it (0.92 less the spread; the built-in table's 0.866 would be below 0.866).
    expect(Number(q.exchangeRate)).toBeGreaterThan(0.866);
    const [instruction] = q.paymentInstructions;
    expect(instruction!.accountOrWalletInfo.accountType).toBe('EMBEDDED_WALLET');

    // The execution reads the quote's stored rate window as the platform's environment's: a production
    // one. Only production rates were ever stored here, so executing it as a sandbox quote could not succeed.
    const executed = await call(prod, p, 'POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': await stamp(key, instruction!.accountOrWalletInfo.payloadToSign as string) });
    expect(executed.statusCode, executed.body).toBe(200);
    expect((executed.json() as Quote).status).toBe('PROCESSING');
    // Held at once: out of the available balance, still in the total until the payout leaves.
    expect(await walletBalance(wallet.accountId)).toEqual({ available: 40_000, total: 50_000 });

    // Handed to the production provider, with the quote's amounts; the simulated rails never see it.
    await drainJobs(prod);
    const submitted = payoutCalls('payouts', q.transactionId);
    expect(submitted).toHaveLength(1);
    expect(submitted[0]).toMatchObject({
      auth: 'Bearer rail-secret',
      body: { transactionId: q.transactionId, platformId: p.uuid, currency: 'EUR', amount: String(q.totalReceivingAmount), sendingCurrency: 'USD', sentAmount: String(q.totalSendingAmount - q.feesIncluded), reference: expect.any(String) },
    });
    expect(await transaction(q.transactionId)).toMatchObject({ type: 'OUTGOING', status: 'PROCESSING', quoteId: q.id, source: { accountId: wallet.accountId } });
    expect(await walletBalance(wallet.accountId)).toEqual({ available: 40_000, total: 40_000 });

    // Past the rail's settlement time the provider is asked; while it says PENDING, the payment waits.
    prod.clock.advance(3 * DAY_MS);
    await drainJobs(prod);
    expect(payoutCalls('payouts/status', q.transactionId).length).toBeGreaterThanOrEqual(1);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'PROCESSING' });

    // Its COMPLETED settles it.
    stub.answers['/rails/payouts/status'] = { status: 'COMPLETED' };
    prod.clock.advance(60_000);
    await drainJobs(prod);
    expect(await transaction(q.transactionId)).toMatchObject({ status: 'COMPLETED' });
    expect(await quoteStatus(q.id)).toBe('COMPLETED');
    expect(await eventTypes(prod, q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    expect(payoutCalls('payouts', q.transactionId)).toHaveLength(1);
    expect(await walletBalance(wallet.accountId)).toEqual({ available: 40_000, total: 40_000 });
    await expectPaymentEventsMatchCatalogue(prod);
    await expectLedgerConsistent(prod.handle.db);
  });
});
