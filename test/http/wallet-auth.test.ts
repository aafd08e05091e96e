import { verifyOtpVerificationToken } from '@turnkey/crypto';
import { validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { highS } from '../helpers/der.js';
import { CapturingMessages, newClientKey, openSessionKey, stamp, uniquePhoneNumber, WalletClient, type WalletFixture } from '../helpers/wallet.js';

let ctx: TestContext;
let client: WalletClient;
const messages = new CapturingMessages();

beforeAll(async () => {
  ctx = await createTestContext({ messages });
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const FIVE_MINUTES = 5 * 60_000;

const credentials = async (w: WalletFixture, c = client) =>
  ((await c.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Body[] }).data;
const sessions = async (w: WalletFixture, c = client) =>
  ((await c.call('GET', `/auth/sessions?accountId=${w.accountId}`)).json() as { data: Body[] }).data;

/**
 * A wallet whose customer also has a phone, logged in with EMAIL_OTP and with an SMS_OTP
 * credential added. Each has a phone of its own: another customer's SMS_OTP credential may not
 * carry it.
 */
async function walletWithTwoCredentials() {
  const phoneNumber = uniquePhoneNumber();
  const wallet = await client.newWallet({ phoneNumber });
  const email = await client.login(wallet.credentialId);
  const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key);
  expect(added.statusCode, added.body).toBe(201);
  const smsId = (added.json() as { id: string }).id;
  const sms = await client.login(smsId, '000000', 'SMS_OTP');
  return { wallet, email, sms, smsId, phoneNumber };
}

describe('provisioning', () => {
  it('gives a new wallet one EMAIL_OTP credential tied to the customer e-mail, and a sealed wallet secret', async () => {
    const wallet = await client.newWallet();
    const [credential] = await credentials(wallet);
    expect(credential).toEqual({
      id: expect.stringMatching(/^AuthMethod:[0-9a-f-]{36}$/),
      accountId: wallet.accountId,
      type: 'EMAIL_OTP',
      nickname: wallet.email,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    await ctx.jobs.runDue(50);
    const uuid = wallet.accountId.split(':')[1]!;
    const stored = await ctx.handle.db.selectFrom('wallets').selectAll().where('account_id', '=', uuid).executeTakeFirstOrThrow();
    expect(stored.sealed_secret).toMatch(/^v1\./);
    const accounts = (await client.call('GET', `/customers/internal-accounts?customerId=${wallet.customerId}&type=EMBEDDED_WALLET`)).json() as { data: Body[] };
    expect(accounts.data[0]).toMatchObject({ type: 'EMBEDDED_WALLET', privateEnabled: false });
  });

  it('opens no wallet for a customer without an e-mail until one is set', async () => {
    const created = await client.call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `no-mail-${Date.now()}`, fullName: 'No Mail' });
    const customerId = (created.json() as { id: string }).id;
    const walletsOf = async () =>
      ((await client.call('GET', `/customers/internal-accounts?customerId=${customerId}&type=EMBEDDED_WALLET`)).json() as { data: Array<{ id: string }> }).data;
    expect(await walletsOf()).toEqual([]);
    const patched = await client.call('PATCH', `/customers/${customerId}`, { customerType: 'INDIVIDUAL', email: 'late@example.com' });
    expect(patched.statusCode, patched.body).toBe(200);
    const [account] = await walletsOf();
    expect(account).toBeDefined();
    const list = (await client.call('GET', `/auth/credentials?accountId=${account!.id}`)).json() as { data: Body[] };
    expect(list.data).toMatchObject([{ type: 'EMAIL_OTP', nickname: 'late@example.com' }]);
  });

  it('lists nothing for an account of another platform, and rejects a missing or malformed accountId', async () => {
    const wallet = await client.newWallet();
    const other = new WalletClient(ctx, await ctx.newPlatform());
    expect(await credentials(wallet, other)).toEqual([]);
    expect(await sessions(wallet, other)).toEqual([]);
    expectEnvelope(await client.call('GET', '/auth/credentials'), 400, 'INVALID_INPUT');
    expectEnvelope(await client.call('GET', '/auth/credentials?accountId=Customer:0198a3c4-0000-7000-8000-000000000000'), 400, 'INVALID_INPUT');
    expectEnvelope(await client.call('GET', '/auth/sessions?accountId=nope'), 400, 'INVALID_INPUT');
  });

  it('publishes the enclave key', async () => {
    const response = await client.call('GET', '/auth/enclave');
    expect(response.statusCode).toBe(200);
    expect((response.json() as { enclaveQuorumPublic: string }).enclaveQuorumPublic).toMatch(/^04[0-9a-f]{128}$/);
  });
});

describe('EMAIL_OTP verify', () => {
  it('challenge → encrypted OTP → 202 bound to the client key → signed retry → 200 session without a sealed key', async () => {
    const wallet = await client.newWallet();
    const challenged = await client.call('POST', `/auth/credentials/${wallet.credentialId}/challenge`);
    expect(challenged.statusCode).toBe(200);
    const method = challenged.json() as Body & { otpEncryptionTargetBundle: string };
    expect(method).toEqual({ ...(await credentials(wallet))[0], otpEncryptionTargetBundle: expect.any(String) });
    const target = JSON.parse(method.otpEncryptionTargetBundle) as Body;
    expect(target).toEqual({ version: 'v1.0.0', data: expect.stringMatching(/^[0-9a-f]+$/), dataSignature: expect.stringMatching(/^[0-9a-f]+$/), enclaveQuorumPublic: client.enclaveKey });

    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(method.otpEncryptionTargetBundle, '000000', key) };
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const first = await client.call('POST', path, body);
    expect(first.statusCode, first.body).toBe(202);
    const challenge = first.json() as { type: string; payloadToSign: string; requestId: string; expiresAt: string };
    expect(challenge.type).toBe('EMAIL_OTP');
    expect(challenge.requestId).toMatch(/^Request:[0-9a-f-]{36}$/);
    expect(new Date(challenge.expiresAt).getTime()).toBe(ctx.clock.now().getTime() + FIVE_MINUTES);
    const claims = await verifyOtpVerificationToken(challenge.payloadToSign, client.enclaveKey);
    expect(claims).toMatchObject({ id: challenge.requestId, verification_type: 'OTP_TYPE_EMAIL', contact: wallet.email, organization_id: wallet.accountId, public_key: key.publicKeyUncompressed });

    const retried = await client.signedRetry('POST', path, body, challenge, key);
    expect(retried.statusCode, retried.body).toBe(200);
    const session = retried.json() as Body;
    expect(session).toEqual({
      id: expect.stringMatching(/^Session:[0-9a-f-]{36}$/),
      accountId: wallet.accountId,
      type: 'EMAIL_OTP',
      nickname: wallet.email,
      createdAt: ctx.clock.now().toISOString(),
      updatedAt: ctx.clock.now().toISOString(),
      expiresAt: new Date(ctx.clock.now().getTime() + 15 * 60_000).toISOString(),
    });
    expect(await sessions(wallet)).toEqual([session]);
  });

  it('uses each OTP once', async () => {
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '000000', key) };
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    expect((await client.call('POST', path, body)).statusCode).toBe(202);
    const again = expectEnvelope(await client.call('POST', path, body), 401, 'UNAUTHORIZED');
    expect(again.details).toEqual({ reason: 'OTP_NOT_ISSUED' });
  });

  it('lets an OTP expire after the configured time', async () => {
    const c = new WalletClient(ctx, await ctx.newPlatform());
    await c.enableWallets();
    expect((await c.call('PATCH', '/config', { embeddedWalletConfig: { expirationSeconds: 60 } })).statusCode).toBe(200);
    const wallet = await c.newWallet();
    const bundle = await c.challenge(wallet.credentialId);
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await c.encryptOtp(bundle, '000000', key) };
    ctx.clock.advance(60_000);
    const expired = expectEnvelope(await c.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, body), 401, 'UNAUTHORIZED');
    expect(expired.details).toEqual({ reason: 'OTP_EXPIRED' });
  });

  it('answers 401 for a wrong code and 429 with Retry-After after five, until the pause ends', async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const bundle = await client.challenge(wallet.credentialId);
    for (let attempt = 1; attempt <= 4; attempt++) {
      const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '123456', newClientKey()) };
      const wrong = expectEnvelope(await client.call('POST', path, body), 401, 'UNAUTHORIZED');
      expect(wrong.details).toEqual({ reason: 'OTP_INVALID', attemptsRemaining: 5 - attempt });
    }
    const fifth = await client.call('POST', path, { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '123456', newClientKey()) });
    expectEnvelope(fifth, 429, 'RATE_LIMITED');
    expect(fifth.headers['retry-after']).toBe('900');
    const blocked = await client.call('POST', `/auth/credentials/${wallet.credentialId}/challenge`);
    expectEnvelope(blocked, 429, 'RATE_LIMITED');
    ctx.clock.advance(10 * 60_000);
    expect((await client.call('POST', `/auth/credentials/${wallet.credentialId}/challenge`)).headers['retry-after']).toBe('300');
    ctx.clock.advance(5 * 60_000);
    const { session } = await client.login(wallet.credentialId);
    expect(session.type).toBe('EMAIL_OTP');
  });

  it('rejects a bundle made for an older target, a type that is not the credential’s, and unknown credentials', async () => {
    const wallet = await client.newWallet();
    const old = await client.challenge(wallet.credentialId);
    await client.challenge(wallet.credentialId);
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const stale = expectEnvelope(await client.call('POST', path, { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(old, '000000', newClientKey()) }), 401, 'UNAUTHORIZED');
    expect(stale.details).toEqual({ reason: 'OTP_BUNDLE_INVALID' });
    const wrongType = expectEnvelope(await client.call('POST', path, { type: 'SMS_OTP', encryptedOtpBundle: '{}' }), 400, 'INVALID_INPUT');
    expect(wrongType.details).toEqual({ errors: [{ field: 'type', constraint: { enum: ['EMAIL_OTP'] }, message: expect.any(String) }] });
    expectEnvelope(await client.call('POST', path, { type: 'EMAIL_OTP' }), 400, 'INVALID_INPUT');
    expectEnvelope(await client.call('POST', '/auth/credentials/AuthMethod:0198a3c4-0000-7000-8000-000000000000/verify', { type: 'EMAIL_OTP', encryptedOtpBundle: '{}' }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await client.call('POST', '/auth/credentials/AuthMethod:0198a3c4-0000-7000-8000-000000000000/challenge'), 404, 'REFERENCE_NOT_FOUND');
  });

  it('sends production OTPs through the message provider and never accepts the sandbox code there', async () => {
    const prod = new WalletClient(ctx, await ctx.newPlatform('production'));
    await prod.enableWallets();
    expect((await prod.call('PATCH', '/config', { embeddedWalletConfig: { otpLength: 8 } })).statusCode).toBe(200);
    const wallet = await prod.newWallet();
    const before = messages.sent.length;
    const bundle = await prod.challenge(wallet.credentialId);
    expect(messages.sent.length).toBe(before + 1);
    expect(messages.sent.at(-1)).toMatchObject({ channel: 'EMAIL', to: wallet.email, subject: 'Acme Wallet verification code' });
    const code = messages.lastCode();
    expect(code).toMatch(/^\d{8}$/);
    const wrong = code === '00000000' ? '11111111' : '00000000';
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    expectEnvelope(await prod.call('POST', path, { type: 'EMAIL_OTP', encryptedOtpBundle: await prod.encryptOtp(bundle, wrong, newClientKey()) }), 401, 'UNAUTHORIZED');
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await prod.encryptOtp(bundle, code, key) };
    const challenge = await prod.firstLeg('POST', path, body);
    expect((await prod.signedRetry('POST', path, body, challenge, key)).statusCode).toBe(200);
    const stored = await ctx.handle.db.selectFrom('otp_challenges').select('code_hash').execute();
    expect(stored.every((row) => !row.code_hash.includes(code))).toBe(true);
  });
});

