import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { coseKeyOf, noneAttestation, signedAssertion, SoftwareAuthenticator } from '../helpers/authenticator.js';
import { nextWholeSecond, TestIssuer } from '../helpers/oidc.js';
import { CapturingMessages, newClientKey, uniquePhoneNumber, WalletClient, type WalletFixture } from '../helpers/wallet.js';
import type { OutgoingMessage } from '../../src/platform/messages.js';

/** A production provider that fails while `down`. */
class FlakyMessages extends CapturingMessages {
  down = false;
  override async send(message: OutgoingMessage): Promise<void> {
    if (this.down) throw new Error('provider down');
    await super.send(message);
  }
}
const messages = new FlakyMessages();

/**
 * Wallet-auth rules the mutation audit found unheld (credentials, logins, sessions, OTPs,
 * contacts): each test fails when the rule it names is taken out of src/modules/wallet-auth.
 */
let ctx: TestContext;
let client: WalletClient;
let issuer: TestIssuer;
const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };

beforeAll(async () => {
  ctx = await createTestContext({ messages });
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
  // A platform-configured issuer; sandbox checks every claim but no signature, so its JWKS is never fetched.
  issuer = await TestIssuer.start();
  const configured = await client.call('PATCH', '/config', {
    embeddedWalletConfig: {
      appName: 'Acme',
      oidcIssuers: [{ issuer: issuer.issuer, jwksUri: 'https://jwks.rules-3.example/jwks' }],
      passkeyRpId: RP.rpId,
      passkeyOrigins: [RP.origin],
    },
  });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(async () => {
  await ctx.close();
  await issuer.close();
});

type Body = Record<string, unknown>;
const nowSeconds = () => Math.floor(ctx.clock.now().getTime() / 1000);
const nonceFor = (key: string) => createHash('sha256').update(key).digest('hex');

const credentials = async (w: WalletFixture, c = client) => ((await c.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Body[] }).data;

describe('OAUTH credentials', () => {
  it('takes the same subject of the same issuer under another audience as another identity (spec §2.4 rule 4)', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const add = async (aud: string) =>
      client.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: await issuer.token({ sub: 'rules-3-subject', aud }, { iat: nowSeconds() }) }, key);
    const web = await add('acme-web');
    expect(web.statusCode, web.body).toBe(201);
    const ios = await add('acme-ios');
    expect(ios.statusCode, ios.body).toBe(201);
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['EMAIL_OTP', 'OAUTH', 'OAUTH']);
    // The same (iss, aud, sub) again is refused at the first call.
    const token = await issuer.token({ sub: 'rules-3-subject', aud: 'acme-web' }, { iat: nowSeconds() });
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }), 400, 'INVALID_INPUT');
  });

  it('uses up the token an OAUTH credential is registered with: the same token then opens no session', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const receiver = newClientKey();
    const token = await issuer.token({ sub: 'rules-3-once', aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    const added = await client.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }, key);
    expect(added.statusCode, added.body).toBe(201);
    const credentialId = (added.json() as { id: string }).id;
    const replayed = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: token, clientPublicKey: receiver.publicKey });
    expect(expectEnvelope(replayed, 401, 'UNAUTHORIZED').details).toEqual({ check: 'replay' });
    // A fresh token of the identity does.
    const fresh = await issuer.token({ sub: 'rules-3-once', aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() - 1 });
    const verified = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: fresh, clientPublicKey: receiver.publicKey });
    expect(verified.statusCode, verified.body).toBe(200);
  });
});

describe('OIDC token times: 5 seconds of clock skew, no more', () => {
  it('takes iat and nbf 5 seconds ahead and refuses 6 (401 naming the check); takes exp 24 hours and 5 seconds ahead and refuses one second more', async () => {
    const wallet = await client.newWallet();
    let subjects = 0;
    const add = async (claims: Body, options: { iat: number; expiresIn?: number }) =>
      client.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: await issuer.token({ sub: `rules-3-skew-${++subjects}`, aud: 'acme-web', ...claims }, options) });
    const refused = async (claims: Body, options: { iat: number; expiresIn?: number }) => expectEnvelope(await add(claims, options), 401, 'UNAUTHORIZED').details;
    const now = nextWholeSecond(ctx.clock);
    expect((await add({}, { iat: now + 5 })).statusCode).toBe(202);
    expect(await refused({}, { iat: now + 6 })).toEqual({ check: 'iat' });
    expect((await add({ nbf: now + 5 }, { iat: now })).statusCode).toBe(202);
    expect(await refused({ nbf: now + 6 }, { iat: now })).toEqual({ check: 'nbf' });
    expect((await add({}, { iat: now, expiresIn: 24 * 3600 + 5 })).statusCode).toBe(202);
    expect(await refused({}, { iat: now, expiresIn: 24 * 3600 + 6 })).toEqual({ check: 'exp' });
  });
});

