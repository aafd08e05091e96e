import { connect, type Socket } from 'node:net';
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import Type from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { clientErrorHandler } from '../../src/platform/http/client-errors.js';
import { KnownRoutes } from '../../src/platform/http/known-routes.js';
import { registerPathIds } from '../../src/platform/http/path-ids.js';
import { IdParam } from '../../src/platform/http/schemas.js';
import { validatorCompiler } from '../../src/platform/http/validation.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

/**
 * The HTTP layer's own answers (issue 12 A2, A4, B10, B11): every response is the error
 * envelope, including what Node's parser refuses; bad path ids are 404; retry hints; text
 * PostgreSQL cannot store.
 */
let ctx: TestContext;
let port: number;
beforeAll(async () => {
  ctx = await createTestContext({
    beforeReady: (app) => {
      app.get(`${BASE}/test/throttled`, async () => {
        throw new AppError('RATE_LIMITED', 'Slow down.', { headers: { 'retry-after': '30' } });
      });
      app.get(`${BASE}/test/unavailable`, async () => {
        throw new AppError('SERVICE_UNAVAILABLE', 'The provider is down.');
      });
      app.get(`${BASE}/test/boom`, async () => {
        throw new Error('unexpected');
      });
    },
  });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  port = (ctx.app.server.address() as AddressInfo).port;
});
afterAll(() => ctx.close());

const auth = () => ({ authorization: ctx.platform.auth });

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: { status: number; code: string; message: string; details?: Record<string, unknown> };
}

function parseRaw(text: string): RawResponse {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

/** Sends bytes on a fresh connection and reads the answer until the server closes it. */
function raw(request: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.setTimeout(5000, () => reject(new Error('no answer: the connection stayed open')));
    socket.on('close', () => resolve(parseRaw(Buffer.concat(chunks).toString('utf8'))));
  });
}

function expectRawEnvelope(response: RawResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.body).toMatchObject({ status, code });
  expect(typeof response.body.message).toBe('string');
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.headers['x-request-id']).toBeTruthy();
  expect(response.headers.connection).toBe('close');
}

