import { generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../../src/modules/wallet-auth/oidc.js';
import { SoftwareAuthenticator } from '../helpers/authenticator.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { TestIssuer } from '../helpers/oidc.js';
import { CapturingMessages, newClientKey, openSessionKey, WalletClient } from '../helpers/wallet.js';
import { createHash } from 'node:crypto';

let ctx: TestContext;
let issuer: TestIssuer;
let otherIssuer: TestIssuer;
let prod: WalletClient;
let sandbox: WalletClient;
const messages = new CapturingMessages();
const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };

/**
 * Production JWKS locations are https on public hosts (fetched through the address guard), so
 * each issuer's is named by a public-looking https URL that this fetch serves from the local
 * test issuer instead: no test reaches the network.
 */
const hosted = new Map<string, TestIssuer>();
function hostedJwks(from: TestIssuer): string {
  const host = `jwks-${hosted.size + 1}.idp.example`;
  hosted.set(host, from);
  return `https://${host}/jwks`;
}
const platformJwksFetch = async (url: string, init: { signal?: AbortSignal | null }) => {
  const from = hosted.get(new URL(url).host);
  if (!from) throw new Error(`no test JWKS at ${url}`);
  return fetch(from.jwksUri, { signal: init.signal ?? null });
};

beforeAll(async () => {
  // No cool-down between JWKS refetches, so a rotation is followed at once.
  ctx = await createTestContext({ messages, oidc: new OidcVerifier({ cooldownMs: 0, cacheMaxAgeMs: 600_000, timeoutMs: 5_000, platformJwksFetch }) });
  issuer = await TestIssuer.start();
  otherIssuer = await TestIssuer.start();
  const walletConfig = {
    appName: 'Acme',
    oidcIssuers: [
      { issuer: issuer.issuer, jwksUri: hostedJwks(issuer) },
      { issuer: otherIssuer.issuer, jwksUri: hostedJwks(otherIssuer) },
    ],
    passkeyRpId: RP.rpId,
    passkeyOrigins: [RP.origin],
  };
  prod = new WalletClient(ctx, await ctx.newPlatform('production'));
  sandbox = new WalletClient(ctx, ctx.platform);
  for (const client of [prod, sandbox]) {
    await client.enableWallets();
    const configured = await client.call('PATCH', '/config', { embeddedWalletConfig: walletConfig });
    expect(configured.statusCode, configured.body).toBe(200);
  }
});
afterAll(async () => {
  await ctx.close();
  await issuer.close();
  await otherIssuer.close();
});

type Body = Record<string, unknown>;
const nowSeconds = () => Math.floor(ctx.clock.now().getTime() / 1000);
const nonceFor = (key: string) => createHash('sha256').update(key).digest('hex');


let subjects = 0;
/** A wallet whose end user logged in with its EMAIL_OTP and then added an OAUTH credential (spec §4.2: signed retry). */
async function oauthWallet(client = prod, from = issuer) {
  const wallet = await client.newWallet();
  const { key } = await client.login(wallet.credentialId, client === prod ? () => messages.lastCode() : '000000');
  const sub = `subject-${++subjects}`;
  const token = await from.token({ sub, aud: 'acme-web', email: `${sub}@mail.example` }, { iat: nowSeconds() });
  const added = await client.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }, key);
  expect(added.statusCode, added.body).toBe(201);
  return { wallet, sub, key, credential: added.json() as Body & { id: string } };
}

async function oauthVerify(client: WalletClient, credentialId: string, token: string, receiver = newClientKey(), key = receiver.publicKey) {
  return client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: token, clientPublicKey: key });
}