describe('PASSKEY logins', () => {
  it('opens a session each time for an authenticator without a signature counter (always 0)', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const authenticator = new SoftwareAuthenticator();
    const challenge = Buffer.from('rules-3-registration').toString('base64url');
    const added = await client.signed('POST', '/auth/credentials', { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'No counter', challenge, attestation: authenticator.create({ ...RP, challenge }) }, key);
    expect(added.statusCode, added.body).toBe(201);
    const credentialId = (added.json() as { id: string }).id;
    for (let login = 0; login < 2; login++) {
      const issued = await client.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: newClientKey().publicKey });
      expect(issued.statusCode, issued.body).toBe(200);
      const { challenge: sessionChallenge, requestId } = issued.json() as { challenge: string; requestId: string };
      const assertion = authenticator.get({ ...RP, challenge: Buffer.from(sessionChallenge, 'utf8'), counter: 0 });
      const verified = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': requestId });
      expect(verified.statusCode, verified.body).toBe(200);
      expect(verified.json()).toMatchObject({ type: 'PASSKEY', encryptedSessionSigningKey: expect.any(String) });
    }
  });

  /** A passkey added by signed retry to a new wallet; `issue` asks for a login challenge, `verify` answers one. */
  async function passkeyOf(attestation: (challenge: string) => unknown) {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const challenge = randomBytes(16).toString('base64url');
    const added = await client.signed('POST', '/auth/credentials', { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation: attestation(challenge) }, key);
    expect(added.statusCode, added.body).toBe(201);
    const credentialId = (added.json() as { id: string }).id;
    const issue = async () => (await client.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: newClientKey().publicKey })).json() as { challenge: string; requestId: string };
    const verify = (assertion: unknown, requestId: string, headers: Record<string, string> = {}) =>
      client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': requestId, ...headers });
    return { issue, verify };
  }

  it('refuses an assertion of counter 0 that settles after one of a higher counter (401 counter): a counter once used cannot fall back to none', async () => {
    const authenticator = new SoftwareAuthenticator();
    const { issue, verify } = await passkeyOf((challenge) => authenticator.create({ ...RP, challenge }));
    const [first, second] = [await issue(), await issue()];
    // Both are checked against the stored counter 0 when claimed; the one of counter 5 settles first.
    const none = authenticator.get({ ...RP, challenge: Buffer.from(first.challenge, 'utf8'), counter: 0 });
    const five = authenticator.get({ ...RP, challenge: Buffer.from(second.challenge, 'utf8'), counter: 5 });
    expect((await verify(none, first.requestId, { 'sandbox-settle-delay': '60' })).json()).toEqual({ status: 'PROCESSING' });
    const counted = await verify(five, second.requestId);
    expect(counted.statusCode, counted.body).toBe(200);
    ctx.clock.advance(60_000);
    expect(expectEnvelope(await verify(none, first.requestId), 401, 'UNAUTHORIZED').details).toEqual({ check: 'counter' });
  });

  it('refuses an assertion from a create ceremony (401), and takes the get ceremony of the same challenge', async () => {
    const authenticator = new SoftwareAuthenticator();
    const { issue, verify } = await passkeyOf((challenge) => authenticator.create({ ...RP, challenge }));
    const issued = await issue();
    const bytes = Buffer.from(issued.challenge, 'utf8');
    expectEnvelope(await verify(authenticator.get({ ...RP, challenge: bytes, type: 'webauthn.create' }), issued.requestId), 401, 'UNAUTHORIZED');
    expect((await verify(authenticator.get({ ...RP, challenge: bytes }), issued.requestId)).statusCode).toBe(200);
  });

  it('refuses a registration from a get ceremony: 400 naming attestation', async () => {
    const wallet = await client.newWallet();
    const challenge = randomBytes(16).toString('base64url');
    const attestation = new SoftwareAuthenticator().create({ ...RP, challenge, type: 'webauthn.get' });
    const refused = expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'attestation' }] });
  });

  it('opens a session for an assertion with user presence but no user verification (README: presence is required, verification is not)', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const credentialId = randomBytes(32);
    const { issue, verify } = await passkeyOf((challenge) => noneAttestation({ ...RP, challenge }, coseKeyOf(publicKey), { credentialId }));
    const issued = await issue();
    const assertion = signedAssertion(privateKey, { ...RP, challenge: Buffer.from(issued.challenge, 'utf8'), credentialId, counter: 1, flags: 0x01 });
    const verified = await verify(assertion, issued.requestId);
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json()).toMatchObject({ type: 'PASSKEY', encryptedSessionSigningKey: expect.any(String) });
  });
});

