import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs } from '../helpers/payments.js';
import { stamp, type WalletClient } from '../helpers/wallet.js';
import { walletPayments, type WalletQuote } from '../helpers/wallet-payments.js';

/**
 * Money leaving embedded wallets under real concurrency (test/http/wallet-payments.test.ts has
 * the sequential steps): signed executions of several quotes racing for one balance, and an
 * execution racing the revocation of the session that signed it.
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

async function availableInEvents(accountId: string): Promise<number[]> {
  const rows = await ctx.handle.db.selectFrom('events').select('data').where('resource_id', '=', accountId).where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').execute();
  return rows.map(({ data }) => (data as { balance: { amount: number } }).balance.amount);
}

describe.runIf(onPostgres)('signed payments from embedded wallets on PostgreSQL', () => {
  it('executions of several quotes that together exceed the balance: exactly those that fit are paid, never below zero', async () => {
    const wallet = await kit.fundedWallet(10_000);
    const { key } = await client.login(wallet.credentialId);
    const quotes: Quote[] = [];
    for (let i = 0; i < 10; i++) quotes.push(await kit.quoteFrom(wallet.accountId, 3_000));
    const stamps = await Promise.all(quotes.map((q) => stamp(key, kit.payloadOf(q))));
    const answers = await Promise.all(quotes.map((q, i) => kit.execute(q, stamps[i]!)));
    const paid = answers.filter((a) => a.statusCode === 200);
    expect(paid, answers.map((a) => a.body).join('\n')).toHaveLength(3);
    for (const refused of answers.filter((a) => a.statusCode !== 200)) {
      expect(expectEnvelope(refused, 400, 'AMOUNT_OUT_OF_RANGE').details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE' });
    }
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 1_000, total: 10_000 });
    // One hold per payment, each announced.
    expect((await availableInEvents(wallet.accountId)).sort((a, b) => b - a)).toEqual([10_000, 7_000, 4_000, 1_000]);
    await drainJobs(ctx);
    expect(await kit.balances(wallet.accountId)).toEqual({ available: 1_000, total: 1_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('an execution racing the revocation of the session that signed it: paid before the revocation, or refused and nothing moved', async () => {
    for (let round = 0; round < 8; round++) {
      const wallet = await kit.fundedWallet(10_000);
      const { key, session } = await client.login(wallet.credentialId);
      const q = await kit.quoteFrom(wallet.accountId, 3_000);
      const signature = await stamp(key, kit.payloadOf(q));
      const revoke = `/auth/sessions/${session.id}`;
      const challenge = await client.firstLeg('DELETE', revoke);
      const [executed, revoked] = await Promise.all([kit.execute(q, signature), client.signedRetry('DELETE', revoke, undefined, challenge, key)]);
      expect(revoked.statusCode, revoked.body).toBe(204);
      if (executed.statusCode === 200) {
        expect(await kit.balances(wallet.accountId)).toEqual({ available: 7_000, total: 10_000 });
        // Settled before the revocation: the identical re-send still answers it.
        const again = await kit.execute(q, signature);
        expect(again.statusCode).toBe(200);
        expect(again.json()).toEqual(executed.json());
      } else {
        expectEnvelope(executed, 401, 'WALLET_SIGNATURE_INVALID');
        expect(await kit.balances(wallet.accountId)).toEqual({ available: 10_000, total: 10_000 });
        expectEnvelope(await kit.execute(q, signature), 401, 'WALLET_SIGNATURE_INVALID');
      }
      // Either way the session signs nothing more.
      expectEnvelope(await kit.signedExecute(await kit.quoteFrom(wallet.accountId, 1_000), key), 401, 'WALLET_SIGNATURE_INVALID');
    }
    await drainJobs(ctx);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
