import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { SoftwareAuthenticator } from '../helpers/authenticator.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';

/**
 * A passkey assertion names the WebAuthn credential that made it (`credentialId`); the verify of
 * a PASSKEY credential takes only an assertion naming that credential's own id (WebAuthn §7.2:
 * the credential is identified by its id), whatever its signature. A mutation audit found no test
 * sending an assertion under another id: dropping the check passed every test.
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

async function passkeyWallet() {
  const wallet = await sandbox.newWallet();
  const { key } = await sandbox.login(wallet.credentialId);
  const authenticator = new SoftwareAuthenticator();
  const challenge = Buffer.from(`registration-${Math.random()}`).toString('base64url');
  const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Laptop', challenge, attestation: authenticator.create({ ...RP, challenge }) };
  const added = await sandbox.signed('POST', '/auth/credentials', body, key);
  expect(added.statusCode, added.body).toBe(201);
  return { authenticator, credential: added.json() as { id: string } };
}

async function passkeyChallenge(credentialId: string) {
  const response = await sandbox.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: newClientKey().publicKey });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { challenge: string; requestId: string };
}

const verify = (credentialId: string, assertion: unknown, requestId: string) =>
  sandbox.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': requestId });

const sessionsOf = (credentialId: string) =>
  ctx.handle.db.selectFrom('auth_sessions').select('id').where('credential_id', '=', parseId('AuthMethod', credentialId)!).execute();

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
