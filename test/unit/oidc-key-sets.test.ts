import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../../src/modules/wallet-auth/oidc.js';
import { TestIssuer } from '../helpers/oidc.js';

/** Platform-configured issuers' key sets: one process keeps a bounded number, the least recently used dropped first. */
describe('OidcVerifier key sets', () => {
  let issuers: TestIssuer[];
  beforeAll(async () => {
    issuers = await Promise.all([TestIssuer.start(), TestIssuer.start(), TestIssuer.start()]);
  });
  afterAll(() => Promise.all(issuers.map((i) => i.close())));

  it('keeps at most maxKeySets; a dropped issuer is fetched again, a recently used one is not', async () => {
    const verifier = new OidcVerifier({ cooldownMs: 0, cacheMaxAgeMs: 600_000, timeoutMs: 5_000, maxKeySets: 2, platformJwksFetch: (href, init) => fetch(href, init) });
    const trusted = issuers.map((i) => ({ issuer: i.issuer, jwksUri: i.jwksUri }));
    const now = new Date();
    const verify = async (issuer: TestIssuer) => {
      const token = await issuer.token({ sub: 'user-1', aud: 'client-1' }, { iat: Math.floor(now.getTime() / 1000) });
      await verifier.verify(token, { trusted, now, checkSignature: true });
    };
    const [a, b, c] = issuers as [TestIssuer, TestIssuer, TestIssuer];
    await verify(a);
    await verify(b);
    await verify(a); // a is now the most recently used
    await verify(c); // drops b, the least recently used
    await verify(a);
    expect([a.jwksRequests, b.jwksRequests, c.jwksRequests]).toEqual([1, 1, 1]);
    await verify(b);
    expect(b.jwksRequests).toBe(2);
  });
});
