import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { newClientKey, stamp, WalletClient } from '../helpers/wallet.js';

/**
 * Paying from an embedded wallet: the quote's payment instructions carry EMBEDDED_WALLET
 * {payloadToSign}; execution needs the stamp of an active session of that wallet over it,
 * checked by the wallet-auth signed-request machinery (every WALLET_SIGNATURE_* code applies).
 */
let ctx: TestContext;
let client: WalletClient;
let payee: string;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
  const created = await client.call('POST', '/platform/external-accounts', validSamples(ctx.clock.now()).EUR_ACCOUNT);
  expect(created.statusCode, created.body).toBe(201);
  payee = (created.json() as { id: string }).id;
});
afterAll(() => ctx.close());

type Quote = { id: string; status: string; totalSendingAmount: number; paymentInstructions: Array<{ accountOrWalletInfo: { accountType: string; payloadToSign: string } }> };

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });

async function fundedWallet() {
  const wallet = await client.newWallet({ endUserTermsConsent: consent() });
  const funded = await client.call('POST', `/sandbox/internal-accounts/${wallet.accountId}/fund`, { amount: 100_000 });
  expect(funded.statusCode, funded.body).toBe(200);
  return wallet;
}

async function walletQuote(accountId: string): Promise<Quote> {
  const created = await client.call('POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 });
  expect(created.statusCode, created.body).toBe(201);
  return created.json() as Quote;
}

const balance = async (accountId: string) =>
  ((await client.call('GET', '/customers/internal-accounts?type=EMBEDDED_WALLET&limit=100')).json() as { data: Array<{ id: string; balance: { amount: number } }> }).data.find((a) => a.id === accountId)!.balance.amount;

describe('executing a quote from an embedded wallet', () => {
  it('carries EMBEDDED_WALLET {payloadToSign}, and executes once with a session’s stamp over it; the identical re-send answers the same', async () => {
    const wallet = await fundedWallet();
    const { key } = await client.login(wallet.credentialId);
    const q = await walletQuote(wallet.accountId);
    const [instruction] = q.paymentInstructions;
    expect(instruction!.accountOrWalletInfo.accountType).toBe('EMBEDDED_WALLET');
    const payload = JSON.parse(instruction!.accountOrWalletInfo.payloadToSign) as { type: string; parameters: Record<string, string> };
    expect(payload).toMatchObject({ type: 'ACTIVITY_TYPE_EXECUTE_QUOTE', parameters: { quoteId: q.id, totalSendingAmount: '10000', destination: payee } });

    const signature = await stamp(key, instruction!.accountOrWalletInfo.payloadToSign);
    const executed = await client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': signature });
    expect(executed.statusCode, executed.body).toBe(200);
    expect((executed.json() as Quote).status).toBe('PROCESSING');
    expect(await balance(wallet.accountId)).toBe(90_000);
    const again = await client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'grid-wallet-signature': signature });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(executed.json());
    expect(await balance(wallet.accountId)).toBe(90_000);
    // Another stamp cannot run it again.
    expectEnvelope(await client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': await stamp(key, instruction!.accountOrWalletInfo.payloadToSign + ' ') }), 401, 'UNAUTHORIZED');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses immediatelyExecute, a missing, malformed, foreign or wrong-body signature, and a revoked session', async () => {
    const wallet = await fundedWallet();
    const { key, session } = await client.login(wallet.credentialId);
    expectEnvelope(
      await client.call('POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: wallet.accountId }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000, immediatelyExecute: true }),
      400,
      'INVALID_INPUT',
    );
    const q = await walletQuote(wallet.accountId);
    const payload = q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign;
    const path = `/quotes/${q.id}/execute`;
    expectEnvelope(await client.call('POST', path), 401, 'WALLET_SIGNATURE_MISSING');
    expectEnvelope(await client.call('POST', path, undefined, { 'service-wallet-signature': 'not-a-stamp' }), 401, 'WALLET_SIGNATURE_MALFORMED');
    expectEnvelope(await client.call('POST', path, undefined, { 'service-wallet-signature': await stamp(newClientKey(), payload) }), 401, 'WALLET_SIGNATURE_INVALID');
    expectEnvelope(await client.call('POST', path, { scaFactor: 'SMS_OTP' }, { 'service-wallet-signature': await stamp(key, payload) }), 401, 'WALLET_SIGNATURE_BODY_MISMATCH');
    // A revoked session signs nothing.
    const revoke = `/auth/sessions/${session.id}`;
    const challenge = await client.firstLeg('DELETE', revoke);
    expect((await client.signedRetry('DELETE', revoke, undefined, challenge, key)).statusCode).toBe(204);
    expectEnvelope(await client.call('POST', path, undefined, { 'service-wallet-signature': await stamp(key, payload) }), 401, 'WALLET_SIGNATURE_INVALID');
    expect(await balance(wallet.accountId)).toBe(100_000);
    // A fresh session may.
    const fresh = await client.login(wallet.credentialId);
    expect((await client.call('POST', path, undefined, { 'service-wallet-signature': await stamp(fresh.key, payload) })).statusCode).toBe(200);
    expect(await balance(wallet.accountId)).toBe(90_000);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a stamp on a quote whose source is not a wallet is 400', async () => {
    const customer = await client.call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'plain-1', endUserTermsConsent: consent() });
    const accounts = (await client.call('GET', `/customers/internal-accounts?customerId=${(customer.json() as { id: string }).id}&type=INTERNAL_FIAT`)).json() as { data: Array<{ id: string }> };
    const q = await walletQuote(accounts.data[0]!.id);
    expectEnvelope(await client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': 'x' }), 400, 'INVALID_INPUT');
  });
});

