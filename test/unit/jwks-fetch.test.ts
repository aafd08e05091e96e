import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedJwksFetch, JwksFetchError, MAX_JWKS_BYTES } from '../../src/modules/wallet-auth/jwks-fetch.js';

/**
 * The fetch of JWKS that platforms configure: under the guard https only and never to a
 * loopback, private, link-local or metadata address (refused before connecting); always no
 * redirects, only a 200, at most 64 KiB, within the caller's deadline.
 */
let server: Server;
let base = '';
let hits = 0;
const routes: Record<string, (response: import('node:http').ServerResponse) => void> = {
  '/jwks': (r) => r.end(JSON.stringify({ keys: [] })),
  '/big': (r) => r.end(JSON.stringify({ keys: [], pad: 'x'.repeat(MAX_JWKS_BYTES) })),
  '/redirect': (r) => {
    r.statusCode = 302;
    r.setHeader('location', '/jwks');
    r.end();
  },
  '/slow': () => undefined,
};

beforeAll(async () => {
  server = createServer((request, response) => {
    hits++;
    (routes[request.url ?? ''] ?? ((r) => ((r.statusCode = 404), r.end())))(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const dns: Record<string, LookupAddress[]> = {
  'loop.idp.example': [{ address: '127.0.0.1', family: 4 }],
  'private.idp.example': [{ address: '192.168.1.20', family: 4 }],
  'mapped.idp.example': [{ address: '::ffff:7f00:1', family: 6 }],
};
const resolver = async (host: string) => {
  const answer = dns[host];
  if (!answer) throw Object.assign(new Error('no answer'), { code: 'ENOTFOUND' });
  return answer;
};
const init = () => ({ signal: AbortSignal.timeout(2_000) });

describe('guardedJwksFetch', () => {
  it('under the guard: refuses http and every refused address before connecting', async () => {
    const fetchJwks = guardedJwksFetch({ guard: true, resolver });
    const port = new URL(base).port;
    const cases: Array<[string, RegExp]> = [
      [`${base}/jwks`, /must be an https URL/],
      [`https://127.0.0.1:${port}/jwks`, /127\.0\.0\.1, a loopback address/],
      [`https://[::1]:${port}/jwks`, /::1, a loopback address/],
      [`https://[::ffff:127.0.0.1]:${port}/jwks`, /loopback/],
      [`https://169.254.169.254/latest`, /link-local/],
      [`https://loop.idp.example:${port}/jwks`, /127\.0\.0\.1, a loopback address/],
      [`https://private.idp.example:${port}/jwks`, /192\.168\.1\.20, a private address/],
      [`https://mapped.idp.example:${port}/jwks`, /loopback/],
    ];
    const before = hits;
    for (const [url, reason] of cases) {
      const error = await fetchJwks(url, init()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, url).toBeInstanceOf(JwksFetchError);
      expect((error as Error).message, url).toMatch(reason);
    }
    expect(hits).toBe(before);
  });

  it('reads a key set, and refuses a redirect, another status, an answer over 64 KiB and a late one', async () => {
    const fetchJwks = guardedJwksFetch({ guard: false });
    const ok = await fetchJwks(`${base}/jwks`, init());
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ keys: [] });
    await expect(fetchJwks(`${base}/redirect`, init())).rejects.toThrow(/HTTP 302/);
    await expect(fetchJwks(`${base}/missing`, init())).rejects.toThrow(/HTTP 404/);
    await expect(fetchJwks(`${base}/big`, init())).rejects.toThrow(`larger than ${MAX_JWKS_BYTES} bytes`);
    await expect(fetchJwks(`${base}/slow`, { signal: AbortSignal.timeout(100) })).rejects.toMatchObject({ name: 'TimeoutError' });
  });
});