describe('configuration', () => {
  it('takes JWKS only over https (http for localhost) and passkey origins only as bare origins', async () => {
    const rejected = expectEnvelope(
      await sandbox.call('PATCH', '/config', {
        embeddedWalletConfig: {
          oidcIssuers: [{ issuer: 'https://id.example.com', jwksUri: 'http://id.example.com/jwks' }],
          passkeyOrigins: ['https://wallet.example.com/app'],
        },
      }),
      400,
      'INVALID_INPUT',
    );
    expect((rejected.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual([
      'embeddedWalletConfig.oidcIssuers.0.jwksUri',
      'embeddedWalletConfig.passkeyOrigins.0',
    ]);
  });
});

describe('OAUTH credentials', () => {
  it('registers with the token’s e-mail as nickname and verifies into a session whose key is sealed to the client', async () => {
    const { wallet, sub, credential } = await oauthWallet();
    expect(credential).toEqual({
      id: expect.stringMatching(/^AuthMethod:/),
      accountId: wallet.accountId,
      type: 'OAUTH',
      nickname: `${sub}@mail.example`,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const receiver = newClientKey();
    const token = await issuer.token({ sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() - 30 });
    const verified = await oauthVerify(prod, credential.id, token, receiver);
    expect(verified.statusCode, verified.body).toBe(200);
    const session = verified.json() as Body;
    expect(session).toMatchObject({ id: expect.stringMatching(/^Session:/), accountId: wallet.accountId, type: 'OAUTH', nickname: `${sub}@mail.example` });
    const sessionKey = openSessionKey(String(session.encryptedSessionSigningKey), receiver);
    const patched = await prod.signed('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, sessionKey);
    expect(patched.statusCode, patched.body).toBe(200);
    // A session from OAUTH can authorise everything but its own credential's revocation.
    const own = await prod.firstLeg('DELETE', `/auth/credentials/${credential.id}`);
    expectEnvelope(await prod.signedRetry('DELETE', `/auth/credentials/${credential.id}`, undefined, own, sessionKey), 401, 'WALLET_SIGNATURE_INVALID');
    const emailCredential = wallet.credentialId;
    expect((await prod.signed('DELETE', `/auth/credentials/${emailCredential}`, undefined, sessionKey)).statusCode).toBe(204);
  });

  it('adds OAUTH with a signed retry once the account has a verified credential, then goes straight to verify', async () => {
    const wallet = await sandbox.newWallet();
    const { key } = await sandbox.login(wallet.credentialId);
    const token = await issuer.token({ sub: 'late-subject', aud: 'acme-web', email: 'late@mail.example' }, { iat: nowSeconds() });
    const body = { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token };
    const challenge = await sandbox.firstLeg('POST', '/auth/credentials', body);
    expect(challenge.type).toBe('OAUTH');
    expect(JSON.parse(challenge.payloadToSign)).toMatchObject({ type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS', organizationId: wallet.accountId });
    const added = await sandbox.signedRetry('POST', '/auth/credentials', body, challenge, key);
    expect(added.statusCode, added.body).toBe(201);
    const receiver = newClientKey();
    const fresh = await issuer.token({ sub: 'late-subject', aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    expect((await oauthVerify(sandbox, (added.json() as { id: string }).id, fresh, receiver)).statusCode).toBe(200);
  });

  it('refuses a platform backend that adds its own OAUTH identity to a wallet it does not control: no credential, no session, nothing exported', async () => {
    const wallet = await prod.newWallet();
    // The backend holds a valid token of its own identity and a key of its own, but no session of the wallet.
    const backendKey = newClientKey();
    const token = await issuer.token({ sub: 'platform-backend', aud: 'acme-web', email: 'ops@platform.example' }, { iat: nowSeconds() });
    const body = { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token };
    const add = await prod.call('POST', '/auth/credentials', body);
    expect(add.statusCode, add.body).toBe(202);
    expectEnvelope(await prod.signedRetry('POST', '/auth/credentials', body, add.json() as { payloadToSign: string; requestId: string }, backendKey), 401, 'WALLET_SIGNATURE_INVALID');
    const list = (await prod.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Body[] };
    expect(list.data.map((c) => c.type)).toEqual(['EMAIL_OTP']);
    // With no credential of its own it cannot log in, and its key signs no export.
    const exportBody = { clientPublicKey: backendKey.publicKeyUncompressed };
    const exported = await prod.signed('POST', `/internal-accounts/${wallet.accountId}/export`, exportBody, backendKey);
    expectEnvelope(exported, 401, 'WALLET_SIGNATURE_INVALID');
    expect(exported.body).not.toContain('encryptedWalletCredentials');
    expect(((await prod.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: Body[] }).data).toEqual([]);
  });

  it('names each failed check in a 401', async () => {
    const { sub, credential } = await oauthWallet();
    const receiver = newClientKey();
    const nonce = nonceFor(receiver.publicKey);
    const good = { sub, aud: 'acme-web', nonce };
    const check = async (token: string, expected: string) => {
      const failed = expectEnvelope(await oauthVerify(prod, credential.id, token, receiver), 401, 'UNAUTHORIZED');
      expect(failed.details, expected).toEqual({ check: expected });
    };
    const forger = await generateKeyPair('RS256');
    await check(await issuer.token(good, { iat: nowSeconds(), key: forger.privateKey }), 'signature');
    await check(await issuer.token(good, { iat: nowSeconds() - 61 }), 'iat');
    await check(await issuer.token(good, { iat: nowSeconds() + 60 }), 'iat');
    await check(await issuer.token(good, { iat: nowSeconds() - 30, expiresIn: 20 }), 'exp');
    await check(await issuer.token({ ...good, sub: 'someone-else' }, { iat: nowSeconds() }), 'identity');
    await check(await issuer.token({ ...good, aud: 'another-app' }, { iat: nowSeconds() }), 'identity');
    await check(await otherIssuer.token(good, { iat: nowSeconds() }), 'identity');
    await check(await issuer.token({ ...good, nonce: nonceFor(newClientKey().publicKey) }, { iat: nowSeconds() }), 'nonce');
    await check(await issuer.token({ sub, aud: 'acme-web' }, { iat: nowSeconds() }), 'nonce');
    const untrusted = await TestIssuer.start();
    await check(await untrusted.token(good, { iat: nowSeconds() }), 'issuer');
    await untrusted.close();
    const once = await issuer.token(good, { iat: nowSeconds() });
    expect((await oauthVerify(prod, credential.id, once, receiver)).statusCode).toBe(200);
    await check(once, 'replay');
  });

  it('follows issuer key rotation: a token of the new key verifies, the retired key no longer does', async () => {
    const { sub, credential } = await oauthWallet();
    const receiver = newClientKey();
    const good = { sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) };
    const oldToken = await issuer.token(good, { iat: nowSeconds() });
    await issuer.rotate();
    const before = issuer.jwksRequests;
    const newToken = await issuer.token(good, { iat: nowSeconds() });
    expect((await oauthVerify(prod, credential.id, newToken, receiver)).statusCode).toBe(200);
    expect(issuer.jwksRequests).toBeGreaterThan(before);
    const failed = expectEnvelope(await oauthVerify(prod, credential.id, oldToken, receiver), 401, 'UNAUTHORIZED');
    expect(failed.details).toEqual({ check: 'signature' });
  });

  it('answers 400 for a token that is not a JWT, at registration and at verify', async () => {
    const { credential, wallet } = await oauthWallet();
    for (const token of ['not-a-jwt', 'a.b', 'eyJhbGciOiJub25lIn0.bm90IGpzb24.x']) {
      expectEnvelope(await oauthVerify(prod, credential.id, token), 400, 'INVALID_INPUT');
      expectEnvelope(await prod.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }), 400, 'INVALID_INPUT');
    }
  });

  it('refuses an untrusted issuer or an identity already registered, with 400 at registration', async () => {
    const { wallet, sub } = await oauthWallet();
    const untrusted = await TestIssuer.start();
    const foreign = await untrusted.token({ sub, aud: 'acme-web' }, { iat: nowSeconds() });
    expectEnvelope(await prod.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: foreign }), 400, 'INVALID_INPUT');
    await untrusted.close();
    const again = await issuer.token({ sub, aud: 'acme-web' }, { iat: nowSeconds() });
    const duplicate = expectEnvelope(await prod.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: again }), 400, 'INVALID_INPUT');
    expect(duplicate.details).toEqual({ errors: [{ field: 'oidcToken', message: 'identity already registered' }] });
  });

  it('answers 503 when the issuer’s JWKS cannot be fetched, and registers nothing', async () => {
    const gone = await TestIssuer.start();
    const client = new WalletClient(ctx, await ctx.newPlatform('production'));
    await client.enableWallets();
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: gone.issuer, jwksUri: hostedJwks(gone) }] } })).statusCode).toBe(200);
    const wallet = await client.newWallet();
    const token = await gone.token({ sub: 'unreachable', aud: 'acme-web' }, { iat: nowSeconds() });
    await gone.close();
    expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }), 503, 'SERVICE_UNAVAILABLE');
    const list = (await client.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Body[] };
    expect(list.data.map((c) => c.type)).toEqual(['EMAIL_OTP']);
  });

  it('skips only the signature in sandbox: every claim is still checked', async () => {
    const { sub, credential } = await oauthWallet(sandbox);
    const receiver = newClientKey();
    const token = await issuer.token({ sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    const unsigned = `${token.split('.').slice(0, 2).join('.')}.c2FuZGJveA`;
    expect((await oauthVerify(sandbox, credential.id, unsigned, receiver)).statusCode).toBe(200);
    const wrongNonce = await issuer.token({ sub, aud: 'acme-web', nonce: 'x' }, { iat: nowSeconds() });
    const failed = expectEnvelope(await oauthVerify(sandbox, credential.id, `${wrongNonce.split('.').slice(0, 2).join('.')}.c2FuZGJveA`, receiver), 401, 'UNAUTHORIZED');
    expect(failed.details).toEqual({ check: 'nonce' });
  });
});