describe('signed retries', () => {
  async function exportChallenge() {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const path = `/internal-accounts/${wallet.accountId}/export`;
    const body = { clientPublicKey: newClientKey().publicKeyUncompressed };
    const challenge = await client.firstLeg('POST', path, body);
    return { wallet, key, path, body, challenge };
  }

  it('names each failure with the spec’s code', async () => {
    const { key, path, body, challenge } = await exportChallenge();
    const signature = await stamp(key, challenge.payloadToSign);
    expectEnvelope(await client.call('POST', path, body, { 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_MISSING');
    expectEnvelope(await client.call('POST', path, body, { 'service-wallet-signature': signature }), 401, 'REQUEST_ID_MISSING');
    for (const garbage of ['not a stamp', Buffer.from('{"publicKey":"02"}').toString('base64url'), Buffer.from('[1,2]').toString('base64url')]) {
      expectEnvelope(await client.call('POST', path, body, { 'service-wallet-signature': garbage, 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    }
    const otherBody = { clientPublicKey: newClientKey().publicKeyUncompressed };
    expectEnvelope(await client.call('POST', path, otherBody, { 'service-wallet-signature': signature, 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_BODY_MISMATCH');
    const stranger = newClientKey();
    expectEnvelope(await client.signedRetry('POST', path, body, challenge, stranger), 401, 'WALLET_SIGNATURE_INVALID');
    const overOtherBytes = await stamp(key, `${challenge.payloadToSign} `);
    expectEnvelope(await client.call('POST', path, body, { 'service-wallet-signature': overOtherBytes, 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_INVALID');
    const unknown = expectEnvelope(
      await client.call('POST', path, body, { 'service-wallet-signature': signature, 'request-id': 'Request:0198a3c4-0000-7000-8000-000000000000' }),
      401,
      'UNAUTHORIZED',
    );
    expect(unknown.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });
    // None of the failures used the challenge up.
    expect((await client.call('POST', path, body, { 'service-wallet-signature': signature, 'request-id': challenge.requestId })).statusCode).toBe(200);
  });

  it('answers a signature or Request-Id too long to be one with the retry’s 401, not a 400 about the header', async () => {
    const { key, path, body, challenge } = await exportChallenge();
    const long = 'a'.repeat(5000);
    expectEnvelope(await client.call('POST', path, body, { 'service-wallet-signature': long, 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    expectEnvelope(await client.call('POST', path, body, { 'grid-wallet-signature': long, 'request-id': challenge.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    const signature = await stamp(key, challenge.payloadToSign);
    const unknown = expectEnvelope(await client.call('POST', path, body, { 'service-wallet-signature': signature, 'request-id': `${challenge.requestId}${'0'.repeat(200)}` }), 401, 'UNAUTHORIZED');
    expect(unknown.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });
  });

  it('calls a credential add retried with another account in its body a body mismatch', async () => {
    const wallet = await client.newWallet({ phoneNumber: '+14155550181' });
    const other = await client.newWallet({ phoneNumber: '+14155550182' });
    const { key } = await client.login(wallet.credentialId);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    const moved = { type: 'SMS_OTP', accountId: other.accountId };
    expectEnvelope(await client.signedRetry('POST', '/auth/credentials', moved, challenge, key), 401, 'WALLET_SIGNATURE_BODY_MISMATCH');
    expect((await credentials(other)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
    expect((await client.signedRetry('POST', '/auth/credentials', body, challenge, key)).statusCode).toBe(201);
  });

  it('uses a request id once: a second, differently signed retry is 401', async () => {
    const { key, path, body, challenge } = await exportChallenge();
    expect((await client.signedRetry('POST', path, body, challenge, key)).statusCode).toBe(200);
    const reused = expectEnvelope(await client.signedRetry('POST', path, body, challenge, key), 401, 'UNAUTHORIZED');
    expect(reused.details).toEqual({ reason: 'REQUEST_ID_USED' });
  });

  it('keeps a refusal of a wallet-auth operation as its outcome: the identical re-send answers it again, another stamp is REQUEST_ID_USED', async () => {
    // Only operations that opt in (retryableRefusals: a wallet's quote execution) give a refused request back.
    const wallet = await client.newWallet({ phoneNumber: '+14155550199' });
    const { key } = await client.login(wallet.credentialId);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const first = await client.firstLeg('POST', '/auth/credentials', body);
    const second = await client.firstLeg('POST', '/auth/credentials', body);
    expect((await client.signedRetry('POST', '/auth/credentials', body, first, key)).statusCode).toBe(201);
    const headers = { 'service-wallet-signature': await stamp(key, second.payloadToSign), 'request-id': second.requestId };
    expectEnvelope(await client.call('POST', '/auth/credentials', body, headers), 400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS');
    expectEnvelope(await client.call('POST', '/auth/credentials', body, headers), 400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS');
    expect(expectEnvelope(await client.signedRetry('POST', '/auth/credentials', body, second, key), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'REQUEST_ID_USED' });
  });

  it('refuses a retry after the five-minute window', async () => {
    const { key, path, body, challenge } = await exportChallenge();
    ctx.clock.advance(FIVE_MINUTES);
    const expired = expectEnvelope(await client.signedRetry('POST', path, body, challenge, key), 401, 'UNAUTHORIZED');
    expect(expired.details).toEqual({ reason: 'REQUEST_ID_EXPIRED' });
  });

  it('accepts a high-S signature', async () => {
    const { key, path, body, challenge } = await exportChallenge();
    const stamped = JSON.parse(Buffer.from(await stamp(key, challenge.payloadToSign), 'base64url').toString()) as { publicKey: string; scheme: string; signature: string };
    stamped.signature = highS(stamped.signature);
    const header = Buffer.from(JSON.stringify(stamped)).toString('base64url');
    const response = await client.call('POST', path, body, { 'service-wallet-signature': header, 'request-id': challenge.requestId });
    expect(response.statusCode, response.body).toBe(200);
  });

  it('runs exactly one of two concurrent retries with the same Request-Id', async () => {
    const { wallet, key } = await exportChallenge();
    const bundle = await client.challenge(wallet.credentialId);
    const tek = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '000000', tek) };
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const challenge = await client.firstLeg('POST', path, body);
    const [a, b] = await Promise.all([client.signedRetry('POST', path, body, challenge, tek), client.signedRetry('POST', path, body, challenge, tek)]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 401]);
    expect((await sessions(wallet)).map((s) => s.id)).toHaveLength(2);
    // The same race on an operation authorised by a session, which the operation itself revokes.
    const [session] = await sessions(wallet);
    const path2 = `/auth/sessions/${String(session!.id)}`;
    const revoke = await client.firstLeg('DELETE', path2);
    const [c, d] = await Promise.all([client.signedRetry('DELETE', path2, undefined, revoke, key), client.signedRetry('DELETE', path2, undefined, revoke, key)]);
    expect([c.statusCode, d.statusCode].sort()).toEqual([204, 401]);
    expect(await sessions(wallet)).toHaveLength(1);
  });
});

describe('credentials', () => {
  it('adds SMS_OTP with a signed retry once a credential is verified, and refuses a second of a type', async () => {
    const { wallet, email, smsId, phoneNumber } = await walletWithTwoCredentials();
    const list = await credentials(wallet);
    expect(list.map((c) => c.type).sort()).toEqual(['EMAIL_OTP', 'SMS_OTP']);
    expect(list.find((c) => c.id === smsId)).toMatchObject({ nickname: phoneNumber });
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }), 400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS');
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.accountId }), 400, 'EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS');
    void email;
  });

  it('needs a signed retry for any add once the account has a credential, even before any session: the end user logs in first', async () => {
    const wallet = await client.newWallet({ phoneNumber: '+14155550100' });
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    expect(challenge.type).toBe('SMS_OTP');
    // No session exists yet, so no key can sign it; nothing is added.
    expectEnvelope(await client.signedRetry('POST', '/auth/credentials', body, challenge, newClientKey()), 401, 'WALLET_SIGNATURE_INVALID');
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
    // Logging in with the initial EMAIL_OTP opens the session that signs (spec §5 rule 3).
    const { key } = await client.login(wallet.credentialId);
    const added = await client.signed('POST', '/auth/credentials', body, key);
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json()).toMatchObject({ type: 'SMS_OTP', nickname: '+14155550100', otpEncryptionTargetBundle: expect.any(String) });
  });

  it('answers concurrent adds of one OTP type with one 201 and the spec’s 400 for the rest, never a 500', async () => {
    const wallet = await client.newWallet({ phoneNumber: '+14155550183' });
    const { key } = await client.login(wallet.credentialId);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenges = [];
    for (let i = 0; i < 3; i++) challenges.push(await client.firstLeg('POST', '/auth/credentials', body));
    // On PostgreSQL each retry checks before any inserts, so the unique index decides.
    const answers = await Promise.all(challenges.map((challenge) => client.signedRetry('POST', '/auth/credentials', body, challenge, key)));
    expect(answers.map((a) => a.statusCode).sort(), answers.map((a) => a.body).join('\n')).toEqual([201, 400, 400]);
    for (const refused of answers.filter((a) => a.statusCode === 400)) expectEnvelope(refused, 400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS');
    expect((await credentials(wallet)).map((c) => c.type).sort()).toEqual(['EMAIL_OTP', 'SMS_OTP']);
  });

  it('validates the body and the account', async () => {
    const wallet = await client.newWallet();
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }), 400, 'MISSING_MANDATORY_USER_INFO');
    const badType = expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'FAX', accountId: wallet.accountId }), 400, 'INVALID_INPUT');
    expect(badType.details).toMatchObject({ errors: [{ field: 'type', constraint: { enum: ['EMAIL_OTP', 'SMS_OTP', 'OAUTH', 'PASSKEY'] } }] });
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: 'InternalAccount:0198a3c4-0000-7000-8000-000000000000' }), 404, 'REFERENCE_NOT_FOUND');
    const fiat = (await client.call('GET', `/customers/internal-accounts?customerId=${wallet.customerId}&type=INTERNAL_FIAT`)).json() as { data: Array<{ id: string }> };
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: fiat.data[0]!.id }), 404, 'REFERENCE_NOT_FOUND');
  });

  it('never revokes the last credential', async () => {
    const wallet = await client.newWallet();
    const last = expectEnvelope(await client.call('DELETE', `/auth/credentials/${wallet.credentialId}`), 400, 'INVALID_INPUT');
    expect(last.details).toEqual({ reason: 'LAST_CREDENTIAL' });
  });

  it('revokes a credential only with another credential’s session, and its sessions with it', async () => {
    const { wallet, email, sms } = await walletWithTwoCredentials();
    const path = `/auth/credentials/${wallet.credentialId}`;
    const challenge = await client.firstLeg('DELETE', path);
    expect(challenge.type).toBe('EMAIL_OTP');
    expectEnvelope(await client.signedRetry('DELETE', path, undefined, challenge, email.key), 401, 'WALLET_SIGNATURE_INVALID');
    const revoked = await client.signedRetry('DELETE', path, undefined, challenge, sms.key);
    expect(revoked.statusCode, revoked.body).toBe(204);
    expect(revoked.body).toBe('');
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['SMS_OTP']);
    expect((await sessions(wallet)).map((s) => s.id)).toEqual([sms.session.id]);
    // The revoked credential's session signs nothing any more.
    const again = await client.firstLeg('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.accountId });
    expectEnvelope(await client.signedRetry('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.accountId }, again, email.key), 401, 'WALLET_SIGNATURE_INVALID');
    // With the old one gone, EMAIL_OTP can be added again.
    const readded = await client.signed('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.accountId }, sms.key);
    expect(readded.statusCode, readded.body).toBe(201);
    const added = readded.json() as { id: string; otpEncryptionTargetBundle: string };
    expect(added).toMatchObject({ type: 'EMAIL_OTP', nickname: wallet.email, otpEncryptionTargetBundle: expect.any(String) });
    // Activation: the registration's own target bundle verifies the new credential, no challenge call needed.
    const tek = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(added.otpEncryptionTargetBundle, '000000', tek) };
    const verifyPath = `/auth/credentials/${added.id}/verify`;
    const verified = await client.signedRetry('POST', verifyPath, body, await client.firstLeg('POST', verifyPath, body), tek);
    expect(verified.statusCode, verified.body).toBe(200);
  });
});

describe('sessions', () => {
  it('revokes a session signed by itself; a revoked session signs nothing', async () => {
    const wallet = await client.newWallet();
    const { key, session } = await client.login(wallet.credentialId);
    const path = `/auth/sessions/${session.id}`;
    const challenge = await client.firstLeg('DELETE', path);
    expect(challenge.type).toBe('EMAIL_OTP');
    expect((await client.signedRetry('DELETE', path, undefined, challenge, key)).statusCode).toBe(204);
    expect(await sessions(wallet)).toEqual([]);
    expectEnvelope(await client.call('DELETE', path), 404, 'REFERENCE_NOT_FOUND');
    const body = { clientPublicKey: newClientKey().publicKeyUncompressed };
    const exportChallenge = await client.firstLeg('POST', `/internal-accounts/${wallet.accountId}/export`, body);
    expectEnvelope(await client.signedRetry('POST', `/internal-accounts/${wallet.accountId}/export`, body, exportChallenge, key), 401, 'WALLET_SIGNATURE_INVALID');
  });

  it('lets a session expire after 15 minutes', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const body = { privateEnabled: true };
    ctx.clock.advance(14 * 60_000);
    const challenge = await client.firstLeg('PATCH', `/internal-accounts/${wallet.accountId}`, body);
    expect(await sessions(wallet)).toHaveLength(1);
    ctx.clock.advance(60_000);
    expect(await sessions(wallet)).toEqual([]);
    expectEnvelope(await client.signedRetry('PATCH', `/internal-accounts/${wallet.accountId}`, body, challenge, key), 401, 'WALLET_SIGNATURE_INVALID');
  });

  it('refreshes to a client-held key (compressed) or to a sealed new key (uncompressed)', async () => {
    const wallet = await client.newWallet();
    const { key, session } = await client.login(wallet.credentialId);
    const held = newClientKey();
    const path = `/auth/sessions/${session.id}/refresh`;
    const first = await client.firstLeg('POST', path, { clientPublicKey: held.publicKey });
    expect(first).not.toHaveProperty('type');
    const refreshed = await client.signedRetry('POST', path, { clientPublicKey: held.publicKey }, first, key);
    expect(refreshed.statusCode, refreshed.body).toBe(201);
    const fresh = refreshed.json() as Body & { id: string };
    expect(fresh.id).not.toBe(session.id);
    expect(fresh).not.toHaveProperty('encryptedSessionSigningKey');
    expect((await client.signed('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, held)).statusCode).toBe(200);

    const receiver = newClientKey();
    const sealed = await client.signed('POST', `/auth/sessions/${fresh.id}/refresh`, { clientPublicKey: receiver.publicKeyUncompressed }, held);
    expect(sealed.statusCode, sealed.body).toBe(201);
    const { encryptedSessionSigningKey } = sealed.json() as { encryptedSessionSigningKey: string };
    const sessionKey = openSessionKey(encryptedSessionSigningKey, receiver);
    const listed = await sessions(wallet);
    expect(listed.every((s) => !('encryptedSessionSigningKey' in s))).toBe(true);
    expect((await client.signed('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: false }, sessionKey)).statusCode).toBe(200);
  });

  it('binds the refresh to the session being refreshed', async () => {
    const wallet = await client.newWallet({ phoneNumber: '+14155550999' });
    const a = await client.login(wallet.credentialId);
    const b = await client.login(wallet.credentialId);
    const path = `/auth/sessions/${a.session.id}/refresh`;
    const body = { clientPublicKey: newClientKey().publicKey };
    const challenge = await client.firstLeg('POST', path, body);
    expectEnvelope(await client.signedRetry('POST', path, body, challenge, b.key), 401, 'WALLET_SIGNATURE_INVALID');
  });
});

describe('export and privacy', () => {
  it('seals the wallet mnemonic to the client key; only the identical signed retry returns it again, within the window', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const receiver = newClientKey();
    const path = `/internal-accounts/${wallet.accountId}/export`;
    const body = { clientPublicKey: receiver.publicKeyUncompressed };
    const challenge = await client.firstLeg('POST', path, body);
    const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId };
    const exported = await client.call('POST', path, body, headers);
    expect(exported.statusCode, exported.body).toBe(200);
    const result = exported.json() as { id: string; encryptedWalletCredentials: string };
    expect(result.id).toBe(wallet.accountId);
    const open = (bundle: string) => client.openExport(bundle, receiver, wallet.accountId);
    const mnemonic = await open(result.encryptedWalletCredentials);
    expect(mnemonic.split(' ')).toHaveLength(24);
    expect(validateMnemonic(mnemonic, wordlist)).toBe(true);

    const again = await client.call('POST', path, body, headers);
    expect(again.statusCode).toBe(200);
    expect(await open((again.json() as { encryptedWalletCredentials: string }).encryptedWalletCredentials)).toBe(mnemonic);
    const stored = await ctx.handle.db.selectFrom('signed_requests').select('outcome').where('operation', '=', 'wallet.export').execute();
    expect(JSON.stringify(stored)).not.toContain('encryptedWalletCredentials');
    ctx.clock.advance(FIVE_MINUTES);
    expectEnvelope(await client.call('POST', path, body, headers), 401, 'UNAUTHORIZED');
    expectEnvelope(await client.call('POST', path, { clientPublicKey: receiver.publicKey }), 400, 'INVALID_INPUT');
  });

  it('updates privateEnabled with a signed PATCH', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const response = await client.signed('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, key);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ id: wallet.accountId, type: 'EMBEDDED_WALLET', privateEnabled: true });
    expectEnvelope(await client.call('PATCH', `/internal-accounts/${wallet.accountId}`, {}), 400, 'INVALID_INPUT');
    expectEnvelope(await client.call('PATCH', '/internal-accounts/InternalAccount:0198a3c4-0000-7000-8000-000000000000', { privateEnabled: true }), 404, 'REFERENCE_NOT_FOUND');
  });
});

describe('customer e-mail change', () => {
  it('changes the customer e-mail and the tied credential together, after a signed retry', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const path = `/customers/${wallet.customerId}`;
    expectEnvelope(await client.call('PATCH', path, { customerType: 'INDIVIDUAL', email: 'new@example.com', birthDate: 'yesterday' }), 400, 'INVALID_INPUT');
    const plain = await client.call('PATCH', path, { customerType: 'INDIVIDUAL', fullName: 'Wanda Renamed' });
    expect(plain.statusCode).toBe(200);
    const body = { customerType: 'INDIVIDUAL', email: 'new@example.com' };
    const challenge = await client.firstLeg('PATCH', path, body);
    expect(((await client.call('GET', path)).json() as { email: string }).email).toBe(wallet.email);
    const changed = await client.signedRetry('PATCH', path, body, challenge, key);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ id: wallet.customerId, email: 'new@example.com', fullName: 'Wanda Renamed' });
    expect((await credentials(wallet))[0]).toMatchObject({ type: 'EMAIL_OTP', nickname: 'new@example.com' });
  });
});

describe('PROCESSING', () => {
  it('answers PROCESSING while the sandbox provider settles; the identical re-send returns the outcome once settled', async () => {
    const wallet = await client.newWallet({ phoneNumber: '+14155550777' });
    const { key } = await client.login(wallet.credentialId);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': '30' };
    const pending = await client.call('POST', '/auth/credentials', body, headers);
    expect(pending.statusCode).toBe(200);
    expect(pending.json()).toEqual({ status: 'PROCESSING' });
    expect((await client.call('POST', '/auth/credentials', body, headers)).json()).toEqual({ status: 'PROCESSING' });
    // A fresh stamp for the same Request-Id is not the identical request (spec §4.3, PROCESSING rule 1).
    const restamped = { ...headers, 'service-wallet-signature': await stamp(key, challenge.payloadToSign) };
    expect(expectEnvelope(await client.call('POST', '/auth/credentials', body, restamped), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'REQUEST_ID_USED' });
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
    ctx.clock.advance(30_000);
    const settled = await client.call('POST', '/auth/credentials', body, headers);
    expect(settled.statusCode, settled.body).toBe(201);
    expect(settled.json()).toMatchObject({ type: 'SMS_OTP' });
    expect((await client.call('POST', '/auth/credentials', body, headers)).statusCode).toBe(201);
    expect((await credentials(wallet)).map((c) => c.type).sort()).toEqual(['EMAIL_OTP', 'SMS_OTP']);
  });

  it('keeps an export PROCESSING until settled, then returns the sealed secret only to the identical re-send', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const receiver = newClientKey();
    const path = `/internal-accounts/${wallet.accountId}/export`;
    const body = { clientPublicKey: receiver.publicKeyUncompressed };
    const challenge = await client.firstLeg('POST', path, body);
    const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': '10' };
    expect((await client.call('POST', path, body, headers)).json()).toEqual({ status: 'PROCESSING' });
    ctx.clock.advance(10_000);
    const settled = await client.call('POST', path, body, headers);
    expect(settled.statusCode).toBe(200);
    const { encryptedWalletCredentials } = settled.json() as { encryptedWalletCredentials: string };
    const mnemonic = await client.openExport(encryptedWalletCredentials, receiver, wallet.accountId);
    expect(validateMnemonic(mnemonic, wordlist)).toBe(true);
  });

  it('ignores the settle-delay header on production platforms and rejects a bad value on sandbox ones', async () => {
    const prod = new WalletClient(ctx, await ctx.newPlatform('production'));
    await prod.enableWallets();
    const wallet = await prod.newWallet();
    const bundle = await prod.challenge(wallet.credentialId, { 'sandbox-settle-delay': '30' });
    const code = messages.lastCode();
    const tek = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await prod.encryptOtp(bundle, code, tek) };
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const challenge = await prod.firstLeg('POST', path, body);
    const verified = await prod.signedRetry('POST', path, body, challenge, tek, { 'sandbox-settle-delay': '30' });
    expect(verified.statusCode).toBe(200);
    expect(verified.json()).toMatchObject({ type: 'EMAIL_OTP' });
    const sandbox = await client.newWallet();
    expectEnvelope(await client.call('POST', `/auth/credentials/${sandbox.credentialId}/challenge`, {}, { 'sandbox-settle-delay': 'soon' }), 400, 'INVALID_INPUT');
    expectEnvelope(await client.call('POST', `/auth/credentials/${sandbox.credentialId}/challenge`, {}, { 'sandbox-settle-delay': '3601' }), 400, 'INVALID_INPUT');
  });

  it('keeps an account’s last credential when the revocations of its two credentials settle at once', async () => {
    // Several rounds: on PostgreSQL the two settles overlap in most of them.
    for (let round = 0; round < 4; round++) {
      const { wallet, email, sms, smsId } = await walletWithTwoCredentials();
      const revocations = [];
      for (const [credentialId, signer] of [[wallet.credentialId, sms.key], [smsId, email.key]] as const) {
        const path = `/auth/credentials/${credentialId}`;
        const challenge = await client.firstLeg('DELETE', path);
        const headers = { 'service-wallet-signature': await stamp(signer, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': '30' };
        expect((await client.call('DELETE', path, undefined, headers)).json()).toEqual({ status: 'PROCESSING' });
        revocations.push({ path, headers });
      }
      ctx.clock.advance(30_000);
      const settled = await Promise.all(revocations.map(({ path, headers }) => client.call('DELETE', path, undefined, headers)));
      const [won, lost] = [...settled].sort((a, b) => a.statusCode - b.statusCode);
      expect(won!.statusCode).toBe(204);
      // The other waits for the first (both lock the account's credential set before they check
      // their signer: README, Lock order) and is refused: the first ended the session that signed it.
      expectEnvelope(lost!, 401, 'WALLET_SIGNATURE_INVALID');
      expect(await credentials(wallet)).toHaveLength(1);
    }
    // The settle jobs (the re-sends settled their requests already), so later tests find only their own due.
    while ((await ctx.jobs.runDue(50)) > 0);
  });

  it('refuses a refresh settled while its credential is being revoked, and opens no session', async () => {
    const { wallet, email } = await walletWithTwoCredentials();
    const path = `/auth/sessions/${email.session.id}/refresh`;
    const body = { clientPublicKey: newClientKey().publicKey };
    const challenge = await client.firstLeg('POST', path, body);
    const headers = { 'service-wallet-signature': await stamp(email.key, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': '30' };
    expect((await client.call('POST', path, body, headers)).json()).toEqual({ status: 'PROCESSING' });
    ctx.clock.advance(30_000);
    // The revocation's writes, committed while the re-send settles the refresh: on PostgreSQL it
    // reads the session still active, then waits on the credential's row lock.
    const credentialUuid = wallet.credentialId.split(':')[1]!;
    let settled: ReturnType<typeof client.call> | undefined;
    await ctx.handle.db.transaction().execute(async (trx) => {
      await trx.selectFrom('auth_credentials').select('id').where('id', '=', credentialUuid).forUpdate().execute();
      const now = ctx.clock.now();
      await trx.updateTable('auth_credentials').set({ revoked_at: now, updated_at: now }).where('id', '=', credentialUuid).execute();
      await trx.updateTable('auth_sessions').set({ revoked_at: now, updated_at: now }).where('credential_id', '=', credentialUuid).execute();
      settled = client.call('POST', path, body, headers);
      await new Promise((resolve) => setTimeout(resolve, 500));
    });
    // Either the settle's check of its signer (signed-retry.ts) read the session after the
    // revocation committed (401, as a signature by a revoked session), or it read it before and
    // the refresh then waited on the credential's row and found it revoked (404, as a refresh of
    // a revoked session).
    const refused = await settled!;
    if (refused.statusCode === 404) expectEnvelope(refused, 404, 'REFERENCE_NOT_FOUND');
    else expectEnvelope(refused, 401, 'WALLET_SIGNATURE_INVALID');
    expect((await sessions(wallet)).map((s) => s.type)).toEqual(['SMS_OTP']);
    await ctx.jobs.runDue(50);
  });

  it('settles abandoned operations in the background reconciler', async () => {
    const wallet = await client.newWallet();
    const { key, session } = await client.login(wallet.credentialId);
    const path = `/auth/sessions/${session.id}`;
    const challenge = await client.firstLeg('DELETE', path);
    const pending = await client.signedRetry('DELETE', path, undefined, challenge, key, { 'sandbox-settle-delay': '60' });
    expect(pending.json()).toEqual({ status: 'PROCESSING' });
    expect(await sessions(wallet)).toHaveLength(1);
    ctx.clock.advance(60_000);
    await ctx.jobs.runDue(50);
    expect(await sessions(wallet)).toEqual([]);
  });

  it('answers PROCESSING for a challenge until the delivery settles, without sending a second code', async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/challenge`;
    const pending = await client.call('POST', path, {}, { 'sandbox-settle-delay': '20' });
    expect(pending.json()).toEqual({ status: 'PROCESSING' });
    expect((await client.call('POST', path)).json()).toEqual({ status: 'PROCESSING' });
    ctx.clock.advance(20_000);
    const answered = await client.call('POST', path);
    expect(answered.statusCode).toBe(200);
    expect(answered.json()).toHaveProperty('otpEncryptionTargetBundle');
    const uuid = wallet.credentialId.split(':')[1]!;
    const issued = await ctx.handle.db.selectFrom('otp_challenges').select('id').where('credential_id', '=', uuid).execute();
    expect(issued).toHaveLength(1);
  });
});
