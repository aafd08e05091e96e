import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, stamp, uniquePhoneNumber, WalletClient, type ClientKey, type WalletFixture } from '../helpers/wallet.js';

/**
 * Logic-level red team of embedded-wallet authentication (spec §2.4, §4.2–§4.5): an end user
 * holding a session of wallet A, a platform token holder, and an outsider attack the flows
 * (signing for another wallet, replaying signed retries, lockout, OTP codes, sessions).
 */
let ctx: TestContext;
let client: WalletClient;
let otherPlatform: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
  otherPlatform = new WalletClient(ctx, await ctx.newPlatform());
  await otherPlatform.enableWallets();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const credentials = async (w: WalletFixture, via = client) => ((await via.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Body[] }).data;
const sessions = async (w: WalletFixture, via = client) => ((await via.call('GET', `/auth/sessions?accountId=${w.accountId}`)).json() as { data: Body[] }).data;

/** Wallet A with an open EMAIL_OTP session, and wallet B (same platform) with one. */
async function twoWallets() {
  const a = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
  const b = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
  const aLogin = await client.login(a.credentialId);
  const bLogin = await client.login(b.credentialId);
  return { a, b, aKey: aLogin.key, aSession: aLogin.session, bKey: bLogin.key, bSession: bLogin.session };
}

describe('a session of wallet A signing for wallet B', () => {
  it('cannot add, revoke, end or refresh sessions, export, or change privacy of B: 401 WALLET_SIGNATURE_INVALID, nothing changes', async () => {
    const { b, aKey, bSession } = await twoWallets();
    const attempts: Array<[('POST' | 'DELETE' | 'PATCH'), string, unknown]> = [
      ['POST', '/auth/credentials', { type: 'SMS_OTP', accountId: b.accountId }],
      ['DELETE', `/auth/sessions/${bSession.id}`, undefined],
      ['POST', `/auth/sessions/${bSession.id}/refresh`, { clientPublicKey: newClientKey().publicKey }],
      ['POST', `/internal-accounts/${b.accountId}/export`, { clientPublicKey: newClientKey().publicKeyUncompressed }],
      ['PATCH', `/internal-accounts/${b.accountId}`, { privateEnabled: true }],
      ['PATCH', `/customers/${b.customerId}`, { customerType: 'INDIVIDUAL', email: `moved-${b.email}` }],
    ];
    for (const [method, path, body] of attempts) {
      expectEnvelope(await client.signed(method, path, body, aKey), 401, 'WALLET_SIGNATURE_INVALID');
    }
    expect((await credentials(b)).map((c) => [c.type, c.nickname])).toEqual([['EMAIL_OTP', b.email]]);
    expect((await sessions(b)).map((s) => s.id)).toEqual([bSession.id]);
  });

  it('cannot revoke B’s credential either, even when B has two', async () => {
    const { b, aKey, bKey } = await twoWallets();
    const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: b.accountId }, bKey);
    expect(added.statusCode, added.body).toBe(201);
    expectEnvelope(await client.signed('DELETE', `/auth/credentials/${b.credentialId}`, undefined, aKey), 401, 'WALLET_SIGNATURE_INVALID');
    expect(await credentials(b)).toHaveLength(2);
  });

  it('cannot redirect A’s own add challenge to B: a retry whose body names B is a body mismatch', async () => {
    const { a, b, aKey } = await twoWallets();
    const challenge = await client.firstLeg('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: a.accountId });
    expectEnvelope(await client.signedRetry('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: b.accountId }, challenge, aKey), 401, 'WALLET_SIGNATURE_BODY_MISMATCH');
    expect(await credentials(b)).toHaveLength(1);
  });

  it('cannot sign for a wallet of another platform, whose ids are unknown there (404 or an empty list)', async () => {
    const { aKey } = await twoWallets();
    const foreign = await otherPlatform.newWallet();
    const foreignLogin = await otherPlatform.login(foreign.credentialId);
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: foreign.accountId }), 404, 'REFERENCE_NOT_FOUND');
    expect((await client.call('DELETE', `/auth/sessions/${foreignLogin.session.id}`)).statusCode).toBe(404);
    expect((await client.call('POST', `/auth/credentials/${foreign.credentialId}/challenge`, {})).statusCode).toBe(404);
    expect((await client.call('POST', `/internal-accounts/${foreign.accountId}/export`, { clientPublicKey: aKey.publicKeyUncompressed })).statusCode).toBe(404);
    expect(await credentials(foreign, client)).toEqual([]);
    expect(await sessions(foreign, client)).toEqual([]);
  });
});