describe('OAUTH: issuers the platform configures', () => {
  it('keeps each credential on the JWKS in force when it was registered: repointing the issuer later takes over no wallet', async () => {
    const own = await TestIssuer.start();
    const forger = await TestIssuer.start();
    const client = new WalletClient(ctx, await ctx.newPlatform('production'));
    await client.enableWallets();
    const original = hostedJwks(own);
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: own.issuer, jwksUri: original }] } })).statusCode).toBe(200);
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId, () => messages.lastCode());
    const token = await own.token({ sub: 'pinned-user', aud: 'acme-web' }, { iat: nowSeconds() });
    const added = await client.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }, key);
    expect(added.statusCode, added.body).toBe(201);
    const credential = added.json() as { id: string };
    const stored = await ctx.handle.db.selectFrom('auth_credentials').select('details').where('id', '=', credential.id.split(':')[1]!).executeTakeFirstOrThrow();
    expect(stored.details).toMatchObject({ iss: own.issuer, sub: 'pinned-user', jwksUri: original });

    // The platform repoints its issuer at other keys and signs a token for the user's identity.
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: own.issuer, jwksUri: hostedJwks(forger) }] } })).statusCode).toBe(200);
    const mine = newClientKey();
    const forged = await forger.token({ iss: own.issuer, sub: 'pinned-user', aud: 'acme-web', nonce: nonceFor(mine.publicKey) }, { iat: nowSeconds() });
    expect(expectEnvelope(await oauthVerify(client, credential.id, forged, mine), 401, 'UNAUTHORIZED').details).toEqual({ check: 'signature' });
    expect(forger.jwksRequests).toBe(0);
    // The user's tokens from the keys it registered under still log in.
    const receiver = newClientKey();
    const genuine = await own.token({ sub: 'pinned-user', aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    expect((await oauthVerify(client, credential.id, genuine, receiver)).statusCode).toBe(200);
    // Taking the issuer off the list still stops its logins.
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [] } })).statusCode).toBe(200);
    const after = await own.token({ sub: 'pinned-user', aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    expect(expectEnvelope(await oauthVerify(client, credential.id, after, receiver), 401, 'UNAUTHORIZED').details).toEqual({ check: 'issuer' });
    await own.close();
    await forger.close();
  });
});

