import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { WalletClient } from '../helpers/wallet.js';

/**
 * The claims an OIDC token must carry to name one identity of one client (oidc.ts): a single
 * audience (a token also issued to another client is not this platform's to accept, OpenID
 * Connect Core §3.1.3.7 step 3), a subject, a numeric iat and, when present, a numeric nbf. A
 * sandbox platform checks no signature, so unsigned tokens isolate the claim checks, which are
 * the same in production.
 */
let ctx: TestContext;
let client: WalletClient;
const ISSUER = 'https://idp.claims.example';

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, await ctx.newPlatform());
  await client.enableWallets();
  const configured = await client.call('PATCH', '/config', {
    embeddedWalletConfig: { oidcIssuers: [{ issuer: ISSUER, jwksUri: `${ISSUER}/jwks`, audiences: ['acme-web'] }] },
  });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(() => ctx?.close());

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const unsigned = (claims: Record<string, unknown>) => `${part({ alg: 'RS256', typ: 'JWT' })}.${part(claims)}.${Buffer.from('not checked').toString('base64url')}`;

describe('OIDC token claims at an OAUTH add', () => {
  it('refuses a token of several audiences, or without sub, iat or a numeric nbf (401 naming the check); takes one audience in an array', async () => {
    const wallet = await client.newWallet();
    const now = Math.floor(ctx.clock.now().getTime() / 1000);
    const base = { iss: ISSUER, sub: 'subject-1', aud: 'acme-web', iat: now, exp: now + 600 };
    const add = (claims: Record<string, unknown>) => client.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: unsigned(claims) });
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ ...base, aud: ['acme-web', 'other-client'] }, 'identity'],
      [{ ...base, aud: [] }, 'identity'],
      [{ ...base, sub: undefined }, 'identity'],
      [{ ...base, sub: '' }, 'identity'],
      [{ ...base, iat: undefined }, 'iat'],
      [{ ...base, iat: String(now) }, 'iat'],
      [{ ...base, nbf: String(now) }, 'nbf'],
    ];
    for (const [claims, check] of refusals) {
      expect(expectEnvelope(await add(claims), 401, 'UNAUTHORIZED').details, JSON.stringify(claims)).toEqual({ check });
    }
    const taken = await add({ ...base, aud: ['acme-web'] });
    expect(taken.statusCode, taken.body).toBe(202);
  });
});
