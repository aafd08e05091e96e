import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * Requests Fastify's router refuses before any hook runs (a path that is not percent-encoded
 * UTF-8, a path segment longer than the router keeps) are answered like every other: with their
 * request id, a request log line, and a count under the `unmatched` route in /metrics. A scanner
 * that sprays malformed paths was seen by neither the log nor the metrics.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
afterAll(() => ctx.close());

describe('a request the router refuses', () => {
  it('carries its request id and is logged and counted like any other', async () => {
    const refused = [
      { url: '/%zz', status: 400 },
      { url: `${BASE}/customers/${'a'.repeat(9000)}`, status: 414 },
    ];
    for (const { url, status } of refused) {
      const from = logLines.length;
      const answer = await ctx.app.inject({ method: 'GET', url });
      expect(answer.statusCode).toBe(status);
      expect(answer.headers['x-request-id']).toEqual(expect.any(String));
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['cache-control']).toBe('no-store');
      const lines = logLines.slice(from).map((line) => JSON.parse(line) as { msg: string; reqId: string; status: number });
      expect(lines.filter((line) => line.msg === 'request')).toEqual([expect.objectContaining({ reqId: answer.headers['x-request-id'], status })]);
    }
    const metrics = (await ctx.app.inject({ url: '/metrics' })).body;
    expect(metrics).toContain('corridor_http_requests_total{method="GET",route="unmatched",status="400"} 1\n');
    expect(metrics).toContain('corridor_http_requests_total{method="GET",route="unmatched",status="414"} 1\n');
  });
});
