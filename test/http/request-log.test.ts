import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { multipartBody } from '../helpers/multipart.js';

/**
 * What a request leaves in the log, and in /metrics:
 * - LOG_LEVEL=trace is a setting an operator may choose while chasing a fault: what the libraries
 *   under Corridor log at that level goes through the same redaction as Corridor's own lines.
 * - Requests Fastify's router refuses before any hook runs (a path that is not percent-encoded
 *   UTF-8, a path segment longer than the router keeps) are answered like every other: with their
 *   request id, a request log line, and a count under the `unmatched` route in /metrics. A scanner
 *   that sprays malformed paths was seen by neither the log nor the metrics.
 * - A request's log line gives its path without the query string, whose filters name people; the
 *   path's own segments that name a person (a UMA address or user name) or hold a claimable code
 *   (an invitation's) are left out too, whether or not a route matched and whatever the answer.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
afterAll(() => ctx.close());

describe('an upload at trace level', () => {
  it('leaves its Authorization and Cookie headers out of every line, the multipart parser’s included', async () => {
    const cookie = 'session=cookie-secret-0123456789';
    const { payload, headers } = multipartBody([{ name: 'documentType', value: 'PASSPORT' }]);
    const from = logLines.length;
    const answer = await ctx.app.inject({ method: 'POST', url: `${BASE}/documents`, headers: { ...headers, authorization: ctx.platform.auth, cookie }, payload });
    expect(answer.statusCode).toBe(400);
    const written = logLines.slice(from);
    const text = written.join('\n');
    expect(text).not.toContain(ctx.platform.auth.slice('Basic '.length));
    expect(text).not.toContain(ctx.platform.secret);
    expect(text).not.toContain('cookie-secret');
    // The parser's own line is there, without the headers: the checks above looked at what it logs.
    const parser = written.map((line) => JSON.parse(line) as { msg: string; busboyOptions?: { headers?: unknown } }).find((line) => line.msg === 'Providing options to busboy');
    expect(parser?.busboyOptions?.headers).toBe('[redacted]');
  });
});

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
    // Refused by the error handling's hook, before any route: no such path, a method the path
    // does not take, a target over the bound, a header sent twice.
    const hookRefused: Array<InjectOptions & { url: string; status: number }> = [
      { method: 'GET', url: '/nothing', status: 404 },
      { method: 'DELETE', url: `${BASE}/customers`, status: 405 },
      { method: 'GET', url: `${BASE}/customers?q=${'a'.repeat(9000)}`, status: 414 },
      { method: 'GET', url: `${BASE}/config`, // light-my-request sends an array as the header repeated; its types take one value.
      headers: { authorization: [ctx.platform.auth, ctx.platform.auth] as unknown as string }, status: 400 },
    ];
    for (const { status, ...request } of hookRefused) {
      const answer = await ctx.app.inject(request);
      expect(answer.statusCode, request.url.slice(0, 40)).toBe(status);
      expect(answer.headers['x-request-id'], request.url.slice(0, 40)).toEqual(expect.any(String));
    }
    const metrics = (await ctx.app.inject({ url: '/metrics' })).body;
    expect(metrics).toContain('corridor_http_requests_total{method="GET",route="unmatched",status="400"} 1\n');
    expect(metrics).toContain('corridor_http_requests_total{method="GET",route="unmatched",status="414"} 1\n');
  });
});

describe('the request log line', () => {
  it('leaves out UMA addresses, UMA user names and invitation codes in the path', async () => {
    const calls = [
      { method: 'GET', url: `${BASE}/receiver/uma/${encodeURIComponent('$alice.liddell@remote.example')}` },
      { method: 'GET', url: `${BASE}/invitations/k3v9q2m8xz` },
      { method: 'POST', url: `${BASE}/invitations/k3v9q2m8xz/claim` },
      { method: 'DELETE', url: `${BASE}/invitations/k3v9q2m8xz/cancel` },
      { method: 'GET', url: '/.well-known/lnurlp/alice.liddell?amount=1000' },
      { method: 'GET', url: '/uma/payreq/alice.liddell' },
    ] as const;
    logLines.length = 0;
    for (const call of calls) await ctx.app.inject(call);
    const requests = logLines.filter((line) => line.includes('"msg":"request"'));
    expect(requests).toHaveLength(calls.length);
    expect(logLines.filter((line) => /alice|k3v9q2m8xz/.test(line))).toEqual([]);
    const urls = requests.map((line) => (JSON.parse(line) as { url: string }).url);
    expect(urls).toEqual([
      `${BASE}/receiver/uma/[redacted]`,
      `${BASE}/invitations/[redacted]`,
      `${BASE}/invitations/[redacted]/claim`,
      `${BASE}/invitations/[redacted]/cancel`,
      '/.well-known/lnurlp/[redacted]',
      '/uma/payreq/[redacted]',
    ]);
  });
});
