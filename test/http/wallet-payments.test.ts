import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs } from '../helpers/payments.js';
import { stamp, WalletClient } from '../helpers/wallet.js';
import { walletPayments, type Balances, type WalletQuote } from '../helpers/wallet-payments.js';

/**
 * Money leaving an embedded wallet (quotes-wallet.test.ts has the signature rules): what `balance`
 * and `totalBalance` show at each step of a signed payment, held → posted → settled or refunded,
 * or released by a cancel, with one INTERNAL_ACCOUNT.BALANCE_UPDATED per change and none without
 * one; and stamps that are valid but not this quote's or this wallet's. Signed executions racing
 * each other and their session's revocation: test/pg/wallet-payments.test.ts.
 */
let ctx: TestContext;
let kit: Awaited<ReturnType<typeof walletPayments>>;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  kit = await walletPayments(ctx);
  client = kit.client;
});
afterAll(() => ctx.close());

type Quote = WalletQuote;

/** The wallet's BALANCE_UPDATED events, oldest first, as the balances they carry. */
async function balanceEvents(accountId: string): Promise<Balances[]> {
  const rows = await ctx.handle.db
    .selectFrom('events')
    .select('data')
    .where('resource_id', '=', accountId)
    .where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED')
    .orderBy('id')
    .execute();
  return rows.map(({ data }) => {
    const account = data as { balance: { amount: number }; totalBalance: { amount: number } };
    return { available: account.balance.amount, total: account.totalBalance.amount };
  });
}

