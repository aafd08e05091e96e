import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, stamp, WalletClient, type ClientKey, type Method } from '../helpers/wallet.js';

/**
 * The upstream SDK sends the wallet signature as `Grid-Wallet-Signature` (UPSTREAM-FACTS §7.1):
 * every signed retry accepts it as an alias of `Service-Wallet-Signature`.
 */
let ctx: TestContext;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(async () => ctx.close());

/** Both legs of a signed operation, the retry carrying the stamp only in `Grid-Wallet-Signature`. */
async function signedWithAlias(method: Method, path: string, payload: unknown, key: ClientKey) {
  const challenge = await client.firstLeg(method, path, payload);
  return client.call(method, path, payload, { 'grid-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId });
}

async function loggedInWallet(extra: Record<string, unknown> = {}) {
  const wallet = await client.newWallet(extra);
  const { key, session } = await client.login(wallet.credentialId);
  return { wallet, key, session };
}

describe('Grid-Wallet-Signature', () => {
  it('signs the OTP verify retry (the login)', async () => {
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '000000', key) };
    const verified = await signedWithAlias('POST', `/auth/credentials/${wallet.credentialId}/verify`, body, key);
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json()).toMatchObject({ id: expect.stringMatching(/^Session:/), type: 'EMAIL_OTP' });
  });

  it('signs adding and revoking a credential', async () => {
    const { wallet, key } = await loggedInWallet({ phoneNumber: '+14155550111' });
    const added = await signedWithAlias('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, key);
    expect(added.statusCode, added.body).toBe(201);
    const smsId = (added.json() as { id: string }).id;
    const sms = await client.login(smsId, '000000', 'SMS_OTP');
    const revoked = await signedWithAlias('DELETE', `/auth/credentials/${wallet.credentialId}`, undefined, sms.key);
    expect(revoked.statusCode, revoked.body).toBe(204);
  });

  it('signs refreshing and revoking a session', async () => {
    const { key, session } = await loggedInWallet();
    const next = newClientKey();
    const refreshed = await signedWithAlias('POST', `/auth/sessions/${session.id}/refresh`, { clientPublicKey: next.publicKey }, key);
    expect(refreshed.statusCode, refreshed.body).toBe(201);
    const revoked = await signedWithAlias('DELETE', `/auth/sessions/${session.id}`, undefined, key);
    expect(revoked.statusCode, revoked.body).toBe(204);
  });

  it('signs a wallet export and a privacy change', async () => {
    const { wallet, key } = await loggedInWallet();
    const receiver = newClientKey();
    const exported = await signedWithAlias('POST', `/internal-accounts/${wallet.accountId}/export`, { clientPublicKey: receiver.publicKeyUncompressed }, key);
    expect(exported.statusCode, exported.body).toBe(200);
    const mnemonic = await client.openExport((exported.json() as { encryptedWalletCredentials: string }).encryptedWalletCredentials, receiver, wallet.accountId);
    expect(mnemonic.split(' ')).toHaveLength(24);
    const patched = await signedWithAlias('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, key);
    expect(patched.statusCode, patched.body).toBe(200);
  });

  it('signs a customer e-mail change tied to the EMAIL_OTP credential', async () => {
    const { wallet, key } = await loggedInWallet();
    const changed = await signedWithAlias('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', email: 'alias-signed@example.com' }, key);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ email: 'alias-signed@example.com' });
  });

  it('signs a customer phone change tied to the SMS_OTP credential', async () => {
    const { wallet, key } = await loggedInWallet({ phoneNumber: '+14155550112' });
    expect((await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, key)).statusCode).toBe(201);
    const changed = await signedWithAlias('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', phoneNumber: '+14155550113' }, key);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ phoneNumber: '+14155550113' });
  });

  it('accepts both headers when they agree, and refuses them with 400 naming both when they differ', async () => {
    const { wallet, key } = await loggedInWallet();
    const path = `/internal-accounts/${wallet.accountId}`;
    const body = { privateEnabled: true };
    const challenge = await client.firstLeg('PATCH', path, body);
    const good = await stamp(key, challenge.payloadToSign);
    const other = await stamp(newClientKey(), challenge.payloadToSign);
    const refused = expectEnvelope(
      await client.call('PATCH', path, body, { 'service-wallet-signature': good, 'grid-wallet-signature': other, 'request-id': challenge.requestId }),
      400,
      'INVALID_INPUT',
    );
    expect((refused.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['header.service-wallet-signature', 'header.grid-wallet-signature']);
    // The refusal used nothing up: the same challenge still goes through with both headers agreeing.
    const both = await client.call('PATCH', path, body, { 'service-wallet-signature': good, 'grid-wallet-signature': good, 'request-id': challenge.requestId });
    expect(both.statusCode, both.body).toBe(200);
  });

  it('still answers 401 WALLET_SIGNATURE_MISSING when neither header is sent', async () => {
    const { wallet } = await loggedInWallet();
    const challenge = await client.firstLeg('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true });
    expectEnvelope(await client.call('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, { 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_MISSING');
  });
});
