import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { newClientKey, stamp, WalletClient } from '../helpers/wallet.js';
import { setReviewStatus } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';

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
    // Too long to be a stamp is a malformed one too (spec §5 rule 2), not a 400 about the header.
    expectEnvelope(await client.call('POST', path, undefined, { 'grid-wallet-signature': 'a'.repeat(5000) }), 401, 'WALLET_SIGNATURE_MALFORMED');
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

  it('no path that executes at once takes a wallet: transfer-out and a UMA quote’s immediatelyExecute are refused, and nothing moves', async () => {
    const wallet = await fundedWallet();
    const usdPayee = await client.call('POST', '/platform/external-accounts', validSamples(ctx.clock.now()).USD_ACCOUNT);
    expect(usdPayee.statusCode, usdPayee.body).toBe(201);
    const out = expectEnvelope(
      await client.call('POST', '/transfer-out', { source: { accountId: wallet.accountId }, destination: { accountId: (usdPayee.json() as { id: string }).id }, amount: 40_000 }),
      400,
      'INVALID_INPUT',
    );
    expect(out.details).toMatchObject({ errors: [{ field: 'source.accountId' }] });

    const umaDomain = await client.call('PATCH', '/config', { umaDomain: 'wallet-platform.example' });
    expect(umaDomain.statusCode, umaDomain.body).toBe(200);
    const address = '$success.usd@sandbox.uma.money';
    const looked = await client.call('GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${wallet.customerId}`);
    expect(looked.statusCode, looked.body).toBe(200);
    const umaQuote = (immediatelyExecute: boolean) =>
      client.call('POST', '/quotes', {
        lookupId: (looked.json() as { lookupId: string }).lookupId,
        source: { sourceType: 'ACCOUNT', accountId: wallet.accountId },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency: 'USD' },
        lockedCurrencySide: 'RECEIVING',
        lockedCurrencyAmount: 30_000,
        immediatelyExecute,
      });
    expect(expectEnvelope(await umaQuote(true), 400, 'INVALID_INPUT').details).toMatchObject({ errors: [{ field: 'immediatelyExecute' }] });
    expect(await balance(wallet.accountId)).toBe(100_000);

    // Created plainly, the UMA quote carries the wallet's challenge like any other, and pays only with the stamp.
    const created = await umaQuote(false);
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Quote;
    const instruction = q.paymentInstructions[0]!.accountOrWalletInfo;
    expect(instruction.accountType).toBe('EMBEDDED_WALLET');
    expect(JSON.parse(instruction.payloadToSign)).toMatchObject({ type: 'ACTIVITY_TYPE_EXECUTE_QUOTE', parameters: { quoteId: q.id, destination: address } });
    expectEnvelope(await client.call('POST', `/quotes/${q.id}/execute`), 401, 'WALLET_SIGNATURE_MISSING');
    const { key } = await client.login(wallet.credentialId);
    const executed = await client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': await stamp(key, instruction.payloadToSign) });
    expect(executed.statusCode, executed.body).toBe(200);
    expect(await balance(wallet.accountId)).toBe(100_000 - q.totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a stamp on a quote whose source is not a wallet is 400', async () => {
    const customer = await client.call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'plain-1', endUserTermsConsent: consent() });
    const accounts = (await client.call('GET', `/customers/internal-accounts?customerId=${(customer.json() as { id: string }).id}&type=INTERNAL_FIAT`)).json() as { data: Array<{ id: string }> };
    const q = await walletQuote(accounts.data[0]!.id);
    expectEnvelope(await client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': 'x' }), 400, 'INVALID_INPUT');
  });
});