describe('errors of the HTTP layer are envelopes (A4)', () => {
  it('answers an unknown method on a known path 405 with Allow, on an unknown path 404', async () => {
    const known = await raw(`FOO ${BASE}/customers HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectRawEnvelope(known, 405, 'METHOD_NOT_ALLOWED');
    expect(known.headers.allow).toBe('GET, POST');
    expect(known.headers['x-should-retry']).toBe('false');
    const withId = await raw(`FOO ${BASE}/customers/Customer:019542f5-b3e7-7d02-8000-000000000001?x=1 HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectRawEnvelope(withId, 405, 'METHOD_NOT_ALLOWED');
    expect(withId.headers.allow).toBe('GET, PATCH, DELETE');
    const unknown = await raw(`FOO ${BASE}/cards/x/freeze HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectRawEnvelope(unknown, 404, 'REFERENCE_NOT_FOUND');
  });

  it('answers QUERY and other methods Corridor does not serve 405 with Allow, before reading a body', async () => {
    for (const method of ['QUERY', 'PROPFIND', 'OPTIONS'] as const) {
      const response = await ctx.app.inject({ method, url: `${BASE}/customers`, headers: auth() });
      const body = expectEnvelope(response, 405, 'METHOD_NOT_ALLOWED');
      expect(response.headers.allow).toBe('GET, POST');
      expect(body.details).toEqual({ allowed: ['GET', 'POST'] });
    }
    const withBody = await raw(`QUERY ${BASE}/config HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc`);
    expect(withBody.status).toBe(405);
    expect(withBody.headers.allow).toBe('GET, PATCH');
  });

  it('answers a request target over 8 KiB 414 URI_TOO_LONG, whether Node or Fastify sees it first', async () => {
    const long = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?platformCustomerId=${'a'.repeat(9000)}`, headers: auth() });
    expectEnvelope(long, 414, 'URI_TOO_LONG');
    expect(long.headers['x-should-retry']).toBe('false');
    const huge = await raw(`GET ${BASE}/customers?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectRawEnvelope(huge, 414, 'URI_TOO_LONG');
    const longSegment = await raw(`GET ${BASE}/customers/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectRawEnvelope(longSegment, 414, 'URI_TOO_LONG');
  });

  it('answers a request that does not arrive in time 408 REQUEST_TIMEOUT (Node times it out; its clientError is answered)', () => {
    // Node checks request deadlines every 30 s, too slow for a test: the handler gets Node's error directly.
    let written = '';
    const socket = { destroyed: false, writable: true, end: (data: string) => (written = data), destroy: () => undefined };
    const timeout = Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT', bytesParsed: 0, rawPacket: { type: 'Buffer', data: [] } });
    clientErrorHandler(new KnownRoutes()).call(ctx.app, timeout, socket as unknown as Socket);
    const response = parseRaw(written);
    expectRawEnvelope(response, 408, 'REQUEST_TIMEOUT');
    expect(response.headers['x-should-retry']).toBe('true');
  });

  it('answers headers over the limit 431', async () => {
    const response = await raw(`GET ${BASE}/customers HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectRawEnvelope(response, 431, 'REQUEST_HEADER_FIELDS_TOO_LARGE');
    expect(response.headers['x-should-retry']).toBe('false');
  });

  it('answers malformed HTTP and a path that is not percent-encoded UTF-8 with 400 INVALID_INPUT', async () => {
    expectRawEnvelope(await raw(`GET ${BASE}/customers HTTP/1.1\r\nHost x\r\n\r\n`), 400, 'INVALID_INPUT');
    const badPath = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/%FF`, headers: auth() });
    expectEnvelope(badPath, 400, 'INVALID_INPUT');
  });

  it('answers 503 SERVICE_UNAVAILABLE in the envelope to a request that arrives while the process shuts down', async () => {
    let arrived!: () => void;
    let release!: () => void;
    let refused!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const gate = new Promise<void>((resolve) => (release = resolve));
    const secondRefused = new Promise<void>((resolve) => (refused = resolve));
    const other = await createTestContext({
      beforeReady: (app) => {
        app.addHook('onError', async (request) => {
          if (request.url.endsWith('/config')) refused();
        });
        app.get(`${BASE}/test/slow`, { config: { auth: false } }, async () => {
          arrived();
          await gate;
          return { done: true };
        });
      },
    });
    await other.app.listen({ port: 0, host: '127.0.0.1' });
    const socket = connect((other.app.server.address() as AddressInfo).port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    const ended = new Promise((resolve) => socket.on('close', resolve));
    socket.write(`GET ${BASE}/test/slow HTTP/1.1\r\nHost: x\r\n\r\n`);
    await inFlight;
    const closing = other.app.close();
    // The connection is busy, so it stays open: the next request on it meets a closing process.
    socket.write(`GET ${BASE}/config HTTP/1.1\r\nHost: x\r\nAuthorization: ${other.platform.auth}\r\n\r\n`);
    await secondRefused;
    release();
    await ended;
    await closing;
    const text = Buffer.concat(chunks).toString('utf8');
    const second = text.slice(text.indexOf('HTTP/1.1', 10));
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second.toLowerCase()).toContain('retry-after: 1');
    expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    await other.close().catch(() => undefined);
  });
});

