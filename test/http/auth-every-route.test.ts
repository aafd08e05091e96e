import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * The permission sweep (permissions-sweep.test.ts) walks the OpenAPI document; a route left out
 * of it (`hide: true`) is not there. This walks every route the application registers under the
 * versioned base path instead: each answers a request without credentials 401 UNAUTHORIZED,
 * except the few that carry their own credential, named here with the reason.
 */
const WITHOUT_API_TOKEN: Record<string, string> = {
  [`GET ${BASE}/openapi.json`]: 'the API description is public (docs/conventions.md)',
  [`GET ${BASE}/kyc/:token`]: 'hosted KYC page: the link token in the path is its credential (verifications README)',
  [`POST ${BASE}/kyc/:token/fields`]: 'hosted KYC page',
  [`POST ${BASE}/kyc/:token/documents`]: 'hosted KYC page',
  [`PUT ${BASE}/kyc/:token/documents/:documentId`]: 'hosted KYC page',
  [`POST ${BASE}/kyc/:token/submit`]: 'hosted KYC page',
  [`GET ${BASE}/ownership/liveness/:token`]: 'hosted liveness page: the link token is its credential (external-accounts README)',
  [`POST ${BASE}/ownership/liveness/:token`]: 'hosted liveness page',
};

/** `printRoutes({commonPrefix: false})` as [METHOD, full path] pairs: each tree level is four columns deeper. */
function registeredRoutes(tree: string): Array<[string, string]> {
  const parents: string[] = [];
  const routes: Array<[string, string]> = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const path = (parents[depth - 1] ?? '') + match[2]!;
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of (match[3] ?? '').split(', ').filter((m) => m && m !== 'HEAD')) routes.push([method, path]);
  }
  return routes;
}

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('authentication over every registered route of the versioned API', () => {
  it('answers each without credentials 401 UNAUTHORIZED, but for the routes that carry their own credential', async () => {
    const routes = registeredRoutes(ctx.app.printRoutes({ commonPrefix: false })).filter(([, path]) => path.startsWith(`${BASE}/`));
    expect(routes.length).toBeGreaterThan(90);
    const keys = routes.map(([method, path]) => `${method} ${path}`);
    expect(Object.keys(WITHOUT_API_TOKEN).filter((key) => !keys.includes(key)), 'exemptions no longer registered').toEqual([]);
    const wrong: string[] = [];
    for (const [method, path] of routes) {
      const key = `${method} ${path}`;
      const url = path.replace(/:([A-Za-z]+)/g, 'x');
      const response = await ctx.app.inject({ method: method as 'GET', url, ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }) });
      const refused = response.statusCode === 401 && (response.json() as { code?: string }).code === 'UNAUTHORIZED';
      if (refused === key in WITHOUT_API_TOKEN) wrong.push(`${key}: ${response.statusCode}${key in WITHOUT_API_TOKEN ? ' (exempt, yet refused)' : ''}`);
    }
    expect(wrong).toEqual([]);
  });
});