describe('PASSKEY registration: the key the attestation carries', () => {
  /** An RSA COSE_Key: `n` a random odd modulus of `bytes` bytes, top bit set (import checks no primes). */
  const rsa = (bytes: number, changes: { alg?: number; e?: Buffer; n?: (n: Buffer) => Buffer } = {}) => {
    const n = randomBytes(bytes);
    n[0]! |= 0x80;
    n[bytes - 1]! |= 1;
    return new Map<number, unknown>([[1, 3], [3, changes.alg ?? -257], [-1, changes.n ? changes.n(n) : n], [-2, changes.e ?? Buffer.from([1, 0, 1])]]);
  };
  /** The same 64 bytes of x ‖ y, cut one byte early. */
  const splitPoint = (coseKey: Map<number, unknown>) => {
    const xy = Buffer.concat([coseKey.get(-2) as Buffer, coseKey.get(-3) as Buffer]);
    return coseKey.set(-2, xy.subarray(0, 31)).set(-3, xy.subarray(31));
  };
  const register = async (coseKey: Map<number, unknown>) => {
    const wallet = await client.newWallet();
    const challenge = randomBytes(16).toString('base64url');
    return client.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation: noneAttestation({ ...RP, challenge }, coseKey) });
  };

  it('takes RS256 moduli of 2048 to 4096 bits, odd, exponent 65537; refuses any other RSA key, an OKP key off Ed25519, an EC2 key of another algorithm and a key type of none of them (400 publicKey)', async () => {
    for (const [name, coseKey] of [
      ['2048 bits', rsa(256)],
      ['4096 bits', rsa(512)],
    ] as const) {
      expect((await register(coseKey)).statusCode, name).toBe(202);
    }
    const ed25519 = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }) as { x: string };
    const refusals: Array<[string, Map<number, unknown>]> = [
      ['2040 bits', rsa(255)],
      ['4104 bits', rsa(513)],
      ['an even modulus', rsa(256, { n: (n) => Buffer.from(n).fill(n[255]! & 0xfe, 255) })],
      ['a 2048-bit modulus behind a zero byte', rsa(257, { n: (n) => Buffer.concat([Buffer.alloc(1), n.subarray(1)]) })],
      ['exponent 3', rsa(256, { e: Buffer.from([3]) })],
      ['an RSA key labelled EdDSA', rsa(256, { alg: -8 })],
      ['EdDSA labelled X25519 (crv 4)', new Map<number, unknown>([[1, 1], [3, -8], [-1, 4], [-2, Buffer.from(ed25519.x, 'base64url')]])],
      ['key type 4 (symmetric)', new Map<number, unknown>([[1, 4], [3, -7], [-1, randomBytes(32)]])],
      ['a P-256 key labelled RS256', coseKeyOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey).set(3, -257)],
      ['a P-256 point split into a 31-byte x and a 33-byte y', splitPoint(coseKeyOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey))],
    ];
    for (const [name, coseKey] of refusals) {
      const refused = expectEnvelope(await register(coseKey), 400, 'INVALID_INPUT');
      expect(refused.details, name).toMatchObject({ check: 'publicKey', errors: [{ field: 'attestation' }] });
    }
  });
});

