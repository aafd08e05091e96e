import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('operations endpoints', () => {
  it('GET /healthz says the process is up, without credentials', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz checks the database and migrations', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ready' });
  });

  it('GET /metrics exposes request counts, latency histograms and job queue depth', async () => {
    await ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: ctx.platform.auth } });
    await ctx.app.inject({ method: 'GET', url: `${BASE}/config` });
    const response = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0.0.4/);
    const text = response.body;
    expect(text).toMatch(/corridor_http_requests_total\{method="GET",route="\/2025-10-13\/config",status="200"\} [1-9]/);
    expect(text).toMatch(/corridor_http_requests_total\{method="GET",route="\/2025-10-13\/config",status="401"\} [1-9]/);
    expect(text).toMatch(/corridor_http_request_duration_seconds_bucket\{method="GET",route="\/2025-10-13\/config",status="200",le="\+Inf"\} [1-9]/);
    expect(text).toMatch(/corridor_jobs\{status="queued"\} \d+/);
  });
});

describe('API reference', () => {
  it('serves the OpenAPI 3.1 document at {base}/openapi.json, matching the committed file', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` });
    expect(response.statusCode).toBe(200);
    const served = response.json() as { openapi: string; paths: Record<string, unknown>; components: { securitySchemes: object } };
    expect(served.openapi).toBe('3.1.0');
    expect(Object.keys(served.paths)).toEqual(expect.arrayContaining(['/tokens', '/tokens/{tokenId}', '/config']));
    expect(served.components.securitySchemes).toHaveProperty('BasicAuth');
    const committed = JSON.parse(await readFile(new URL('../../openapi.json', import.meta.url), 'utf8')) as { paths: object };
    expect(served.paths).toEqual(committed.paths);
  });

  it('documents an error response for every status a route can answer', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as {
      paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
    };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(operation.operationId, `${method} ${path}`).toBeTruthy();
        expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '500']));
      }
    }
  });

  it('renders the reference at /docs', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/docs/' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/text\/html/);
  });
});