describe('an embedded wallet’s quote past its expiry, and refusals that changed nothing', () => {
  type Executed = Quote & { transactionId: string };
  const quoteOn = async (accountId: string, amount: number, paymentRail: string): Promise<Executed> => {
    const created = await client.call('POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId },
      destination: { destinationType: 'ACCOUNT', accountId: payee, paymentRail },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: amount,
    });
    expect(created.statusCode, created.body).toBe(201);
    return created.json() as Executed;
  };
  const payloadOf = (q: Quote) => q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign;
  const execute = (q: Quote, signature: string) => client.call('POST', `/quotes/${q.id}/execute`, undefined, { 'service-wallet-signature': signature });
  const statusOf = async (q: Quote) => ((await client.call('GET', `/quotes/${q.id}`)).json() as Quote).status;
  const fund = async (accountId: string, amount: number) => {
    const funded = await client.call('POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount });
    expect(funded.statusCode, funded.body).toBe(200);
  };

  /** What the non-wallet path answers for an expired quote: 409 QUOTE_EXPIRED, its transaction EXPIRED, nothing moved; the re-send answers the same. */
  async function expectRecordedExpired(q: Executed, signature: string, accountId: string, before: number) {
    const refused = expectEnvelope(await execute(q, signature), 409, 'CONFLICT');
    expect(refused.details).toMatchObject({ reason: 'QUOTE_EXPIRED', quoteId: q.id, transactionId: q.transactionId });
    const transaction = await client.call('GET', `/transactions/${q.transactionId}`);
    expect(transaction.statusCode, transaction.body).toBe(200);
    expect(transaction.json()).toMatchObject({ status: 'EXPIRED' });
    expect(await statusOf(q)).toBe('EXPIRED');
    expect(await balance(accountId)).toBe(before);
    expect(expectEnvelope(await execute(q, signature), 409, 'CONFLICT').details).toMatchObject({ reason: 'QUOTE_EXPIRED' });
    await expectLedgerConsistent(ctx.handle.db);
  }

  it('a SEPA_INSTANT quote (60 s) executed 61 s on the platform clock is 409 QUOTE_EXPIRED and recorded EXPIRED', async () => {
    const wallet = await fundedWallet();
    const { key } = await client.login(wallet.credentialId);
    const q = await quoteOn(wallet.accountId, 10_000, 'SEPA_INSTANT');
    expect((await client.call('POST', '/sandbox/clock/advance', { seconds: 61 })).statusCode).toBe(200);
    await expectRecordedExpired(q, await stamp(key, payloadOf(q)), wallet.accountId, 100_000);
  });

  it('a SEPA quote (300 s) executed 301 s later answers what the non-wallet path does, not REQUEST_ID_EXPIRED', async () => {
    const wallet = await fundedWallet();
    const { key } = await client.login(wallet.credentialId);
    const q = await quoteOn(wallet.accountId, 10_000, 'SEPA');
    ctx.clock.advance(301_000);
    await expectRecordedExpired(q, await stamp(key, payloadOf(q)), wallet.accountId, 100_000);
  });

  it('however long after expiry: a day later, a fresh session’s stamp records it EXPIRED; a still-valid quote is unaffected', async () => {
    const wallet = await fundedWallet();
    const q = await quoteOn(wallet.accountId, 10_000, 'SEPA');
    expect((await client.call('POST', '/sandbox/clock/advance', { seconds: 301 })).statusCode).toBe(200);
    ctx.clock.advance(86_400_000);
    const { key } = await client.login(wallet.credentialId);
    await expectRecordedExpired(q, await stamp(key, payloadOf(q)), wallet.accountId, 100_000);
    // A quote created now, on the moved clocks, still executes inside its lifetime.
    const live = await quoteOn(wallet.accountId, 10_000, 'SEPA');
    expect((await execute(live, await stamp(key, payloadOf(live)))).statusCode).toBe(200);
    expect(await balance(wallet.accountId)).toBe(100_000 - live.totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a refusal for balance does not use the challenge up: once funded the identical stamp executes it, once', async () => {
    const wallet = await client.newWallet({ endUserTermsConsent: consent() });
    await fund(wallet.accountId, 5_000);
    const { key } = await client.login(wallet.credentialId);
    const q = await quoteOn(wallet.accountId, 10_000, 'SEPA');
    const signature = await stamp(key, payloadOf(q));
    const refused = expectEnvelope(await execute(q, signature), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE' });
    expect(await statusOf(q)).toBe('PENDING');
    expect(await balance(wallet.accountId)).toBe(5_000);
    // Still short: refused again, still not used up.
    expectEnvelope(await execute(q, signature), 400, 'AMOUNT_OUT_OF_RANGE');
    await expectLedgerConsistent(ctx.handle.db);

    await fund(wallet.accountId, 50_000);
    const executed = await execute(q, signature);
    expect(executed.statusCode, executed.body).toBe(200);
    expect((executed.json() as Quote).status).toBe('PROCESSING');
    expect(await balance(wallet.accountId)).toBe(55_000 - q.totalSendingAmount);
    // Consumed by the success: the identical request answers the same, another stamp is refused.
    const again = await execute(q, signature);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(executed.json());
    expect(expectEnvelope(await execute(q, await stamp(key, payloadOf(q))), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'REQUEST_ID_USED' });
    expect(await balance(wallet.accountId)).toBe(55_000 - q.totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('after a refusal for the sender’s review, a fresh stamp of another session executes it; concurrent stamps execute it exactly once', async () => {
    const wallet = await fundedWallet();
    const { key } = await client.login(wallet.credentialId);
    const q = await quoteOn(wallet.accountId, 10_000, 'SEPA');
    const review = (status: 'PENDING' | 'APPROVED') =>
      withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, ctx.platform.uuid, parseId('Customer', wallet.customerId)!, status));
    await review('PENDING');
    expectEnvelope(await execute(q, await stamp(key, payloadOf(q))), 403, 'USER_NOT_READY');
    expect(await statusOf(q)).toBe('PENDING');
    expect(await balance(wallet.accountId)).toBe(100_000);
    await review('APPROVED');

    const other = await client.login(wallet.credentialId);
    const stamps = await Promise.all([stamp(key, payloadOf(q)), stamp(other.key, payloadOf(q)), stamp(other.key, payloadOf(q))]);
    const answers = await Promise.all(stamps.map((s) => execute(q, s)));
    const succeeded = answers.filter((a) => a.statusCode === 200);
    expect(succeeded, answers.map((a) => a.body).join('\n')).toHaveLength(1);
    for (const a of answers.filter((x) => x.statusCode !== 200)) expect(expectEnvelope(a, 401, 'UNAUTHORIZED').details).toEqual({ reason: 'REQUEST_ID_USED' });
    expect(await balance(wallet.accountId)).toBe(100_000 - q.totalSendingAmount);
    expect(await statusOf(q)).toBe('PROCESSING');
    await expectLedgerConsistent(ctx.handle.db);
  });
});
