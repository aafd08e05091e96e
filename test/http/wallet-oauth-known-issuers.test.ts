import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifyChanged } from '../../src/platform/cache.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { TestIssuer } from '../helpers/oidc.js';
import { CapturingMessages, newClientKey, openSessionKey, WalletClient } from '../helpers/wallet.js';

/**
 * OAUTH without setup (issue 12 C20): Google and Apple are known issuers; a platform names only
 * its client ids. The known issuers' JWKS locations are replaced by local issuers through the
 * config (CORRIDOR_OIDC_JWKS_OVERRIDES), so no test reaches the network, and production
 * platforms check every signature against them.
 */
const GOOGLE = 'https://accounts.google.com';
const APPLE = 'https://appleid.apple.com';
let ctx: TestContext;
let google: TestIssuer;
let apple: TestIssuer;
let prod: WalletClient;
const messages = new CapturingMessages();

beforeAll(async () => {
  google = await TestIssuer.start();
  apple = await TestIssuer.start();
  ctx = await createTestContext({ messages, env: { CORRIDOR_OIDC_JWKS_OVERRIDES: JSON.stringify({ [GOOGLE]: google.jwksUri, [APPLE]: apple.jwksUri }) } });
  prod = new WalletClient(ctx, await ctx.newPlatform('production'));
  await prod.enableWallets();
  const configured = await prod.call('PATCH', '/config', {
    embeddedWalletConfig: {
      oidcIssuers: [
        { issuer: GOOGLE, audiences: ['acme-web.apps.googleusercontent.com'] },
        { issuer: APPLE, audiences: ['com.acme.wallet'] },
      ],
    },
  });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(async () => {
  await ctx.close();
  await google.close();
  await apple.close();
});

type Body = Record<string, unknown>;
const nowSeconds = () => Math.floor(ctx.clock.now().getTime() / 1000);
const nonceFor = (key: string) => createHash('sha256').update(key).digest('hex');

/** A production wallet whose end user logged in with EMAIL_OTP and added an OAUTH credential from `token`. */
async function register(token: string) {
  const wallet = await prod.newWallet();
  const { key } = await prod.login(wallet.credentialId, () => messages.lastCode());
  const body = { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token };
  return { wallet, key, body, added: await prod.signed('POST', '/auth/credentials', body, key) };
}

describe('known OIDC issuers', () => {
  it('takes Google and Apple with client ids only, and refuses a known issuer without them or an unknown one without a JWKS', async () => {
    const config = (await prod.call('GET', '/config')).json() as { embeddedWalletConfig: Body };
    expect(config.embeddedWalletConfig.oidcIssuers).toEqual([
      { issuer: GOOGLE, audiences: ['acme-web.apps.googleusercontent.com'] },
      { issuer: APPLE, audiences: ['com.acme.wallet'] },
    ]);
    const refused = expectEnvelope(
      await prod.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: 'accounts.google.com' }, { issuer: 'https://id.example.com' }] } }),
      400,
      'INVALID_INPUT',
    );
    expect((refused.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual([
      'embeddedWalletConfig.oidcIssuers.0.audiences',
      'embeddedWalletConfig.oidcIssuers.1.jwksUri',
    ]);
  });

  it('registers a Google identity and logs in with a token of either issuer spelling, signatures checked against the configured JWKS', async () => {
    const before = google.jwksRequests;
    const token = await google.token({ iss: GOOGLE, sub: 'g-1', aud: 'acme-web.apps.googleusercontent.com', email: 'g1@gmail.example' }, { iat: nowSeconds() });
    const { added } = await register(token);
    expect(added.statusCode, added.body).toBe(201);
    const credential = added.json() as Body & { id: string };
    expect(credential).toMatchObject({ type: 'OAUTH', nickname: 'g1@gmail.example' });
    expect(google.jwksRequests).toBeGreaterThan(before);
    for (const iss of [GOOGLE, 'accounts.google.com']) {
      const receiver = newClientKey();
      const login = await google.token({ iss, sub: 'g-1', aud: 'acme-web.apps.googleusercontent.com', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
      const verified = await prod.call('POST', `/auth/credentials/${credential.id}/verify`, { type: 'OAUTH', oidcToken: login, clientPublicKey: receiver.publicKey });
      expect(verified.statusCode, `${iss}: ${verified.body}`).toBe(200);
      expect(verified.json()).toMatchObject({ type: 'OAUTH', encryptedSessionSigningKey: expect.any(String) });
    }
    // A token signed by another key than the issuer's JWKS holds is refused.
    const forger = await TestIssuer.start();
    const receiver = newClientKey();
    const forged = await forger.token({ iss: GOOGLE, sub: 'g-1', aud: 'acme-web.apps.googleusercontent.com', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    await forger.close();
    const failed = expectEnvelope(await prod.call('POST', `/auth/credentials/${credential.id}/verify`, { type: 'OAUTH', oidcToken: forged, clientPublicKey: receiver.publicKey }), 401, 'UNAUTHORIZED');
    expect(failed.details).toEqual({ check: 'signature' });
  });

  it('registers an Apple identity', async () => {
    const token = await apple.token({ iss: APPLE, sub: 'a-1', aud: 'com.acme.wallet', email: 'a1@privaterelay.example' }, { iat: nowSeconds() });
    const { added } = await register(token);
    expect(added.statusCode, added.body).toBe(201);
    const receiver = newClientKey();
    const login = await apple.token({ iss: APPLE, sub: 'a-1', aud: 'com.acme.wallet', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    const verified = await prod.call('POST', `/auth/credentials/${(added.json() as { id: string }).id}/verify`, { type: 'OAUTH', oidcToken: login, clientPublicKey: receiver.publicKey });
    expect(verified.statusCode, verified.body).toBe(200);
  });

  it('refuses a token issued to another app: 400 at registration, 401 audience at verify', async () => {
    const foreign = await google.token({ iss: GOOGLE, sub: 'g-2', aud: 'someone-else.apps.googleusercontent.com' }, { iat: nowSeconds() });
    // Checked on the first call, before any signature is asked for.
    const wallet = await prod.newWallet();
    const refused = expectEnvelope(await prod.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: foreign }), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [{ field: 'oidcToken', message: 'audience is not a client id of this platform' }] });

    const token = await google.token({ iss: GOOGLE, sub: 'g-3', aud: 'acme-web.apps.googleusercontent.com' }, { iat: nowSeconds() });
    const { added } = await register(token);
    const receiver = newClientKey();
    const other = await google.token({ iss: GOOGLE, sub: 'g-3', aud: 'someone-else.apps.googleusercontent.com', nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    const failed = expectEnvelope(
      await prod.call('POST', `/auth/credentials/${(added.json() as { id: string }).id}/verify`, { type: 'OAUTH', oidcToken: other, clientPublicKey: receiver.publicKey }),
      401,
      'UNAUTHORIZED',
    );
    expect(failed.details).toEqual({ check: 'audience' });
  });
});

/**
 * Audit (critical): a platform backend repointed Google's JWKS at keys of its own, signed a
 * "Google" token for a victim's identity and exported the victim's wallet. A known issuer's keys
 * come only from its built-in JWKS: PATCH /config refuses a jwksUri on one, and one stored before
 * is never used.
 */
describe('a known issuer’s keys are never the platform’s', () => {
  it('refuses a jwksUri on Google (either spelling) or Apple with 400 naming the field', async () => {
    const forger = await TestIssuer.start();
    const refused = expectEnvelope(
      await prod.call('PATCH', '/config', {
        embeddedWalletConfig: {
          oidcIssuers: [
            { issuer: GOOGLE, audiences: ['acme-web.apps.googleusercontent.com'], jwksUri: forger.jwksUri },
            { issuer: 'accounts.google.com', audiences: ['acme-web.apps.googleusercontent.com'], jwksUri: 'https://keys.platform.example/jwks' },
            { issuer: APPLE, audiences: ['com.acme.wallet'], jwksUri: 'https://keys.platform.example/jwks' },
          ],
        },
      }),
      400,
      'INVALID_INPUT',
    );
    await forger.close();
    expect((refused.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual([
      'embeddedWalletConfig.oidcIssuers.0.jwksUri',
      'embeddedWalletConfig.oidcIssuers.1.jwksUri',
      'embeddedWalletConfig.oidcIssuers.2.jwksUri',
    ]);
    const config = (await prod.call('GET', '/config')).json() as { embeddedWalletConfig: Body };
    expect(config.embeddedWalletConfig.oidcIssuers).toEqual([
      { issuer: GOOGLE, audiences: ['acme-web.apps.googleusercontent.com'] },
      { issuer: APPLE, audiences: ['com.acme.wallet'] },
    ]);
  });

  it('checks Google tokens against Google’s keys even when a config stored before points Google at the platform’s JWKS: no forged login, no export', async () => {
    const client = new WalletClient(ctx, await ctx.newPlatform('production'));
    await client.enableWallets();
    const audiences = ['acme-web.apps.googleusercontent.com'];
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: GOOGLE, audiences }] } })).statusCode).toBe(200);
    // The victim adds a Google credential with a genuine token.
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId, () => messages.lastCode());
    const genuine = await google.token({ iss: GOOGLE, sub: 'victim', aud: audiences[0], email: 'victim@gmail.example' }, { iat: nowSeconds() });
    const added = await client.signed('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: genuine }, key);
    expect(added.statusCode, added.body).toBe(201);
    const credentialId = (added.json() as { id: string }).id;

    // The platform's own keys, named as Google's JWKS in a config saved before the refusal.
    const forger = await TestIssuer.start();
    const stored = { appName: 'Acme Wallet', oidcIssuers: [{ issuer: GOOGLE, audiences, jwksUri: forger.jwksUri }] };
    await sql`update platform_configs set embedded_wallet_config = ${JSON.stringify(stored)}::jsonb where platform_id = ${client.platform.uuid}`.execute(ctx.handle.db);
    await notifyChanged(ctx.handle.db, 'corridor_platform_config_changed', client.platform.uuid);
    const own = newClientKey();
    const forged = await forger.token({ iss: GOOGLE, sub: 'victim', aud: audiences[0], nonce: nonceFor(own.publicKey) }, { iat: nowSeconds() });
    const verified = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: forged, clientPublicKey: own.publicKey });
    const failed = expectEnvelope(verified, 401, 'UNAUTHORIZED');
    expect(failed.details).toEqual({ check: 'signature' });
    expect(forger.jwksRequests).toBe(0);
    await forger.close();
    // With no session, the platform's key exports nothing.
    const exportBody = { clientPublicKey: own.publicKeyUncompressed };
    expectEnvelope(await client.signed('POST', `/internal-accounts/${wallet.accountId}/export`, exportBody, own), 401, 'WALLET_SIGNATURE_INVALID');

    // The victim's own Google logins still work.
    const receiver = newClientKey();
    const login = await google.token({ iss: GOOGLE, sub: 'victim', aud: audiences[0], nonce: nonceFor(receiver.publicKey) }, { iat: nowSeconds() });
    const session = await client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'OAUTH', oidcToken: login, clientPublicKey: receiver.publicKey });
    expect(session.statusCode, session.body).toBe(200);
    expect(openSessionKey(String((session.json() as Body).encryptedSessionSigningKey), receiver).publicKey).toMatch(/^0[23]/);
  });
});