describe('OAUTH: one identity once, bounded token lifetimes', () => {
  it('refuses the same identity at the second of two adds challenged side by side, at its signed retry', async () => {
    const wallet = await sandbox.newWallet();
    const { key } = await sandbox.login(wallet.credentialId);
    const claims = { sub: 'twice', aud: 'acme-web', email: 'twice@mail.example' };
    const first = { type: 'OAUTH', accountId: wallet.accountId, oidcToken: await issuer.token(claims, { iat: nowSeconds() }) };
    const second = { type: 'OAUTH', accountId: wallet.accountId, oidcToken: await issuer.token(claims, { iat: nowSeconds() - 1 }) };
    // Both checked before either was added: both challenged.
    const a = await sandbox.firstLeg('POST', '/auth/credentials', first);
    const b = await sandbox.firstLeg('POST', '/auth/credentials', second);
    expect((await sandbox.signedRetry('POST', '/auth/credentials', first, a, key)).statusCode).toBe(201);
    const refused = expectEnvelope(await sandbox.signedRetry('POST', '/auth/credentials', second, b, key), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [{ field: 'oidcToken', message: 'identity already registered' }] });
    const list = (await sandbox.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Body[] };
    expect(list.data.map((c) => c.type)).toEqual(['EMAIL_OTP', 'OAUTH']);
    // The database holds the line too: a second active row of the identity is refused.
    const [row] = await ctx.handle.db.selectFrom('auth_credentials').selectAll().where('type', '=', 'OAUTH').where('nickname', '=', 'twice@mail.example').execute();
    await expect(
      ctx.handle.db
        .insertInto('auth_credentials')
        .values({ ...row!, id: crypto.randomUUID(), details: JSON.stringify(row!.details) as never })
        .execute(),
    ).rejects.toMatchObject({ code: '23505' });
  });

  it('refuses a token whose exp is absurdly far ahead with 401 exp, at registration and at verify; a day-long token is fine', async () => {
    const { sub, credential, wallet } = await oauthWallet(sandbox);
    const receiver = newClientKey();
    const far = await issuer.token({ sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds(), expiresIn: 1e13 });
    expect(expectEnvelope(await oauthVerify(sandbox, credential.id, far, receiver), 401, 'UNAUTHORIZED').details).toEqual({ check: 'exp' });
    const farAdd = await issuer.token({ sub: `${sub}-far`, aud: 'acme-web' }, { iat: nowSeconds(), expiresIn: 1e13 });
    expect(expectEnvelope(await sandbox.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: farAdd }), 401, 'UNAUTHORIZED').details).toEqual({
      check: 'exp',
    });
    const day = await issuer.token({ sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds(), expiresIn: 86_400 });
    expect((await oauthVerify(sandbox, credential.id, day, receiver)).statusCode).toBe(200);
  });
});