describe('signed retries of another wallet', () => {
  it("are refused when signed by a session of another account of the platform: 401 WALLET_SIGNATURE_INVALID, the session not revoked", async () => {
    const [mine, theirs] = [await client.newWallet(), await client.newWallet()];
    const { key: myKey } = await client.login(mine.credentialId);
    const { session } = await client.login(theirs.credentialId);
    const path = `/auth/sessions/${session.id}`;
    const refused = await client.signed('DELETE', path, undefined, myKey);
    expectEnvelope(refused, 401, 'WALLET_SIGNATURE_INVALID');
    const listed = (await client.call('GET', `/auth/sessions?accountId=${theirs.accountId}`)).json() as { data: Body[] };
    expect(listed.data.map((s) => s.id)).toContain(session.id);
  });
});

describe('verify bodies of another credential type', () => {
  it('answers a PASSKEY assertion sent to an EMAIL_OTP credential 400 naming type, before any Request-Id is looked at', async () => {
    const wallet = await client.newWallet();
    const assertion = new SoftwareAuthenticator().get({ ...RP, challenge: Buffer.from('no challenge') });
    const refused = expectEnvelope(await client.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': `Request:${randomUUID()}` }), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [{ field: 'type', constraint: { enum: ['EMAIL_OTP'] }, message: expect.any(String) }] });
  });
});

describe('an issuer stored without jwksUri before PATCH /config required one', () => {
  it('is not trusted: an OAUTH add of its token is 400 naming oidcToken, and nothing is issued', async () => {
    const legacy = new WalletClient(ctx, await ctx.newPlatform());
    await legacy.enableWallets();
    const iss = 'https://legacy-idp.rules-3.example';
    const configured = await legacy.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: iss, jwksUri: `${iss}/jwks` }] } });
    expect(configured.statusCode, configured.body).toBe(200);
    await sql`update platform_configs set embedded_wallet_config = embedded_wallet_config #- '{oidcIssuers,0,jwksUri}' where platform_id = ${legacy.platform.uuid}`.execute(ctx.handle.db);
    const wallet = await legacy.newWallet();
    const token = await issuer.token({ iss, sub: 'legacy-subject', aud: 'acme-web' }, { iat: nowSeconds() });
    const refused = expectEnvelope(await legacy.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [{ field: 'oidcToken', message: 'issuer is not trusted' }] });
  });
});

describe('OTP contacts', () => {
  it('lets a wallet of another platform carry a phone an SMS_OTP credential of this platform carries', async () => {
    const phoneNumber = uniquePhoneNumber();
    const other = new WalletClient(ctx, await ctx.newPlatform());
    await other.enableWallets();
    for (const c of [client, other]) {
      const wallet = await c.newWallet({ phoneNumber });
      const { key } = await c.login(wallet.credentialId);
      const added = await c.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, key);
      expect(added.statusCode, added.body).toBe(201);
      expect((await credentials(wallet, c)).map((x) => [x.type, x.nickname])).toEqual([
        ['EMAIL_OTP', wallet.email],
        ['SMS_OTP', phoneNumber],
      ]);
    }
  });

  it('changes only the case of a customer e-mail with a signed retry: the customer’s own credential is no other wallet’s', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const path = `/customers/${wallet.customerId}`;
    const body = { customerType: 'INDIVIDUAL', email: wallet.email.toUpperCase() };
    const changed = await client.signed('PATCH', path, body, key);
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await credentials(wallet))[0]).toMatchObject({ type: 'EMAIL_OTP', nickname: wallet.email.toUpperCase() });
  });
});

describe('wallets of a deleted customer', () => {
  it('are not found: no credential listed or added, no export started', async () => {
    const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
    await client.login(wallet.credentialId);
    const deleted = await client.call('DELETE', `/customers/${wallet.customerId}`);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(await credentials(wallet)).toEqual([]);
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await client.call('POST', `/internal-accounts/${wallet.accountId}/export`, { clientPublicKey: newClientKey().publicKeyUncompressed }), 404, 'REFERENCE_NOT_FOUND');
  });
});