describe('path ids (B10)', () => {
  /** Every route with a path parameter, as the OpenAPI document lists them. */
  async function idRoutes(): Promise<Array<{ method: string; path: string; code: string }>> {
    const doc = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as { paths: Record<string, Record<string, unknown>> };
    const codeFor = (path: string) =>
      path.startsWith('/customers/external-accounts/')
        ? 'REFERENCE_NOT_FOUND'
        : path.startsWith('/customers/bulk/jobs/')
        ? 'BULK_UPLOAD_JOB_NOT_FOUND'
        : path.startsWith('/customers/')
          ? 'USER_NOT_FOUND'
          : path.startsWith('/tokens/')
            ? 'TOKEN_NOT_FOUND'
            : path.startsWith('/invitations/')
              ? 'INVITATION_NOT_FOUND'
              : path.startsWith('/transactions/') || path.startsWith('/sandbox/transactions/')
                ? 'TRANSACTION_NOT_FOUND'
                : path.startsWith('/quotes/')
                  ? 'QUOTE_NOT_FOUND'
                  : 'REFERENCE_NOT_FOUND';
    return Object.entries(doc.paths)
      // A UMA address is not an id: a malformed one is 400 INVALID_UMA_ADDRESS (spec §7.1; test/http/uma.test.ts).
      // An SCA factor's credentialId and a 2FA reset's resetId are never issued (modules/sca/README.md): for a customer
      // of the platform, named in the query, the answer is 409 whatever the id (SPEC §1), and without the customer 400.
      .filter(([path]) => path.includes('{') && !path.startsWith('/receiver/uma/') && !path.startsWith('/sca/'))
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path, code: codeFor(path) })));
  }

  it('answers every malformed or unknown id 404 with the resource’s not-found code, on every /{id} route', async () => {
    const routes = await idRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(15);
    for (const { method, path, code } of routes) {
      for (const id of ['abc', 'Customer:not-a-uuid', 'Token:019542f5-b3e7-7d02-8000-000000000001x', '%00', 'x'.repeat(300)]) {
        const url = `${BASE}${path.replace(/\{[^}]+\}/, id)}`;
        const response = await ctx.app.inject({ method: method as 'GET', url, headers: auth(), payload: { anything: 1 } });
        const body = expectEnvelope(response, 404, code);
        expect(body.message).not.toMatch(/invalid|must match/i);
      }
    }
  });

  it('answers a well-formed id that does not exist 404 with the same code', async () => {
    const unknown = (type: string) => `${type}:019542f5-b3e7-7d02-8000-000000000001`;
    for (const [url, code] of [
      [`/customers/${unknown('Customer')}`, 'USER_NOT_FOUND'],
      [`/tokens/${unknown('Token')}`, 'TOKEN_NOT_FOUND'],
      [`/documents/${unknown('Document')}`, 'REFERENCE_NOT_FOUND'],
      [`/beneficial-owners/${unknown('BeneficialOwner')}`, 'REFERENCE_NOT_FOUND'],
      [`/verifications/${unknown('Verification')}`, 'REFERENCE_NOT_FOUND'],
      [`/customers/bulk/jobs/${unknown('Job')}`, 'BULK_UPLOAD_JOB_NOT_FOUND'],
    ] as const) {
      const body = expectEnvelope(await ctx.app.inject({ method: 'GET', url: `${BASE}${url}`, headers: auth() }), 404, code);
      expect(body.message).toContain('was not found');
    }
  });

  it('says that a path Corridor does not build does not exist, never that an id is invalid', async () => {
    for (const path of ['/cards/x/freeze', '/customers/foo/bar', '/customers/Customer:019542f5-b3e7-7d02-8000-000000000001/nothing']) {
      const body = expectEnvelope(await ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: auth() }), 404, 'REFERENCE_NOT_FOUND');
      expect(body.message).toBe(`The endpoint GET ${BASE}${path} does not exist.`);
    }
    // A word where an id goes: the route for ids answers, saying both what it knows.
    const word = expectEnvelope(await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/foo`, headers: auth() }), 404, 'USER_NOT_FOUND');
    expect(word.message).toBe(`The endpoint GET ${BASE}/customers/foo does not exist, and no customer has the id foo.`);
  });

  it('refuses at start-up a route whose path parameter is not declared with IdParam', async () => {
    const bare = Fastify();
    registerPathIds(bare);
    expect(() => bare.get('/things/:thingId', async () => 'x')).toThrow(/thingId.*IdParam/);
    const declared = Fastify();
    declared.setValidatorCompiler(validatorCompiler);
    registerPathIds(declared);
    declared.get('/things/:thingId', { schema: { params: Type.Object({ thingId: IdParam('Thing', 'REFERENCE_NOT_FOUND') }) } }, async () => 'x');
    await expect(declared.ready()).resolves.toBeDefined();
    await bare.close();
    await declared.close();
  });
});

describe('retry hints (B11)', () => {
  it('says x-should-retry: false on every 4xx a retry cannot fix', async () => {
    const cases = [
      await ctx.app.inject({ method: 'POST', url: `${BASE}/tokens`, headers: auth(), payload: {} }),
      await ctx.app.inject({ method: 'GET', url: `${BASE}/config` }),
      await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/abc`, headers: auth() }),
      await ctx.app.inject({ method: 'PUT', url: `${BASE}/config`, headers: auth() }),
    ];
    const viewer = await ctx.newToken(ctx.platform, ['VIEW']);
    cases.push(await ctx.app.inject({ method: 'POST', url: `${BASE}/tokens`, headers: { authorization: viewer.auth }, payload: { name: 'x', permissions: ['VIEW'] } }));
    const customer = { customerType: 'INDIVIDUAL', platformCustomerId: 'retry-hint', fullName: 'Ada' };
    await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: auth(), payload: customer });
    cases.push(await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: auth(), payload: customer }));
    expect(cases.map((r) => r.statusCode)).toEqual([400, 401, 404, 405, 403, 409]);
    for (const response of cases) expect(response.headers['x-should-retry']).toBe('false');
  });

  it('says x-should-retry: true with Retry-After on 429 and 503, and leaves a 500 to the client', async () => {
    const throttled = await ctx.app.inject({ method: 'GET', url: `${BASE}/test/throttled`, headers: auth() });
    expectEnvelope(throttled, 429, 'RATE_LIMITED');
    expect(throttled.headers['x-should-retry']).toBe('true');
    expect(throttled.headers['retry-after']).toBe('30');
    const unavailable = await ctx.app.inject({ method: 'GET', url: `${BASE}/test/unavailable`, headers: auth() });
    expectEnvelope(unavailable, 503, 'SERVICE_UNAVAILABLE');
    expect(unavailable.headers['x-should-retry']).toBe('true');
    expect(unavailable.headers['retry-after']).toBe('1');
    const boom = await ctx.app.inject({ method: 'GET', url: `${BASE}/test/boom`, headers: auth() });
    expectEnvelope(boom, 500, 'INTERNAL_ERROR');
    expect(boom.headers['x-should-retry']).toBeUndefined();
  });
});