/** Runs what is due after `seconds` more on both clocks (the platform's settles the rails). */
async function after(seconds: number): Promise<void> {
  ctx.clock.advance(seconds * 1000);
  expect((await client.call('POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  await drainJobs(ctx);
}

describe('balances of an embedded wallet through its payments', () => {
  it('held, posted at the hand-over, unchanged at settlement; refunded when the rail refuses or returns it; released by a cancel — one event per change', async () => {
    const wallet = await kit.fundedWallet(100_000);
    const { key } = await client.login(wallet.credentialId);
    const seen: Balances[] = [{ available: 100_000, total: 100_000 }];
    /** The balances now, and the one event that must have announced them. */
    const expectStep = async (expected: Balances) => {
      expect(await kit.balances(wallet.accountId)).toEqual(expected);
      seen.push(expected);
      expect(await balanceEvents(wallet.accountId)).toEqual(seen);
    };
    const expectNoChange = async (expected: Balances) => {
      expect(await kit.balances(wallet.accountId)).toEqual(expected);
      expect(await balanceEvents(wallet.accountId)).toEqual(seen);
    };
    expect(await balanceEvents(wallet.accountId)).toEqual(seen);

    // Completes: held (available only), then posted at the hand-over (total too), then settled (no money moves).
    const paid = await kit.quoteFrom(wallet.accountId, 10_000);
    expect((await kit.signedExecute(paid, key)).statusCode).toBe(200);
    await expectStep({ available: 90_000, total: 100_000 });
    await drainJobs(ctx);
    await expectStep({ available: 90_000, total: 90_000 });
    await after(5);
    expect((await client.call('GET', `/transactions/${paid.transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
    await expectNoChange({ available: 90_000, total: 90_000 });

    // Sent amount ending in 903: refused by the rail when handed over; posted, then refunded.
    const refused = await kit.quoteFrom(wallet.accountId, 10_903 + 45);
    expect(refused.feesIncluded).toBe(45);
    expect((await kit.signedExecute(refused, key)).statusCode).toBe(200);
    await expectStep({ available: 90_000 - 10_948, total: 90_000 });
    await drainJobs(ctx);
    // Posted at the hand-over and refunded on the rail's refusal, in one run of the jobs: two changes, two events.
    seen.push({ available: 90_000 - 10_948, total: 90_000 - 10_948 });
    await expectStep({ available: 90_000, total: 90_000 });
    expect((await client.call('GET', `/transactions/${refused.transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'LIMIT_EXCEEDED', refund: { status: 'COMPLETED' } });

    // Sent amount ending in 901: fails at the settlement time, after the money left; refunded then.
    const failed = await kit.quoteFrom(wallet.accountId, 10_901 + 45);
    expect((await kit.signedExecute(failed, key)).statusCode).toBe(200);
    await expectStep({ available: 90_000 - 10_946, total: 90_000 });
    await drainJobs(ctx);
    await expectStep({ available: 90_000 - 10_946, total: 90_000 - 10_946 });
    await after(5);
    await expectStep({ available: 90_000, total: 90_000 });
    expect((await client.call('GET', `/transactions/${failed.transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });

    // Cancelled while held: the hold is released, nothing was posted.
    const cancelled = await kit.quoteFrom(wallet.accountId, 5_000);
    expect((await kit.signedExecute(cancelled, key)).statusCode).toBe(200);
    await expectStep({ available: 85_000, total: 90_000 });
    expect((await client.call('POST', `/transactions/${cancelled.transactionId}/cancel`)).statusCode).toBe(200);
    await expectStep({ available: 90_000, total: 90_000 });
    await drainJobs(ctx);
    await expectNoChange({ available: 90_000, total: 90_000 });

    // A refusal moves nothing and announces nothing.
    const tooMuch = await kit.quoteFrom(wallet.accountId, 90_001);
    expectEnvelope(await kit.signedExecute(tooMuch, key), 400, 'AMOUNT_OUT_OF_RANGE');
    await expectNoChange({ available: 90_000, total: 90_000 });

    // To the last minor unit: the whole balance goes, and nothing below zero.
    const everything = await kit.quoteFrom(wallet.accountId, 90_000);
    expect((await kit.signedExecute(everything, key)).statusCode).toBe(200);
    await expectStep({ available: 0, total: 90_000 });
    await drainJobs(ctx);
    await expectStep({ available: 0, total: 0 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('from an embedded wallet to another internal account (a book transfer)', () => {
  it('held at the source and pending at the destination, then posted to both; each change announced for each account', async () => {
    const wallet = await kit.fundedWallet(10_000);
    const { key } = await client.login(wallet.credentialId);
    const fiat = ((await client.call('GET', `/customers/internal-accounts?customerId=${wallet.customerId}&type=INTERNAL_FIAT`)).json() as { data: Array<{ id: string }> }).data[0]!.id;
    const created = await client.call('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: wallet.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: fiat },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 4_000,
    });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Quote;
    // A book transfer has no rail and no fee.
    expect(q.feesIncluded).toBe(0);
    const fiatBalances = async (): Promise<Balances> => {
      const account = ((await client.call('GET', `/customers/internal-accounts?customerId=${wallet.customerId}&type=INTERNAL_FIAT`)).json() as { data: Array<{ balance: { amount: number }; totalBalance: { amount: number } }> }).data[0]!;
      return { available: account.balance.amount, total: account.totalBalance.amount };
    };
    expect((await kit.signedExecute(q, key)).statusCode).toBe(200);
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 6_000, total: 10_000 });
    expect(await fiatBalances()).toEqual({ available: 0, total: 4_000 });
    await drainJobs(ctx);
    expect((await client.call('GET', `/transactions/${q.transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 6_000, total: 6_000 });
    expect(await fiatBalances()).toEqual({ available: 4_000, total: 4_000 });
    expect(await balanceEvents(wallet.accountId)).toEqual([
      { available: 10_000, total: 10_000 },
      { available: 6_000, total: 10_000 },
      { available: 6_000, total: 6_000 },
    ]);
    expect(await balanceEvents(fiat)).toEqual([
      { available: 0, total: 4_000 },
      { available: 4_000, total: 4_000 },
    ]);
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('a valid stamp that does not authorise this payment', () => {
  it('over another quote of the same wallet, by a session of another wallet, by an expired session, or sent to another platform: refused, nothing moved', async () => {
    const wallet = await kit.fundedWallet(50_000);
    const other = await kit.fundedWallet(50_000);
    const own = await client.login(wallet.credentialId);
    const foreign = await client.login(other.credentialId);
    const q = await kit.quoteFrom(wallet.accountId, 10_000);
    const sibling = await kit.quoteFrom(wallet.accountId, 10_000);
    const theirs = await kit.quoteFrom(other.accountId, 10_000);

    // The payloads name their quote and request: a stamp of one executes no other.
    expectEnvelope(await kit.execute(q, await stamp(own.key, kit.payloadOf(sibling))), 401, 'WALLET_SIGNATURE_INVALID');
    // A session is its wallet's: another wallet's, over this payload or its own, signs nothing here.
    expectEnvelope(await kit.execute(q, await stamp(foreign.key, kit.payloadOf(q))), 401, 'WALLET_SIGNATURE_INVALID');
    expectEnvelope(await kit.execute(q, await stamp(foreign.key, kit.payloadOf(theirs))), 401, 'WALLET_SIGNATURE_INVALID');
    // Another platform does not see the quote at all.
    const elsewhere = new WalletClient(ctx, await ctx.newPlatform());
    expectEnvelope(await elsewhere.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': await stamp(own.key, kit.payloadOf(q)) }), 404, 'QUOTE_NOT_FOUND');
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 50_000, total: 50_000 });
    expect(await kit.balances(other.accountId)).toEqual({ available: 50_000, total: 50_000 });

    // None of those used the challenge: the right stamp still executes it, once.
    expect((await kit.signedExecute(q, own.key)).statusCode).toBe(200);
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 40_000, total: 50_000 });

    // A session past its expiresAt signs nothing, even for a quote created after it ended.
    ctx.clock.advance(Date.parse(own.session.expiresAt) - ctx.clock.now().getTime() + 1000);
    const late = await kit.quoteFrom(wallet.accountId, 10_000);
    expectEnvelope(await kit.signedExecute(late, own.key), 401, 'WALLET_SIGNATURE_INVALID');
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 40_000, total: 50_000 });
    expect((await kit.signedExecute(late, (await client.login(wallet.credentialId)).key)).statusCode).toBe(200);
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 30_000, total: 50_000 });
    await drainJobs(ctx);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