describe('PASSKEY credentials', () => {
  /** A sandbox wallet logged in with EMAIL_OTP, and a passkey registered on it by signed retry. */
  async function passkeyWallet() {
    const wallet = await sandbox.newWallet();
    const { key } = await sandbox.login(wallet.credentialId);
    const authenticator = new SoftwareAuthenticator();
    const challenge = Buffer.from(`registration-${Math.random()}`).toString('base64url');
    const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'My laptop', challenge, attestation: authenticator.create({ ...RP, challenge }) };
    const first = await sandbox.firstLeg('POST', '/auth/credentials', body);
    expect(first.type).toBe('PASSKEY');
    expect(JSON.parse(first.payloadToSign)).toMatchObject({ type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2', parameters: { authenticators: [{ authenticatorName: 'My laptop', challenge }] } });
    const added = await sandbox.signedRetry('POST', '/auth/credentials', body, first, key);
    expect(added.statusCode, added.body).toBe(201);
    return { wallet, key, authenticator, body, credential: added.json() as Body & { id: string; credentialId: string } };
  }

  async function passkeyChallenge(credentialId: string, receiver = newClientKey()) {
    const response = await sandbox.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: receiver.publicKey });
    expect(response.statusCode, response.body).toBe(200);
    return { receiver, challenge: response.json() as Body & { challenge: string; requestId: string; credentialId: string; expiresAt: string } };
  }

  const verify = (credentialId: string, assertion: unknown, requestId?: string) =>
    sandbox.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, requestId ? { 'request-id': requestId } : {});

  it('registers a passkey, then challenge → assertion → 200 session with a key sealed to the challenge’s public key', async () => {
    const { wallet, authenticator, credential } = await passkeyWallet();
    expect(credential).toEqual({
      id: expect.stringMatching(/^AuthMethod:/),
      accountId: wallet.accountId,
      type: 'PASSKEY',
      credentialId: authenticator.id,
      nickname: 'My laptop',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const { receiver, challenge } = await passkeyChallenge(credential.id);
    expect(challenge).toEqual({
      ...credential,
      challenge: expect.stringMatching(/^[0-9a-f]{64}$/),
      requestId: expect.stringMatching(/^Request:/),
      expiresAt: new Date(ctx.clock.now().getTime() + 5 * 60_000).toISOString(),
    });
    const assertion = authenticator.get({ ...RP, challenge: Buffer.from(challenge.challenge, 'utf8') });
    const verified = await verify(credential.id, assertion, challenge.requestId);
    expect(verified.statusCode, verified.body).toBe(200);
    const session = verified.json() as Body;
    expect(session).toMatchObject({ type: 'PASSKEY', credentialId: authenticator.id, nickname: 'My laptop' });
    const sessionKey = openSessionKey(String(session.encryptedSessionSigningKey), receiver);
    expect((await sandbox.signed('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, sessionKey)).statusCode).toBe(200);
  });

  it('keeps several distinct passkeys and refuses the same credentialId twice', async () => {
    const { wallet, key, body } = await passkeyWallet();
    const second = new SoftwareAuthenticator();
    const challenge = Buffer.from('second-registration').toString('base64url');
    const added = await sandbox.signed('POST', '/auth/credentials', { ...body, nickname: 'Phone', challenge, attestation: second.create({ ...RP, challenge }) }, key);
    expect(added.statusCode, added.body).toBe(201);
    const list = (await sandbox.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Body[] };
    expect(list.data.filter((c) => c.type === 'PASSKEY')).toHaveLength(2);
    expectEnvelope(await sandbox.call('POST', '/auth/credentials', body), 400, 'PASSKEY_CREDENTIAL_ALREADY_EXISTS');
  });

  it('rejects registrations whose challenge, origin or ceremony type do not match', async () => {
    const wallet = await sandbox.newWallet();
    const authenticator = new SoftwareAuthenticator();
    const challenge = Buffer.from('issued-by-backend').toString('base64url');
    const register = (attestation: unknown, extra: Body = {}) =>
      sandbox.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation, ...extra });
    const cases: Array<[unknown, string]> = [
      [authenticator.create({ ...RP, challenge: Buffer.from('other').toString('base64url') }), 'challenge'],
      [authenticator.create({ rpId: RP.rpId, origin: 'https://evil.example', challenge }), 'origin'],
      [authenticator.create({ rpId: 'evil.example', origin: RP.origin, challenge }), 'rpId'],
    ];
    for (const [attestation, check] of cases) {
      const rejected = expectEnvelope(await register(attestation), 400, 'INVALID_INPUT');
      expect(rejected.details, check).toMatchObject({ check });
    }
    expectEnvelope(await register(authenticator.create({ ...RP, challenge }), { nickname: '<script>' }), 400, 'INVALID_INPUT');
    // A valid registration reaches the signed retry: the wallet already has its EMAIL_OTP credential.
    const fresh = await register(authenticator.create({ ...RP, challenge }));
    expect(fresh.statusCode, fresh.body).toBe(202);
  });

  it('names each failed assertion check in a 401, and a failure does not use up the challenge', async () => {
    const { authenticator, credential } = await passkeyWallet();
    const { challenge } = await passkeyChallenge(credential.id);
    const bytes = Buffer.from(challenge.challenge, 'utf8');
    const expectCheck = async (assertion: unknown, check: string) => {
      const response = await verify(credential.id, assertion, challenge.requestId);
      expect(response.statusCode, check).toBe(401);
      expect(expectEnvelope(response, 401, 'UNAUTHORIZED').details, check).toEqual({ check });
    };
    await expectCheck(authenticator.get({ ...RP, challenge: Buffer.from('something else') }), 'challenge');
    await expectCheck(authenticator.get({ rpId: RP.rpId, origin: 'https://evil.example', challenge: bytes }), 'origin');
    await expectCheck(authenticator.get({ rpId: 'evil.example', origin: RP.origin, challenge: bytes }), 'rpId');
    await expectCheck(authenticator.get({ ...RP, challenge: bytes, userPresent: false }), 'userPresence');
    const tampered = authenticator.get({ ...RP, challenge: bytes });
    const signature = Buffer.from(tampered.signature, 'base64url');
    signature[signature.length - 1]! ^= 0x01;
    await expectCheck({ ...tampered, signature: signature.toString('base64url') }, 'signature');
    await expectCheck({ ...authenticator.get({ ...RP, challenge: bytes }), credentialId: new SoftwareAuthenticator().id }, 'credential');

    const good = authenticator.get({ ...RP, challenge: bytes });
    const acceptedCounter = authenticator.counter;
    expect((await verify(credential.id, good, challenge.requestId)).statusCode).toBe(200);
    const reusedResponse = await verify(credential.id, authenticator.get({ ...RP, challenge: bytes }), challenge.requestId);
    expect(reusedResponse.statusCode, 'reused request id').toBe(401);
    const reused = expectEnvelope(reusedResponse, 401, 'UNAUTHORIZED');
    expect(reused.details).toEqual({ reason: 'REQUEST_ID_USED' });

    // The stored counter is now the authenticator's: an assertion that does not advance it is a replay.
    const next = await passkeyChallenge(credential.id);
    const replayed = authenticator.get({ ...RP, challenge: Buffer.from(next.challenge.challenge, 'utf8'), counter: acceptedCounter });
    const replayedResponse = await verify(credential.id, replayed, next.challenge.requestId);
    expect(replayedResponse.statusCode, 'replayed counter').toBe(401);
    expect(expectEnvelope(replayedResponse, 401, 'UNAUTHORIZED').details).toEqual({ check: 'counter' });
  });

  it('needs a known, unexpired Request-Id and no clientPublicKey in the verify body', async () => {
    const { authenticator, credential } = await passkeyWallet();
    const { challenge } = await passkeyChallenge(credential.id);
    const assertion = authenticator.get({ ...RP, challenge: Buffer.from(challenge.challenge, 'utf8') });
    expectEnvelope(await verify(credential.id, assertion), 401, 'REQUEST_ID_MISSING');
    const unknown = expectEnvelope(await verify(credential.id, assertion, 'Request:0198a3c4-0000-7000-8000-000000000000'), 401, 'UNAUTHORIZED');
    expect(unknown.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });
    expectEnvelope(
      await sandbox.call('POST', `/auth/credentials/${credential.id}/verify`, { type: 'PASSKEY', assertion, clientPublicKey: newClientKey().publicKey }, { 'request-id': challenge.requestId }),
      400,
      'INVALID_INPUT',
    );
    ctx.clock.advance(5 * 60_000);
    const expired = expectEnvelope(await verify(credential.id, assertion, challenge.requestId), 401, 'UNAUTHORIZED');
    expect(expired.details).toEqual({ reason: 'REQUEST_ID_EXPIRED' });
    expectEnvelope(await sandbox.call('POST', `/auth/credentials/${credential.id}/challenge`, {}), 400, 'INVALID_INPUT');
  });
});