describe('replaying a signed retry', () => {
  it('on another endpoint, or of another platform: 401 REQUEST_ID_UNKNOWN', async () => {
    const { a, aKey, aSession } = await twoWallets();
    const challenge = await client.firstLeg('DELETE', `/auth/sessions/${aSession.id}`);
    const headers = { 'service-wallet-signature': await stamp(aKey, challenge.payloadToSign), 'request-id': challenge.requestId };
    const elsewhere = await client.call('POST', `/auth/sessions/${aSession.id}/refresh`, { clientPublicKey: newClientKey().publicKey }, headers);
    expectEnvelope(elsewhere, 401, 'UNAUTHORIZED');
    expect((elsewhere.json() as { details: Body }).details.reason).toBe('REQUEST_ID_UNKNOWN');
    expectEnvelope(await client.call('DELETE', `/auth/credentials/${a.credentialId}`, undefined, headers), 401, 'UNAUTHORIZED');
    expectEnvelope(await otherPlatform.call('DELETE', `/auth/sessions/${aSession.id}`, undefined, headers), 401, 'UNAUTHORIZED');
    // Unused by those: the genuine retry still works.
    expect((await client.call('DELETE', `/auth/sessions/${aSession.id}`, undefined, headers)).statusCode).toBe(204);
  });

  it('twice: the identical re-send answers the stored outcome, a fresh stamp is REQUEST_ID_USED', async () => {
    const { a, aKey } = await twoWallets();
    const body = { type: 'SMS_OTP', accountId: a.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    const headers = { 'service-wallet-signature': await stamp(aKey, challenge.payloadToSign), 'request-id': challenge.requestId };
    const first = await client.call('POST', '/auth/credentials', body, headers);
    expect(first.statusCode, first.body).toBe(201);
    const again = await client.call('POST', '/auth/credentials', body, headers);
    expect(again.statusCode).toBe(first.statusCode);
    expect(again.body).toBe(first.body);
    const restamped = await client.signedRetry('POST', '/auth/credentials', body, challenge, aKey);
    expectEnvelope(restamped, 401, 'UNAUTHORIZED');
    expect((restamped.json() as { details: Body }).details.reason).toBe('REQUEST_ID_USED');
    expect((await credentials(a)).map((c) => c.type).sort()).toEqual(['EMAIL_OTP', 'SMS_OTP']);
  });

  it('signed by a session revoked or expired before the retry: 401 WALLET_SIGNATURE_INVALID', async () => {
    const { a, aKey, aSession } = await twoWallets();
    const privacy = await client.firstLeg('PATCH', `/internal-accounts/${a.accountId}`, { privateEnabled: true });
    expect((await client.signed('DELETE', `/auth/sessions/${aSession.id}`, undefined, aKey)).statusCode).toBe(204);
    expectEnvelope(await client.signedRetry('PATCH', `/internal-accounts/${a.accountId}`, { privateEnabled: true }, privacy, aKey), 401, 'WALLET_SIGNATURE_INVALID');

    const late = await client.login(a.credentialId);
    const challenge = await client.firstLeg('PATCH', `/internal-accounts/${a.accountId}`, { privateEnabled: true });
    ctx.clock.advance(15 * 60_000);
    // Past both the session's 15 minutes and the challenge's 5.
    expectEnvelope(await client.signedRetry('PATCH', `/internal-accounts/${a.accountId}`, { privateEnabled: true }, challenge, late.key), 401, 'UNAUTHORIZED');
    expect((await client.call('POST', `/auth/sessions/${late.session.id}/refresh`, { clientPublicKey: newClientKey().publicKey })).statusCode).toBe(404);
  });

  it('refresh: the new session signs; a revoked session cannot be refreshed (404)', async () => {
    const { a, aKey, aSession } = await twoWallets();
    const fresh = newClientKey();
    const refreshed = await client.signed('POST', `/auth/sessions/${aSession.id}/refresh`, { clientPublicKey: fresh.publicKey }, aKey);
    expect(refreshed.statusCode, refreshed.body).toBe(201);
    const freshId = (refreshed.json() as { id: string }).id;
    expect((await client.signed('DELETE', `/auth/sessions/${aSession.id}`, undefined, fresh)).statusCode).toBe(204);
    expect((await client.call('POST', `/auth/sessions/${aSession.id}/refresh`, { clientPublicKey: newClientKey().publicKey })).statusCode).toBe(404);
    expect((await sessions(a)).map((s) => s.id)).toEqual([freshId]);
  });
});

describe('an outsider with nothing', () => {
  it('cannot redeem a signed retry without the platform’s API credentials, even holding the stamp (401 UNAUTHORIZED), and the request stays redeemable', async () => {
    const { a, aKey } = await twoWallets();
    const body = { privateEnabled: true };
    const challenge = await client.firstLeg('PATCH', `/internal-accounts/${a.accountId}`, body);
    const headers = { 'service-wallet-signature': await stamp(aKey, challenge.payloadToSign), 'request-id': challenge.requestId };
    const outsider = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/internal-accounts/${a.accountId}`, headers, payload: body });
    expectEnvelope(outsider, 401, 'UNAUTHORIZED');
    expect((await client.call('PATCH', `/internal-accounts/${a.accountId}`, body, headers)).statusCode).toBe(200);
  });
});

describe('revoking credentials', () => {
  it('the last credential cannot go (400), and a credential cannot authorise its own revocation (401)', async () => {
    const a = await client.newWallet();
    const last = await client.call('DELETE', `/auth/credentials/${a.credentialId}`);
    expectEnvelope(last, 400, 'INVALID_INPUT');
    expect((last.json() as { details: Body }).details.reason).toBe('LAST_CREDENTIAL');
    const phone = uniquePhoneNumber();
    const withPhone = await client.newWallet({ phoneNumber: phone });
    const login = await client.login(withPhone.credentialId);
    const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: withPhone.accountId }, login.key);
    expect(added.statusCode, added.body).toBe(201);
    expectEnvelope(await client.signed('DELETE', `/auth/credentials/${withPhone.credentialId}`, undefined, login.key), 401, 'WALLET_SIGNATURE_INVALID');
    expect(await credentials(withPhone)).toHaveLength(2);
  });
});

describe('one-time codes', () => {
  async function otpBody(credentialId: string, code: string, key: ClientKey, bundle?: string) {
    return { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle ?? (await client.challenge(credentialId)), code, key) };
  }

  it('a bundle made for A’s code does not open at B’s verify, nor after a newer challenge, and a code verifies once', async () => {
    const a = await client.newWallet();
    const b = await client.newWallet();
    const key = newClientKey();
    const forA = await otpBody(a.credentialId, '000000', key);
    await client.challenge(b.credentialId);
    const atB = await client.call('POST', `/auth/credentials/${b.credentialId}/verify`, forA);
    expectEnvelope(atB, 401, 'UNAUTHORIZED');
    expect((atB.json() as { details: Body }).details.reason).toBe('OTP_BUNDLE_INVALID');

    const stale = await otpBody(a.credentialId, '000000', key);
    await client.challenge(a.credentialId);
    const superseded = await client.call('POST', `/auth/credentials/${a.credentialId}/verify`, stale);
    expect((superseded.json() as { details: Body }).details.reason).toBe('OTP_BUNDLE_INVALID');

    const once = await otpBody(a.credentialId, '000000', key);
    expect((await client.call('POST', `/auth/credentials/${a.credentialId}/verify`, once)).statusCode).toBe(202);
    const twice = await client.call('POST', `/auth/credentials/${a.credentialId}/verify`, once);
    expectEnvelope(twice, 401, 'UNAUTHORIZED');
    expect((twice.json() as { details: Body }).details.reason).toBe('OTP_NOT_ISSUED');
  });

  it('a code expires on the shared clock: verify after its 300 seconds is 401 OTP_EXPIRED', async () => {
    const a = await client.newWallet();
    const body = await otpBody(a.credentialId, '000000', newClientKey());
    ctx.clock.advance(300_000);
    const expired = await client.call('POST', `/auth/credentials/${a.credentialId}/verify`, body);
    expectEnvelope(expired, 401, 'UNAUTHORIZED');
    expect((expired.json() as { details: Body }).details.reason).toBe('OTP_EXPIRED');
  });

  it('the verify retry must be signed by the key inside the bundle, not by a session of the wallet', async () => {
    const { a, aKey } = await twoWallets();
    const body = await otpBody(a.credentialId, '000000', newClientKey());
    const path = `/auth/credentials/${a.credentialId}/verify`;
    const challenge = await client.firstLeg('POST', path, body);
    expectEnvelope(await client.signedRetry('POST', path, body, challenge, aKey), 401, 'WALLET_SIGNATURE_INVALID');
  });

  it('guessing is paused after five wrong codes, across fresh challenges too (429)', async () => {
    const a = await client.newWallet();
    for (let i = 0; i < 4; i++) {
      const wrong = await client.call('POST', `/auth/credentials/${a.credentialId}/verify`, await otpBody(a.credentialId, '123456', newClientKey()));
      expectEnvelope(wrong, 401, 'UNAUTHORIZED');
    }
    expectEnvelope(await client.call('POST', `/auth/credentials/${a.credentialId}/verify`, await otpBody(a.credentialId, '123456', newClientKey())), 429, 'RATE_LIMITED');
    expectEnvelope(await client.call('POST', `/auth/credentials/${a.credentialId}/challenge`, {}), 429, 'RATE_LIMITED');
  });
});

describe('an OTP target key is sealed to its challenge and credential', () => {
  const latestChallenge = (credentialId: string) =>
    ctx.handle.db.selectFrom('otp_challenges').selectAll().where('credential_id', '=', parseId('AuthMethod', credentialId)!).orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirstOrThrow();

  it('does not open when copied into another challenge row (A’s target key put in B’s latest challenge)', async () => {
    const a = await client.newWallet();
    const b = await client.newWallet();
    const aBundle = await client.challenge(a.credentialId);
    await client.challenge(b.credentialId);
    const fromA = await latestChallenge(a.credentialId);
    await ctx.handle.db.updateTable('otp_challenges').set({ sealed_target_key: fromA.sealed_target_key }).where('id', '=', (await latestChallenge(b.credentialId)).id).execute();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(aBundle, '000000', newClientKey()) };
    const refused = await client.call('POST', `/auth/credentials/${b.credentialId}/verify`, body);
    expectEnvelope(refused, 401, 'UNAUTHORIZED');
    expect((refused.json() as { details: Body }).details.reason).toBe('OTP_NOT_ISSUED');
  });

  it('does not open when its row is moved to another credential', async () => {
    const a = await client.newWallet();
    const b = await client.newWallet();
    const aBundle = await client.challenge(a.credentialId);
    await ctx.handle.db.updateTable('otp_challenges').set({ credential_id: parseId('AuthMethod', b.credentialId)! }).where('id', '=', (await latestChallenge(a.credentialId)).id).execute();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(aBundle, '000000', newClientKey()) };
    const refused = await client.call('POST', `/auth/credentials/${b.credentialId}/verify`, body);
    expectEnvelope(refused, 401, 'UNAUTHORIZED');
    expect((refused.json() as { details: Body }).details.reason).toBe('OTP_NOT_ISSUED');
  });
});

describe('clocks', () => {
  it('a sandbox platform’s test clock moves neither session nor challenge expiry (both on the shared clock)', async () => {
    const { a, aKey } = await twoWallets();
    const challenge = await client.firstLeg('PATCH', `/internal-accounts/${a.accountId}`, { privateEnabled: true });
    const moved = await client.call('POST', '/sandbox/clock/advance', { seconds: 86_400 });
    expect(moved.statusCode, moved.body).toBe(200);
    const retried = await client.signedRetry('PATCH', `/internal-accounts/${a.accountId}`, { privateEnabled: true }, challenge, aKey);
    expect(retried.statusCode, retried.body).toBe(200);
  });
});