describe('one-time codes', () => {
  it('answers a verify OTP_NOT_DELIVERED while the latest code is still being delivered, even with an older code’s bundle', async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/challenge`;
    const older = await client.challenge(wallet.credentialId);
    const pending = await client.call('POST', path, {}, { 'sandbox-settle-delay': '30' });
    expect(pending.json()).toEqual({ status: 'PROCESSING' });
    const verify = (bundle: string) => client.encryptOtp(bundle, '000000', newClientKey()).then((encryptedOtpBundle) => client.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle }));
    expect(expectEnvelope(await verify(older), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'OTP_NOT_DELIVERED' });
    ctx.clock.advance(30_000);
    const delivered = await client.challenge(wallet.credentialId);
    expect((await verify(delivered)).statusCode).toBe(202);
  });

  it('counts wrong codes in a row only: a right code starts the count again', async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const wrong = async (bundle: string) => client.call('POST', path, { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '123456', newClientKey()) });
    const first = await client.challenge(wallet.credentialId);
    for (let attempt = 1; attempt <= 4; attempt++) expect(expectEnvelope(await wrong(first), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'OTP_INVALID', attemptsRemaining: 5 - attempt });
    // The fifth answer is the right code: a session, and the four before are forgotten.
    const right = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(first, '000000', newClientKey()) };
    expect((await client.call('POST', path, right)).statusCode).toBe(202);
    const next = await client.challenge(wallet.credentialId);
    expect(expectEnvelope(await wrong(next), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'OTP_INVALID', attemptsRemaining: 4 });
  });

  it('voids the code five wrong answers were given for: still valid for an hour, it opens nothing after the pause', async () => {
    const long = new WalletClient(ctx, await ctx.newPlatform());
    await long.enableWallets();
    expect((await long.call('PATCH', '/config', { embeddedWalletConfig: { expirationSeconds: 3600 } })).statusCode).toBe(200);
    const wallet = await long.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const bundle = await long.challenge(wallet.credentialId);
    const answer = async (code: string) => long.call('POST', path, { type: 'EMAIL_OTP', encryptedOtpBundle: await long.encryptOtp(bundle, code, newClientKey()) });
    for (let attempt = 1; attempt <= 4; attempt++) expectEnvelope(await answer('123456'), 401, 'UNAUTHORIZED');
    expectEnvelope(await answer('123456'), 429, 'RATE_LIMITED');
    ctx.clock.advance(15 * 60_000);
    expect(expectEnvelope(await answer('000000'), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'OTP_NOT_ISSUED' });
    expect((await long.login(wallet.credentialId)).session.type).toBe('EMAIL_OTP');
  });

  it('issues a new code for a challenge whose pending code expired before it was ever answered', async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/challenge`;
    const pending = await client.call('POST', path, {}, { 'sandbox-settle-delay': '30' });
    expect(pending.json()).toEqual({ status: 'PROCESSING' });
    // Never asked for again until the code's 300 seconds are over: at the 300th, it is expired.
    ctx.clock.advance(300_000);
    const bundle = await client.challenge(wallet.credentialId);
    const encryptedOtpBundle = await client.encryptOtp(bundle, '000000', newClientKey());
    const verified = await client.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle });
    expect(verified.statusCode, verified.body).toBe(202);
  });

  it('keeps a code 300 seconds when the platform sets no expirationSeconds: verify at the 300th second is OTP_EXPIRED', async () => {
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '000000', newClientKey()) };
    ctx.clock.advance(300_000);
    expect(expectEnvelope(await client.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, body), 401, 'UNAUTHORIZED').details).toEqual({ reason: 'OTP_EXPIRED' });
  });

  it('adds an OTP credential whose first code cannot be sent with a 201 without otpEncryptionTargetBundle; challenge then sends one', async () => {
    const prod = new WalletClient(ctx, await ctx.newPlatform('production'));
    await prod.enableWallets();
    const wallet = await prod.newWallet({ phoneNumber: uniquePhoneNumber() });
    const { key } = await prod.login(wallet.credentialId, () => messages.lastCode());
    const challenge = await prod.firstLeg('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId });
    messages.down = true;
    let added;
    try {
      added = await prod.signedRetry('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, challenge, key);
    } finally {
      messages.down = false;
    }
    expect(added.statusCode, added.body).toBe(201);
    const body = added.json() as Body;
    expect(body).toMatchObject({ type: 'SMS_OTP', accountId: wallet.accountId });
    expect(body).not.toHaveProperty('otpEncryptionTargetBundle');
    const sms = await prod.login(String(body.id), () => messages.lastCode(), 'SMS_OTP');
    expect(sms.session.id).toMatch(/^Session:/);
  });
});
