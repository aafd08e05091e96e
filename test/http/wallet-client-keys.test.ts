import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SoftwareAuthenticator } from '../helpers/authenticator.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { TestIssuer } from '../helpers/oidc.js';
import { newClientKey, openSessionKey, stamp, WalletClient } from '../helpers/wallet.js';

/**
 * Client public keys that the schema's pattern admits but that are no P-256 point (audit: 500s).
 * Every field carrying one is refused with 400 INVALID_INPUT naming it as the request arrives,
 * and no signed operation stores a success whose answer cannot be built.
 */
let ctx: TestContext;
let client: WalletClient;
let issuer: TestIssuer;
const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };

beforeAll(async () => {
  ctx = await createTestContext();
  issuer = await TestIssuer.start();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
  const configured = await client.call('PATCH', '/config', {
    embeddedWalletConfig: { oidcIssuers: [{ issuer: issuer.issuer, jwksUri: issuer.jwksUri }], passkeyRpId: RP.rpId, passkeyOrigins: [RP.origin] },
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

const P = 2n ** 256n - 2n ** 224n + 2n ** 192n + 2n ** 96n - 1n;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;
function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  let b = base % modulus;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
  }
  return result;
}
/** A compressed key whose x has no y on the curve (x³ − 3x + b is not a square mod p). */
function compressedWithoutRoot(): string {
  for (let x = 1n; ; x++) {
    const rhs = (((x ** 3n - 3n * x + B) % P) + P) % P;
    if (modPow(rhs, (P - 1n) / 2n, P) === P - 1n) return `02${x.toString(16).padStart(64, '0')}`;
  }
}
const OFF_CURVE = `04${'11'.repeat(64)}`;
const NO_ROOT = compressedWithoutRoot();

const refusedKey = (response: Awaited<ReturnType<WalletClient['call']>>) => {
  const error = expectEnvelope(response, 400, 'INVALID_INPUT');
  expect(error.details).toEqual({ errors: [{ field: 'clientPublicKey', message: 'is not a point on P-256' }] });
};

describe('client public keys off the curve', () => {
  it('OAUTH verify: 400 naming clientPublicKey, the token not used up by the refusal', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const token = await issuer.token({ sub: 'off-curve', aud: 'acme-web' }, { iat: nowSeconds() });
    const added = await client.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }, key);
    expect(added.statusCode, added.body).toBe(201);
    const credentialId = (added.json() as { id: string }).id;
    for (const bad of [OFF_CURVE, NO_ROOT]) {
      const login = await issuer.token({ sub: 'off-curve', aud: 'acme-web', nonce: nonceFor(bad) }, { iat: nowSeconds() });
      refusedKey(await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: login, clientPublicKey: bad }));
    }
    const receiver = newClientKey();
    const good = await issuer.token({ sub: 'off-curve', aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    const verified = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: good, clientPublicKey: receiver.publicKey });
    expect(verified.statusCode, verified.body).toBe(200);
  });

  it('PASSKEY challenge: 400 naming clientPublicKey, no challenge issued', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const authenticator = new SoftwareAuthenticator();
    const challenge = Buffer.from('client-keys-registration').toString('base64url');
    const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Laptop', challenge, attestation: authenticator.create({ ...RP, challenge }) };
    const added = await client.signed('POST', '/auth/credentials', body, key);
    expect(added.statusCode, added.body).toBe(201);
    const credentialId = (added.json() as { id: string }).id;
    const before = await ctx.handle.db.selectFrom('signed_requests').select('id').where('operation', '=', 'passkey.session').execute();
    for (const bad of [OFF_CURVE, NO_ROOT]) refusedKey(await client.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: bad }));
    const after = await ctx.handle.db.selectFrom('signed_requests').select('id').where('operation', '=', 'passkey.session').execute();
    expect(after).toHaveLength(before.length);
    // A good key still gets its session.
    const receiver = newClientKey();
    const issued = (await client.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: receiver.publicKey })).json() as { challenge: string; requestId: string };
    const assertion = authenticator.get({ ...RP, challenge: Buffer.from(issued.challenge, 'utf8') });
    const verified = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': issued.requestId });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(openSessionKey(String((verified.json() as Body).encryptedSessionSigningKey), receiver).publicKey).toMatch(/^0[23]/);
  });

  it('session refresh: 400 at the first call and at the signed retry', async () => {
    const wallet = await client.newWallet();
    const { key, session } = await client.login(wallet.credentialId);
    const path = `/auth/sessions/${session.id}/refresh`;
    for (const bad of [OFF_CURVE, NO_ROOT]) refusedKey(await client.call('POST', path, { clientPublicKey: bad }));
    // A retry carrying such a key is refused the same way, before its signature is looked at.
    const challenge = await client.firstLeg('POST', path, { clientPublicKey: newClientKey().publicKey });
    refusedKey(await client.signedRetry('POST', path, { clientPublicKey: OFF_CURVE }, challenge, key));
  });

  it('export: 400 at the first call', async () => {
    const wallet = await client.newWallet();
    await client.login(wallet.credentialId);
    refusedKey(await client.call('POST', `/internal-accounts/${wallet.accountId}/export`, { clientPublicKey: OFF_CURVE }));
  });

  it('export settled late from a challenge whose key is off the curve stores a 400, never a 200 it cannot answer', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const path = `/internal-accounts/${wallet.accountId}/export`;
    const body = { clientPublicKey: newClientKey().publicKeyUncompressed };
    const challenge = await client.firstLeg('POST', path, body);
    const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': '10' };
    expect((await client.call('POST', path, body, headers)).json()).toEqual({ status: 'PROCESSING' });
    // As a request claimed before keys were checked would be: its bound key is no point.
    const id = challenge.requestId.split(':')[1]!;
    const row = await ctx.handle.db.selectFrom('signed_requests').select('context').where('id', '=', id).executeTakeFirstOrThrow();
    const context = { ...row.context, body: { clientPublicKey: OFF_CURVE } };
    await ctx.handle.db.updateTable('signed_requests').set({ context: JSON.stringify(context) as never }).where('id', '=', id).execute();
    ctx.clock.advance(10_000);
    await ctx.jobs.runDue(50);
    const stored = await ctx.handle.db.selectFrom('signed_requests').select(['status', 'outcome']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(stored.status).toBe('DONE');
    expect(stored.outcome).toMatchObject({ statusCode: 400, error: { code: 'INVALID_INPUT' } });
    // Each identical re-send answers that 400, not a 500.
    for (let i = 0; i < 2; i++) expectEnvelope(await client.call('POST', path, body, headers), 400, 'INVALID_INPUT');
  });
});
