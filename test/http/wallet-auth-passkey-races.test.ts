import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { SoftwareAuthenticator } from '../helpers/authenticator.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';

/**
 * A passkey's signature counter only moves forward (WebAuthn §6.1.1: a counter that does not is
 * the sign of a cloned authenticator). An assertion is checked against the stored counter when
 * its Request-Id is claimed, but the counter is stored only when the session opens: with a
 * sandbox settle delay between the two, a second assertion of the same counter (the clone) can
 * be claimed and settled first. The deferred one must then open no session. And one passkey
 * registered by two signed adds: the second retry finds it added by the first.
 */
let ctx: TestContext;
let sandbox: WalletClient;
const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };

beforeAll(async () => {
  ctx = await createTestContext();
  sandbox = new WalletClient(ctx, ctx.platform);
  await sandbox.enableWallets();
  const configured = await sandbox.call('PATCH', '/config', { embeddedWalletConfig: { passkeyRpId: RP.rpId, passkeyOrigins: [RP.origin] } });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(() => ctx?.close());

type Body = Record<string, unknown>;

async function passkeyWallet() {
  const wallet = await sandbox.newWallet();
  const { key } = await sandbox.login(wallet.credentialId);
  const authenticator = new SoftwareAuthenticator();
  const challenge = Buffer.from(`registration-${Math.random()}`).toString('base64url');
  const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Laptop', challenge, attestation: authenticator.create({ ...RP, challenge }) };
  const added = await sandbox.signed('POST', '/auth/credentials', body, key);
  expect(added.statusCode, added.body).toBe(201);
  return { wallet, key, authenticator, body, credential: added.json() as Body & { id: string } };
}

async function passkeyChallenge(credentialId: string) {
  const response = await sandbox.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: newClientKey().publicKey });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { challenge: string; requestId: string };
}

const verify = (credentialId: string, assertion: unknown, requestId: string, headers: Record<string, string> = {}) =>
  sandbox.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': requestId, ...headers });

const sessionsOf = (credentialId: string) =>
  ctx.handle.db.selectFrom('auth_sessions').select('id').where('credential_id', '=', parseId('AuthMethod', credentialId)!).execute();

describe('a passkey assertion whose counter was overtaken while it settled', () => {
  it('a deferred assertion, and a clone of its counter settled first: the clone opens a session, the deferred one is 401 counter and opens none', async () => {
    const { credential, authenticator } = await passkeyWallet();
    const first = await passkeyChallenge(credential.id);
    const second = await passkeyChallenge(credential.id);
    const counter = authenticator.counter + 1;
    const deferredAssertion = authenticator.get({ ...RP, challenge: Buffer.from(first.challenge, 'utf8'), counter });
    const cloneAssertion = authenticator.get({ ...RP, challenge: Buffer.from(second.challenge, 'utf8'), counter });

    const deferred = await verify(credential.id, deferredAssertion, first.requestId, { 'sandbox-settle-delay': '60' });
    expect(deferred.statusCode, deferred.body).toBe(200);
    expect(deferred.json()).toEqual({ status: 'PROCESSING' });

    const clone = await verify(credential.id, cloneAssertion, second.requestId);
    expect(clone.statusCode, clone.body).toBe(200);
    expect(clone.json()).toMatchObject({ type: 'PASSKEY', encryptedSessionSigningKey: expect.any(String) });
    const sessionsBefore = await sessionsOf(credential.id);

    ctx.clock.advance(60_000);
    const settled = await verify(credential.id, deferredAssertion, first.requestId);
    expect(expectEnvelope(settled, 401, 'UNAUTHORIZED').details).toEqual({ check: 'counter' });
    // The refusal is the request's stored outcome: an identical re-send answers it again.
    expect(expectEnvelope(await verify(credential.id, deferredAssertion, first.requestId), 401, 'UNAUTHORIZED').details).toEqual({ check: 'counter' });
    expect(await sessionsOf(credential.id)).toEqual(sessionsBefore);
    const stored = await ctx.handle.db.selectFrom('auth_credentials').select('details').where('id', '=', parseId('AuthMethod', credential.id)!).executeTakeFirstOrThrow();
    expect((stored.details as { counter: number }).counter).toBe(counter);
  });

  it('a deferred assertion settles into a session when nothing overtook it', async () => {
    const { credential, authenticator } = await passkeyWallet();
    const { challenge, requestId } = await passkeyChallenge(credential.id);
    const assertion = authenticator.get({ ...RP, challenge: Buffer.from(challenge, 'utf8') });
    const deferred = await verify(credential.id, assertion, requestId, { 'sandbox-settle-delay': '60' });
    expect(deferred.json()).toEqual({ status: 'PROCESSING' });
    ctx.clock.advance(60_000);
    const settled = await verify(credential.id, assertion, requestId);
    expect(settled.statusCode, settled.body).toBe(200);
    expect(settled.json()).toMatchObject({ type: 'PASSKEY', encryptedSessionSigningKey: expect.any(String) });
  });
});