describe('text PostgreSQL cannot store (A2)', () => {
  const post = (url: string, payload: string | Buffer) =>
    ctx.app.inject({ method: 'POST', url: `${BASE}${url}`, headers: { ...auth(), 'content-type': 'application/json' }, payload });

  it('refuses U+0000 and unpaired surrogates in body fields and keys with 400 naming each field', async () => {
    const body = expectEnvelope(
      await post('/customers', '{"customerType":"INDIVIDUAL","fullName":"Ada\\u0000","address":{"line1":"\\ud800x","postalCode":"\\udc00","country":"US"},"email":"a\\ud83d\\ude00@example.com"}'),
      400,
      'INVALID_INPUT',
    );
    const fields = (body.details!.errors as Array<{ field: string; message: string }>).map((e) => e.field);
    expect(fields).toEqual(['fullName', 'address.line1', 'address.postalCode']);
    expect(JSON.stringify(body.details)).toContain('U+0000');
    const key = expectEnvelope(await post('/customers', '{"customerType":"INDIVIDUAL","bad\\u0000key":1}'), 400, 'INVALID_INPUT');
    expect((key.details!.errors as Array<{ field: string }>)[0]!.field).toBe('bad\\u0000key');
    const list = (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?limit=100`, headers: auth() })).json() as { data: Array<{ fullName?: string }> };
    expect(list.data.some((c) => c.fullName?.startsWith('Ada\u0000'))).toBe(false);
  });

  it('refuses JSON whose bytes are not UTF-8, instead of replacing them', async () => {
    const bytes = Buffer.concat([Buffer.from('{"customerType":"INDIVIDUAL","fullName":"Ad'), Buffer.from([0xff, 0xfe]), Buffer.from('a"}')]);
    const body = expectEnvelope(await post('/customers', bytes), 400, 'INVALID_INPUT');
    expect(body.message).toContain('UTF-8');
  });

  it('refuses JSON nested more than 64 levels deep, which overflowed the stack of the text checks (was 500)', async () => {
    const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    for (const deep of [nested(65), nested(10_000), `${'['.repeat(20_000)}${']'.repeat(20_000)}`, `{"customerType":"INDIVIDUAL","fullName":"Ada","x":${nested(10_000)}}`]) {
      const body = expectEnvelope(await post('/customers', deep), 400, 'INVALID_INPUT');
      expect(body.message).toContain('64 levels deep');
    }
    // 64 levels, and brackets inside strings, are left to the schema.
    for (const fine of [nested(64), JSON.stringify({ customerType: 'INDIVIDUAL', fullName: '['.repeat(1000), x: '{"a\\"['.repeat(100) })]) {
      expect(expectEnvelope(await post('/customers', fine), 400, 'INVALID_INPUT').message).not.toContain('levels deep');
    }
  });

  it('refuses such text in query parameters, percent-encoded or not UTF-8', async () => {
    for (const query of ['platformCustomerId=a%00b', 'platformCustomerId=%ED%A0%80', 'platformCustomerId=%FF', 'umaAddress=x%E2%82']) {
      const body = expectEnvelope(await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?${query}`, headers: auth() }), 400, 'INVALID_INPUT');
      expect((body.details!.errors as Array<{ field: string }>)[0]!.field).toBe(query.split('=')[0]);
    }
  });

  it('is checked on every endpoint, before the schema: each body and each query parameter', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
    };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      const url = `${BASE}${path.replace(/\{[^}]+\}/g, 'Customer:019542f5-b3e7-7d02-8000-000000000001')}`;
      for (const [method, operation] of Object.entries(operations)) {
        const query = await ctx.app.inject({ method: method.toUpperCase() as 'GET', url: `${url}?probe=%00`, headers: auth() });
        const queryBody = expectEnvelope(query, 400, 'INVALID_INPUT');
        expect((queryBody.details!.errors as Array<{ field: string }>)[0]!.field).toBe('probe');
        if (operation.requestBody?.content['application/json']) {
          const body = expectEnvelope(
            await ctx.app.inject({ method: method.toUpperCase() as 'POST', url, headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"probe":"\\u0000"}' }),
            400,
            'INVALID_INPUT',
          );
          expect(body.details!.errors).toEqual([{ field: 'probe', message: expect.stringContaining('U+0000') }]);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });
});
