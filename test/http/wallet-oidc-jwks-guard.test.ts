import type { LookupAddress } from 'node:dns';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../../src/modules/wallet-auth/oidc.js';
import { notifyChanged } from '../../src/platform/cache.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { TestIssuer } from '../helpers/oidc.js';
import { CapturingMessages, WalletClient } from '../helpers/wallet.js';

/**
 * A production platform's JWKS location is fetched like its webhooks: https only, never to
 * loopback, private, link-local or metadata addresses (the host resolved once, only the checked
 * address connected). Refused before any connection, so a refusal says nothing about what
 * listens there.
 */
let ctx: TestContext;
let internal: TestIssuer;
let prod: WalletClient;
const messages = new CapturingMessages();
/** DNS answers for the guard, by host name. */
const dns = new Map<string, LookupAddress[]>();

beforeAll(async () => {
  internal = await TestIssuer.start();
  ctx = await createTestContext({
    messages,
    oidc: new OidcVerifier({
      cooldownMs: 0,
      cacheMaxAgeMs: 600_000,
      timeoutMs: 2_000,
      resolver: async (host) => {
        const answer = dns.get(host);
        if (!answer) throw Object.assign(new Error(`no DNS answer for ${host}`), { code: 'ENOTFOUND' });
        return answer;
      },
    }),
  });
  prod = new WalletClient(ctx, await ctx.newPlatform('production'));
  await prod.enableWallets();
});
afterAll(async () => {
  await ctx.close();
  await internal.close();
});

const nowSeconds = () => Math.floor(ctx.clock.now().getTime() / 1000);
const port = () => new URL(internal.jwksUri).port;

describe('production JWKS locations', () => {
  it('must be https: http, even to localhost, is 400 naming the field', async () => {
    for (const jwksUri of [internal.jwksUri, `http://localhost:${port()}/jwks`, 'http://jwks.idp.example/keys']) {
      const refused = expectEnvelope(await prod.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: internal.issuer, jwksUri }] } }), 400, 'INVALID_INPUT');
      expect((refused.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field), jwksUri).toEqual(['embeddedWalletConfig.oidcIssuers.0.jwksUri']);
    }
  });

  it('that are literally a loopback, private, link-local or metadata address are 400 naming the field, nothing changed', async () => {
    const before = (await prod.call('GET', '/config')).json();
    const cases: Array<[string, RegExp]> = [
      [`https://127.0.0.1:${port()}/jwks`, /loopback address \(127\.0\.0\.1\)/],
      [`https://[::1]:${port()}/jwks`, /loopback address \(::1\)/],
      ['https://169.254.169.254/latest/meta-data', /link-local \(includes the cloud metadata service\) address \(169\.254\.169\.254\)/],
      [`https://localhost:${port()}/jwks`, /loopback address \(localhost\)/],
      ['https://10.0.0.7/jwks', /private address \(10\.0\.0\.7\)/],
      ['https://[::ffff:a9fe:a9fe]/jwks', /link-local/],
    ];
    for (const [jwksUri, reason] of cases) {
      const refused = expectEnvelope(await prod.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: internal.issuer, jwksUri }] } }), 400, 'INVALID_INPUT');
      const errors = (refused.details as { errors: Array<{ field: string; message: string }> }).errors;
      expect(errors.map((e) => e.field), jwksUri).toEqual(['embeddedWalletConfig.oidcIssuers.0.jwksUri']);
      expect(errors[0]!.message, jwksUri).toMatch(reason);
    }
    expect((await prod.call('GET', '/config')).json()).toEqual(before);
  });

  it('are never fetched from loopback, private or metadata addresses a host name resolves to: 503 naming the refusal, nothing reached', async () => {
    dns.set('loop.idp.example', [{ address: '127.0.0.1', family: 4 }]);
    dns.set('loop6.idp.example', [{ address: '::1', family: 6 }]);
    dns.set('internal.idp.example', [{ address: '10.0.0.7', family: 4 }]);
    dns.set('metadata.idp.example', [{ address: '169.254.169.254', family: 4 }]);
    dns.set('mixed.idp.example', [
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
    ]);
    const cases: Array<[string, RegExp]> = [
      [`https://loop.idp.example:${port()}/jwks`, /127\.0\.0\.1, a loopback address/],
      [`https://loop6.idp.example:${port()}/jwks`, /::1, a loopback address/],
      ['https://internal.idp.example/jwks', /10\.0\.0\.7, a private address/],
      ['https://metadata.idp.example/latest/meta-data', /169\.254\.169\.254, a link-local/],
      [`https://mixed.idp.example:${port()}/jwks`, /::1, a loopback address/],
    ];
    const before = internal.jwksRequests;
    for (const [jwksUri, reason] of cases) {
      const configured = await prod.call('PATCH', '/config', { embeddedWalletConfig: { oidcIssuers: [{ issuer: internal.issuer, jwksUri }] } });
      expect(configured.statusCode, configured.body).toBe(200);
      const wallet = await prod.newWallet();
      const token = await internal.token({ sub: 'ssrf', aud: 'acme-web' }, { iat: nowSeconds() });
      const failed = expectEnvelope(await prod.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }), 503, 'SERVICE_UNAVAILABLE');
      expect(failed.message, jwksUri).toMatch(reason);
    }
    expect(internal.jwksRequests).toBe(before);
  });

  /**
   * A production wallet platform whose JWKS location was stored before PATCH /config refused it,
   * and the credential registration that must fetch it: 503 matching `reason`, nothing fetched.
   */
  async function registerWithStoredJwksUri(jwksUri: string, sub: string, reason: RegExp) {
    const client = new WalletClient(ctx, await ctx.newPlatform('production'));
    await client.enableWallets();
    const config = { appName: 'Acme', oidcIssuers: [{ issuer: internal.issuer, jwksUri }] };
    await sql`update platform_configs set embedded_wallet_config = ${JSON.stringify(config)}::jsonb where platform_id = ${client.platform.uuid}`.execute(ctx.handle.db);
    await notifyChanged(ctx.handle.db, 'corridor_platform_config_changed', client.platform.uuid);
    const wallet = await client.newWallet();
    const before = internal.jwksRequests;
    const token = await internal.token({ sub, aud: 'acme-web' }, { iat: nowSeconds() });
    const failed = expectEnvelope(await client.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token }), 503, 'SERVICE_UNAVAILABLE');
    expect(failed.message).toMatch(reason);
    expect(internal.jwksRequests).toBe(before);
    return { client, wallet };
  }

  it('refuses a literal loopback location stored before PATCH refused it: 503 naming the refusal, nothing fetched', async () => {
    await registerWithStoredJwksUri(`https://127.0.0.1:${port()}/jwks`, 'legacy-literal', /127\.0\.0\.1, a loopback address/);
  });

  it('refuses an http location stored before https was required: 503, nothing fetched, nothing registered', async () => {
    const { client, wallet } = await registerWithStoredJwksUri(internal.jwksUri, 'legacy', /https/);
    const list = (await client.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Array<{ type: string }> };
    expect(list.data.map((c) => c.type)).toEqual(['EMAIL_OTP']);
  });
});