describe('one passkey added by two signed requests', () => {
  it('both first calls answer 202; the first retry adds it, the second is 400 PASSKEY_CREDENTIAL_ALREADY_EXISTS and adds nothing', async () => {
    const wallet = await sandbox.newWallet();
    const { key } = await sandbox.login(wallet.credentialId);
    const authenticator = new SoftwareAuthenticator();
    const challenge = Buffer.from(`registration-${Math.random()}`).toString('base64url');
    const attestation = authenticator.create({ ...RP, challenge });
    const bodies = ['Laptop', 'Laptop again'].map((nickname) => ({ type: 'PASSKEY', accountId: wallet.accountId, nickname, challenge, attestation }));
    const legs = [];
    for (const body of bodies) legs.push(await sandbox.firstLeg('POST', '/auth/credentials', body));
    const added = await sandbox.signedRetry('POST', '/auth/credentials', bodies[0], legs[0]!, key);
    expect(added.statusCode, added.body).toBe(201);
    const again = await sandbox.signedRetry('POST', '/auth/credentials', bodies[1], legs[1]!, key);
    expectEnvelope(again, 400, 'PASSKEY_CREDENTIAL_ALREADY_EXISTS');
    const list = (await sandbox.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Body[] };
    expect(list.data.filter((c) => c.type === 'PASSKEY').map((c) => c.nickname)).toEqual(['Laptop']);
  });
});

// A passkey assertion names the WebAuthn credential that made it (`credentialId`); the verify of a
// PASSKEY credential takes only an assertion naming that credential's own id (WebAuthn §7.2),
// whatever its signature. A mutation audit found no test sending one under another id.
describe('a passkey assertion under another credential id', () => {
  it('is 401 naming the credential check and opens no session, although its signature is the registered key’s', async () => {
    const { authenticator, credential } = await passkeyWallet();
    const { challenge, requestId } = await passkeyChallenge(credential.id);
    const assertion = authenticator.get({ ...RP, challenge: Buffer.from(challenge, 'utf8') });
    const renamed = { ...assertion, credentialId: randomBytes(32).toString('base64url') };
    const refused = expectEnvelope(await verify(credential.id, renamed, requestId), 401, 'UNAUTHORIZED');
    expect(refused.details).toEqual({ check: 'credential' });
    expect(await sessionsOf(credential.id)).toEqual([]);

    // The same assertion under its own id opens the session (a fresh challenge: the refused one may be spent).
    const fresh = await passkeyChallenge(credential.id);
    const own = await verify(credential.id, authenticator.get({ ...RP, challenge: Buffer.from(fresh.challenge, 'utf8') }), fresh.requestId);
    expect(own.statusCode, own.body).toBe(200);
    expect(await sessionsOf(credential.id)).toHaveLength(1);
  });
});
