/**
 * The OpenAPI document (issue 12 B16): valid OpenAPI 3.1 by the published schema, and every
 * example in it, replayed against the running service, gets a status the document lists — the
 * success status when the request names no resource by id.
 */
import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { exampleOf } from '../helpers/openapi-example.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
  schema?: { examples?: unknown[] };
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }>; schema?: { examples?: unknown[] } }> };
  responses: Record<string, unknown>;
}
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

async function committedDocument(): Promise<Document> {
  return JSON.parse(await readFile(new URL('../../openapi.json', import.meta.url), 'utf8')) as Document;
}

describe('openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const document = await committedDocument();
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(document as never);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('declares what the issue found missing: the CSV body, multipart part types, Idempotency-Key, format patterns, the settle-delay range', async () => {
    const { paths } = await committedDocument();
    const csv = paths['/customers/bulk/csv']!.post!.requestBody!.content;
    expect(Object.keys(csv)).toEqual(['multipart/form-data']);
    expect(JSON.stringify(csv)).toContain('"file"');
    // Multipart file parts say which Content-Types they take (OpenAPI `encoding`), not only in prose.
    const multipartEncoding = (path: string, method: 'post' | 'put') =>
      (paths[path]![method]!.requestBody!.content['multipart/form-data'] as { encoding?: Record<string, { contentType: string }> }).encoding;
    expect(multipartEncoding('/customers/bulk/csv', 'post')).toEqual({ file: { contentType: 'text/csv' } });
    for (const [path, method] of [['/documents', 'post'], ['/documents/{documentId}', 'put']] as const) {
      expect(multipartEncoding(path, method), `${method} ${path}`).toEqual({ file: { contentType: 'application/pdf, image/jpeg, image/png' } });
    }
    const idempotent = [
      ['/customers', 'post'],
      ['/sandbox/internal-accounts/{accountId}/fund', 'post'],
      ['/sandbox/deposits', 'post'],
      ['/sandbox/send', 'post'],
      ['/transactions/{transactionId}/cancel', 'post'],
      ['/customers/{customerId}/kyc-link', 'post'],
    ] as const;
    for (const [path, method] of idempotent) {
      expect(paths[path]![method]!.parameters!.map((p) => `${p.in}:${p.name}`), `${method} ${path}`).toContain('header:idempotency-key');
    }
    const withoutPattern = new Set<string>();
    const seen = new Set<string>();
    (function walk(node: unknown) {
      if (Array.isArray(node)) return node.forEach(walk);
      if (node === null || typeof node !== 'object') return;
      const { format, pattern } = node as { format?: unknown; pattern?: unknown };
      if (typeof format === 'string' && ['iso3166-1-alpha-2', 'e.164', 'currency-code'].includes(format)) {
        seen.add(format);
        if (typeof pattern !== 'string') withoutPattern.add(format);
      }
      Object.values(node).forEach(walk);
    })(await committedDocument());
    expect([...seen].sort()).toEqual(['currency-code', 'e.164', 'iso3166-1-alpha-2']);
    expect([...withoutPattern]).toEqual([]);
    const settle = Object.values(paths)
      .flatMap((ops) => Object.values(ops))
      .flatMap((op) => op.parameters ?? [])
      .find((p) => p.name === 'sandbox-settle-delay') as (Parameter & { schema: { pattern: string } }) | undefined;
    const pattern = new RegExp(settle!.schema.pattern);
    expect(['0', '9', '10', '999', '1000', '2999', '3599', '3600'].every((v) => pattern.test(v))).toBe(true);
    expect(['3601', '4000', '9999', '-1', '01', '1.5', ''].some((v) => pattern.test(v))).toBe(false);
  });

  it('every example, replayed against the service, gets a documented status', async () => {
    const { paths } = await committedDocument();
    // Invitations need the platform's UMA domain (INVITATIONS_NOT_CONFIGURED otherwise), as the docs say to set first.
    const configured = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: ctx.platform.auth }, payload: { umaDomain: 'pay.example.com' } });
    expect(configured.statusCode, configured.body).toBe(200);
    // …and an inviter who is one of the platform's customers (the example's address).
    const inviter = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: ctx.platform.auth },
      payload: { customerType: 'INDIVIDUAL', fullName: 'Ivy Inviter', umaAddress: '$inviter@pay.example.com' },
    });
    expect(inviter.statusCode, inviter.body).toBe(201);
    let replayed = 0;
    for (const [path, operations] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const parameters = operation.parameters ?? [];
        const json = operation.requestBody?.content['application/json'];
        const body = exampleOf(json);
        const examples = parameters.filter((p) => exampleOf(p) !== undefined);
        if (body === undefined && examples.length === 0) continue;
        if (operation.requestBody && !json) continue; // multipart bodies have no replayable example
        const pathParams = parameters.filter((p) => p.in === 'path');
        if (pathParams.some((p) => exampleOf(p) === undefined)) continue;
        if (operation.requestBody && body === undefined) continue;
        let url = path;
        for (const p of pathParams) url = url.replace(`{${p.name}}`, encodeURIComponent(String(exampleOf(p))));
        const query = new URLSearchParams(examples.filter((p) => p.in === 'query').map((p) => [p.name, String(exampleOf(p))])).toString();
        const headers: Record<string, string> = { authorization: ctx.platform.auth };
        for (const p of examples.filter((e) => e.in === 'header')) headers[p.name] = String(exampleOf(p));
        const response = await ctx.app.inject({
          method: method.toUpperCase() as 'GET',
          url: `${BASE}${url}${query ? `?${query}` : ''}`,
          headers,
          ...(body === undefined ? {} : { payload: body as object }),
        });
        const documented = Object.keys(operation.responses);
        const where = `${method.toUpperCase()} ${url}${query ? `?${query}` : ''} → ${response.statusCode} ${response.body.slice(0, 300)}`;
        expect(documented, where).toContain(String(response.statusCode));
        const namesResource =
          pathParams.length > 0 || examples.some((p) => /^[A-Za-z]+:[0-9a-f-]{36}$/.test(String(exampleOf(p)))) || /"[A-Za-z]+:[0-9a-f-]{36}"/.test(JSON.stringify(body ?? null));
        if (!namesResource) expect(response.statusCode, where).toBeLessThan(300);
        replayed++;
      }
    }
    expect(replayed).toBeGreaterThanOrEqual(2);
  });
});
