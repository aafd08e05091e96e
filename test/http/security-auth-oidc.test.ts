import { createHash } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../../src/modules/wallet-auth/oidc.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { TestIssuer } from '../helpers/oidc.js';
import { CapturingMessages, newClientKey, WalletClient } from '../helpers/wallet.js';

// OAUTH verify (spec §4.4): "A token must be fresh for each call". A token is one signed
// statement of its issuer; encodings of it that verify as well must count as the same token.

let ctx: TestContext;
let issuer: TestIssuer;
let prod: WalletClient;
const messages = new CapturingMessages();
const JWKS_HOST = 'jwks.security-oidc.example';

const platformJwksFetch = async (url: string, init: { signal?: AbortSignal | null }) => {
  if (new URL(url).host !== JWKS_HOST) throw new Error(`no test JWKS at ${url}`);
  return fetch(issuer.jwksUri, { signal: init.signal ?? null });
};

beforeAll(async () => {
  ctx = await createTestContext({ messages, oidc: new OidcVerifier({ cooldownMs: 0, cacheMaxAgeMs: 600_000, timeoutMs: 5_000, platformJwksFetch }) });
  issuer = await TestIssuer.start();
  prod = new WalletClient(ctx, await ctx.newPlatform('production'));
  await prod.enableWallets();
  const configured = await prod.call('PATCH', '/config', {
    embeddedWalletConfig: { appName: 'Acme', oidcIssuers: [{ issuer: issuer.issuer, jwksUri: `https://${JWKS_HOST}/jwks` }] },
  });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(async () => {
  await ctx.close();
  await issuer.close();
});

const nowSeconds = () => Math.floor(ctx.clock.now().getTime() / 1000);
const nonceFor = (key: string) => createHash('sha256').update(key).digest('hex');
let subjects = 0;

async function oauthCredential(): Promise<{ sub: string; credentialId: string }> {
  const wallet = await prod.newWallet();
  const { key } = await prod.login(wallet.credentialId, () => messages.lastCode());
  const sub = `security-subject-${++subjects}`;
  const token = await issuer.token({ sub, aud: 'acme-web', email: `${sub}@mail.example` }, { iat: nowSeconds() });
  const added = await prod.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }, key);
  expect(added.statusCode, added.body).toBe(201);
  return { sub, credentialId: (added.json() as { id: string }).id };
}

function verify(credentialId: string, oidcToken: string, clientPublicKey: string) {
  return prod.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken, clientPublicKey });
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('OIDC token single use', () => {
  it('refuses a used RS256 token re-sent with other spare bits in its signature segment (same signature bytes)', async () => {
    const { sub, credentialId } = await oauthCredential();
    const receiver = newClientKey();
    const token = await issuer.token({ sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    expect((await verify(credentialId, token, receiver.publicKey)).statusCode).toBe(200);
    // A 256-byte signature is 342 base64url characters: the last carries 4 bits and 2 spare ones.
    const last = ALPHABET.indexOf(token.at(-1)!);
    const respelled = token.slice(0, -1) + ALPHABET[last ^ 1];
    expect(respelled).not.toBe(token);
    const replayed = expectEnvelope(await verify(credentialId, respelled, receiver.publicKey), 401, 'UNAUTHORIZED');
    expect(replayed.details).toEqual({ check: 'replay' });
  });

  it('refuses a used ES256 token re-sent with its malleated signature (r, n − s)', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' };
    // Publish the EC key beside the issuer's RSA one.
    const served = issuer as unknown as { keys: Array<{ kid: string; jwk: unknown }> };
    served.keys.push({ kid: 'ec-1', jwk } as never);
    const { sub, credentialId } = await oauthCredential();
    const receiver = newClientKey();
    const token = await new SignJWT({ sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) })
      .setProtectedHeader({ alg: 'ES256', kid: 'ec-1', typ: 'JWT' })
      .setIssuer(issuer.issuer)
      .setIssuedAt(nowSeconds())
      .setExpirationTime(nowSeconds() + 600)
      .sign(privateKey);
    expect((await verify(credentialId, token, receiver.publicKey)).statusCode).toBe(200);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const raw = Buffer.from(signature, 'base64url');
    const n = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
    const s = BigInt(`0x${raw.subarray(32).toString('hex')}`);
    const malleated = Buffer.concat([raw.subarray(0, 32), Buffer.from((n - s).toString(16).padStart(64, '0'), 'hex')]);
    const replay = `${header}.${payload}.${malleated.toString('base64url')}`;
    const replayed = expectEnvelope(await verify(credentialId, replay, receiver.publicKey), 401, 'UNAUTHORIZED');
    expect(replayed.details).toEqual({ check: 'replay' });
  });
});

describe('OIDC token algorithms', () => {
  it('refuses alg none and HS256 keyed with the issuer’s public key (the signature check, not a 500)', async () => {
    const { sub, credentialId } = await oauthCredential();
    const receiver = newClientKey();
    const claims = { sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey), iss: issuer.issuer, iat: nowSeconds(), exp: nowSeconds() + 600 };
    const segment = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${segment({ alg: 'none', typ: 'JWT' })}.${segment(claims)}.`;
    expect(expectEnvelope(await verify(credentialId, unsigned, receiver.publicKey), 401, 'UNAUTHORIZED').details).toEqual({ check: 'signature' });
    const jwks = (await (await fetch(issuer.jwksUri)).json()) as { keys: Array<{ kid: string }> };
    const publicJwk = JSON.stringify(jwks.keys[0]);
    const hs256 = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: jwks.keys[0]!.kid }).sign(new TextEncoder().encode(publicJwk));
    expect(expectEnvelope(await verify(credentialId, hs256, receiver.publicKey), 401, 'UNAUTHORIZED').details).toEqual({ check: 'signature' });
  });
});

describe('OIDC token validity window', () => {
  it('refuses a token whose nbf is still ahead, and takes one whose nbf has come', async () => {
    const { sub, credentialId } = await oauthCredential();
    const receiver = newClientKey();
    const claims = { sub, aud: 'acme-web', nonce: nonceFor(receiver.publicKey) };
    const early = await issuer.token({ ...claims, nbf: nowSeconds() + 120 }, { iat: nowSeconds() });
    const refused = expectEnvelope(await verify(credentialId, early, receiver.publicKey), 401, 'UNAUTHORIZED');
    expect(refused.details).toEqual({ check: 'nbf' });
    const current = await issuer.token({ ...claims, nbf: nowSeconds() }, { iat: nowSeconds() });
    expect((await verify(credentialId, current, receiver.publicKey)).statusCode).toBe(200);
  });
});
