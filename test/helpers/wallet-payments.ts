import { expect } from 'vitest';
import type { TestContext } from './context.js';
import { validSamples } from './external-accounts.js';
import { stamp, WalletClient, type ClientKey, type WalletFixture } from './wallet.js';

export type WalletQuote = {
  id: string;
  transactionId: string;
  totalSendingAmount: number;
  feesIncluded: number;
  paymentInstructions: Array<{ accountOrWalletInfo: { payloadToSign: string } }>;
};
export type Balances = { available: number; total: number };

/**
 * Paying out of embedded wallets, for tests: a platform with wallets enabled, a USD payee, funded
 * wallets, quotes from them (to the payee on RTP: fee 45, settles 5 s after the hand-over) and
 * their signed execution, and a wallet's balances as the API shows them.
 */
export async function walletPayments(ctx: TestContext) {
  const client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
  const created = await client.call('POST', '/platform/external-accounts', validSamples(ctx.clock.now()).USD_ACCOUNT);
  expect(created.statusCode, created.body).toBe(201);
  const payee = (created.json() as { id: string }).id;
  const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });

  const payloadOf = (q: WalletQuote) => q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign;
  const execute = (q: WalletQuote, signature: string) => client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': signature });
  return {
    client,
    payee,
    payloadOf,
    execute,
    signedExecute: async (q: WalletQuote, key: ClientKey) => execute(q, await stamp(key, payloadOf(q))),

    async fundedWallet(amount: number): Promise<WalletFixture> {
      const wallet = await client.newWallet({ endUserTermsConsent: consent() });
      const funded = await client.call('POST', `/sandbox/internal-accounts/${wallet.accountId}/fund`, { amount });
      expect(funded.statusCode, funded.body).toBe(200);
      return wallet;
    },

    /** A quote from the wallet to the payee, `total` sent fees included. */
    async quoteFrom(accountId: string, total: number): Promise<WalletQuote> {
      const quoted = await client.call('POST', '/quotes', {
        source: { sourceType: 'ACCOUNT', accountId },
        destination: { destinationType: 'ACCOUNT', accountId: payee, paymentRail: 'RTP' },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: total,
      });
      expect(quoted.statusCode, quoted.body).toBe(201);
      return quoted.json() as WalletQuote;
    },

    async balances(accountId: string): Promise<Balances> {
      const listed = (await client.call('GET', '/customers/internal-accounts?type=EMBEDDED_WALLET&limit=100')).json() as {
        data: Array<{ id: string; balance: { amount: number }; totalBalance: { amount: number } }>;
      };
      const account = listed.data.find((a) => a.id === accountId)!;
      return { available: account.balance.amount, total: account.totalBalance.amount };
    },
  };
}
