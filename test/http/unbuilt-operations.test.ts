/**
 * The upstream's operations Corridor does not build (modules/unbuilt, docs/not-built.md). An
 * integrator points the upstream's SDK at Corridor with only the base URL changed: an operation
 * Corridor lacks must say so (501 NOT_IMPLEMENTED naming it and its group), not 404, which reads
 * as a wrong path or a missing resource.
 *
 * - Every upstream operation is served (in the OpenAPI document the running service serves) or
 *   listed as unbuilt, and every listed one is the upstream's under the same operationId; so a
 *   module that builds one must take it off the list, and no upstream operation silently 404s.
 * - No listed operation is served or shows in Corridor's OpenAPI document.
 * - Each listed operation answers 401 without valid credentials and 501 with any token's.
 * - Methods the upstream lacks on those paths get the router's 405 (with `Allow`) or 404.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { UNBUILT_OPERATIONS, type UnbuiltOperation } from '../../src/modules/unbuilt/index.js';
import { basic, BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { upstreamDocument } from '../helpers/upstream-conformance.js';

type Document = { paths: Record<string, Record<string, { operationId?: string }>> };
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
/** `METHOD /path` with parameters by position only (`{}`): the two documents name them differently. */
const keyOf = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`;
const operationsOf = (document: Document) =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ key: keyOf(method, path), operationId: operation.operationId })),
  );
const UNBUILT = new Map(UNBUILT_OPERATIONS.map((operation) => [keyOf(operation.method, operation.path), operation]));

/** The operation's URL with each parameter an id of the shape the upstream uses. */
const urlOf = (operation: UnbuiltOperation) => `${BASE}${operation.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(`Card:${randomUUID()}`))}`;
/** What the upstream SDK sends: a JSON body on writes, query parameters on reads. */
const sdkRequest = (operation: UnbuiltOperation, headers: Record<string, string>) => ({
  method: operation.method,
  url: operation.method === 'GET' ? `${urlOf(operation)}?limit=20` : urlOf(operation),
  headers,
  ...(operation.method === 'POST' || operation.method === 'PATCH' ? { payload: { nickname: 'x' } } : {}),
});

let ctx: TestContext;
let served: Document;
beforeAll(async () => {
  ctx = await createTestContext();
  const document = await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` });
  expect(document.statusCode).toBe(200);
  served = document.json() as Document;
});
afterAll(() => ctx.close());

describe.runIf(Boolean(inject('upstreamOpenapi')))('the unbuilt list against the upstream document', () => {
  it('accounts for every upstream operation: served by Corridor or listed as unbuilt, each listed one the upstream’s', () => {
    const upstream = operationsOf(upstreamDocument() as unknown as Document);
    const servedKeys = new Set(operationsOf(served).map((operation) => operation.key));
    const unaccounted = upstream.filter(({ key }) => !servedKeys.has(key) && !UNBUILT.has(key)).map(({ key, operationId }) => `${key} (${operationId})`);
    expect(unaccounted, 'upstream operations neither served nor listed in modules/unbuilt/operations.ts').toEqual([]);
    const upstreamIds = new Map(upstream.map(({ key, operationId }) => [key, operationId]));
    const wrong = UNBUILT_OPERATIONS.filter((operation) => upstreamIds.get(keyOf(operation.method, operation.path)) !== operation.operationId);
    expect(wrong.map((operation) => `${operation.method} ${operation.path} (${operation.operationId})`), 'listed, but not the upstream’s operation').toEqual([]);
  });
});

describe('operations Corridor does not build', () => {
  it('are listed once each, none of them served or in Corridor’s OpenAPI document', () => {
    expect(UNBUILT.size).toBe(UNBUILT_OPERATIONS.length);
    const servedKeys = operationsOf(served).map((operation) => operation.key);
    expect(servedKeys.filter((key) => UNBUILT.has(key))).toEqual([]);
    // Hidden: not one of their paths is in the document, under any method.
    const unbuiltPaths = new Set(UNBUILT_OPERATIONS.map((operation) => keyOf('', operation.path)));
    expect(Object.keys(served.paths).filter((path) => unbuiltPaths.has(keyOf('', path)))).toEqual([]);
    expect(new Set(UNBUILT_OPERATIONS.map((operation) => operation.group))).toEqual(
      new Set(['Agent Management', 'Agent Operations', 'Cards', 'Sandbox card simulations', 'Stablecoins', 'Delegated keys']),
    );
  });

  it('answers each 401 UNAUTHORIZED without credentials or with wrong ones', async () => {
    const credentials: Array<Record<string, string>> = [{}, { authorization: basic(ctx.platform.clientId, 'not-the-secret') }];
    const wrong: string[] = [];
    for (const operation of UNBUILT_OPERATIONS) {
      for (const headers of credentials) {
        const response = await ctx.app.inject(sdkRequest(operation, headers));
        const body = response.json() as { status?: number; code?: string };
        if (response.statusCode !== 401 || body.status !== 401 || body.code !== 'UNAUTHORIZED') wrong.push(`${operation.operationId}: ${response.statusCode} ${response.body.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('answers each 501 NOT_IMPLEMENTED naming the operation and its group, to any token of any platform', async () => {
    const viewOnly = await ctx.newToken(ctx.platform, ['VIEW']);
    const production = await ctx.newPlatform('production');
    const wrong: string[] = [];
    for (const operation of UNBUILT_OPERATIONS) {
      for (const caller of [ctx.platform, viewOnly, production]) {
        const response = await ctx.app.inject(sdkRequest(operation, { authorization: caller.auth }));
        const body = response.json() as { status?: number; code?: string; message?: string; details?: unknown };
        const ok =
          response.statusCode === 501 &&
          body.status === 501 &&
          body.code === 'NOT_IMPLEMENTED' &&
          body.message === `${operation.operationId} (${operation.method} ${operation.path}) is one of the upstream's ${operation.group} operations, which Corridor does not implement yet.` &&
          JSON.stringify(body.details) === JSON.stringify({ operation: operation.operationId, group: operation.group }) &&
          response.headers['x-should-retry'] === 'false';
        if (!ok) wrong.push(`${operation.operationId}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('leaves what the upstream lacks on these paths to the router: 405 with Allow, or 404', async () => {
    const auth = { authorization: ctx.platform.auth };
    const id = `Card:${randomUUID()}`;
    const cases: Array<[method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, status: number, allow?: string]> = [
      ['PUT', `/cards/${id}`, 405, 'GET, PATCH'],
      ['DELETE', '/cards', 405, 'GET, POST'],
      ['GET', `/sandbox/cards/${id}/simulate/clearing`, 405, 'POST'],
      ['PATCH', '/stablecoin-provider-accounts', 405, 'GET, POST'],
      ['GET', `/auth/delegated-keys/${id}/rotate`, 404],
      ['POST', `/cards/${id}/freeze`, 404],
      // An empty id is no id: the path does not exist.
      ['GET', '/cards/', 404],
    ];
    for (const [method, path, status, allow] of cases) {
      const response = await ctx.app.inject({ method, url: `${BASE}${path}`, headers: auth });
      expect(response.statusCode, `${method} ${path}: ${response.body}`).toBe(status);
      expect(response.headers.allow, `${method} ${path}`).toBe(allow);
    }
  });
});
