import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { nextWholeSecond } from '../helpers/oidc.js';
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

// The edges of the OIDC token checks (spec §4.4 OAUTH rule 3, §8 "OIDC token age": `iat` at most
// 60 seconds before the request) that a mutation audit found no test reaching: the last instant a
// token is fresh, the instant it expires, and an audience the platform did not configure; each
// checked as an OAUTH credential is added (the first leg).

async function addOauth(claims: Record<string, unknown>) {
  const wallet = await client.newWallet();
  return client.call('POST', '/auth/credentials', { type: 'OAUTH', accountId: wallet.accountId, oidcToken: unsigned(claims) });
}

const identity = (n: number) => ({ iss: ISSUER, sub: `edge-subject-${n}`, aud: 'acme-web' });

describe('OIDC token age (§8: iat at most 60 seconds before the request)', () => {
  it('accepts a token issued exactly 60 seconds before the request', async () => {
    const now = nextWholeSecond(ctx.clock);
    const added = await addOauth({ ...identity(1), iat: now - 60, exp: now + 600 });
    expect(added.statusCode, added.body).toBe(202);
  });

  it('refuses the same token one millisecond later: 401 naming iat', async () => {
    const now = nextWholeSecond(ctx.clock);
    ctx.clock.set(new Date(now * 1000 + 1));
    const refused = expectEnvelope(await addOauth({ ...identity(2), iat: now - 60, exp: now + 600 }), 401, 'UNAUTHORIZED');
    expect(refused.details).toEqual({ check: 'iat' });
  });
});

describe('OIDC token expiry', () => {
  it('refuses a token at its exp exactly (401 naming exp), and takes it a second before', async () => {
    const now = nextWholeSecond(ctx.clock);
    const expired = expectEnvelope(await addOauth({ ...identity(3), iat: now - 10, exp: now }), 401, 'UNAUTHORIZED');
    expect(expired.details).toEqual({ check: 'exp' });
    const fresh = await addOauth({ ...identity(4), iat: now - 10, exp: now + 1 });
    expect(fresh.statusCode, fresh.body).toBe(202);
  });
});

describe('OIDC token audience', () => {
  it("refuses to register a token whose single aud is not one of the issuer's configured audiences (400 on oidcToken), and takes a configured one", async () => {
    const now = nextWholeSecond(ctx.clock);
    const refused = expectEnvelope(await addOauth({ ...identity(5), aud: 'another-client', iat: now, exp: now + 600 }), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [{ field: 'oidcToken', message: 'audience is not a client id of this platform' }] });
    const taken = await addOauth({ ...identity(6), iat: now, exp: now + 600 });
    expect(taken.statusCode, taken.body).toBe(202);
  });
});
