import { EventEmitter, once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import multipart from '@fastify/multipart';
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BodyBudget } from '../../src/platform/http/body-budget.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

/**
 * The per-process budget of request-body bytes held in memory (platform/http/body-budget.ts),
 * over real connections: bodies are held open by sending their headers and part of the body,
 * so what the budget holds while requests are in flight, and what it is given back when they
 * end however they end, can be read between the steps.
 */
const BODY_LIMIT = 1024;
const BUDGET = 2048;
const IN_MEMORY_MULTIPART_LIMIT = 1500;

/** Emits each test request's `x-test-id` once the request has passed the budget and its body is about to be read. */
const admitted = new EventEmitter();
/** Emits each `x-wait-for-close` request's id once an onRequest hook (as authentication does) starts waiting on it. */
const waiting = new EventEmitter();

const extraRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(multipart);
  // A stand-in for a slow onRequest hook (authentication's database read) that the client hangs up during.
  app.addHook('onRequest', async (request, reply) => {
    const id = request.headers['x-wait-for-close'];
    if (typeof id !== 'string') return;
    const closed = once(reply.raw, 'close');
    waiting.emit(id);
    await closed;
  });
  // This scope's preParsing hooks run after the app's own, the budget's among them.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    admitted.emit(String(request.headers['x-test-id']));
    done(null, payload);
  });
  app.post('/budget/echo', { schema: { body: Type.Object({ name: Type.String() }) } }, async (request) => ({ name: request.body.name }));
  app.post('/budget/fail', async () => {
    throw new Error('the handler failed');
  });
  app.post('/budget/in-memory', { config: { multipartInMemoryBytes: IN_MEMORY_MULTIPART_LIMIT } }, async (request) => {
    const file = await request.file();
    return { bytes: (await file!.toBuffer()).length };
  });
  app.post('/budget/spooled', async (request) => {
    const file = await request.file();
    file!.file.resume();
    await once(file!.file, 'end');
    return {};
  });
};

let ctx: TestContext;
let port: number;
beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_BODY_LIMIT_BYTES: String(BODY_LIMIT), CORRIDOR_BODY_BYTES_IN_FLIGHT: String(BUDGET) }, extraRoutes });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  port = (ctx.app.server.address() as AddressInfo).port;
});
afterAll(() => ctx.close());

const held = () => ctx.app.bodyBudget.heldBytes;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: { status: number; code: string; message: string; details?: Record<string, unknown> } & Record<string, unknown>;
}

interface InFlight {
  socket: Socket;
  /** The first response on the connection. */
  answer: Promise<Answer>;
  /** Sends more of the body. */
  send(bytes: string | Buffer): void;
}

/** Opens a connection and sends a request's head and `first` bytes of its body, leaving the rest unsent. */
function start(path: string, headers: Record<string, string>, first: string | Buffer = ''): InFlight {
  const all: Record<string, string> = { host: 'corridor', authorization: ctx.platform.auth, connection: 'close', ...headers };
  const head = `POST ${BASE}${path} HTTP/1.1\r\n${Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(Buffer.concat([Buffer.from(head), Buffer.from(first)]));
  const answer = new Promise<Answer>((resolve, reject) => {
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('utf8');
      const headEnd = text.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const lines = text.slice(0, headEnd).split('\r\n');
      const responseHeaders = Object.fromEntries(lines.slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      const length = Number(responseHeaders['content-length']);
      if (received.length - Buffer.byteLength(text.slice(0, headEnd + 4)) < length) return;
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers: responseHeaders, body: JSON.parse(text.slice(headEnd + 4, headEnd + 4 + length)) as Answer['body'] });
    });
    socket.on('close', () => reject(new Error('the connection closed without an answer')));
  });
  // Requests the test hangs up itself are never answered; a test that awaits an answer still sees the rejection.
  answer.catch(() => undefined);
  return { socket, answer, send: (bytes) => socket.write(bytes) };
}

function envelopeOf(answer: Answer, status: number, code: string) {
  return expectEnvelope({ statusCode: answer.status, json: () => answer.body }, status, code);
}

/** `value` as JSON padded with spaces to exactly `length` bytes. */
function jsonOfLength(value: unknown, length: number): string {
  const text = JSON.stringify(value);
  return text + ' '.repeat(length - Buffer.byteLength(text));
}

/** A JSON request with a declared length, of which only the first 10 bytes are sent; resolves once the budget admitted it. */
async function holdJson(id: string, path: string, body: string, headers: Record<string, string> = {}): Promise<InFlight> {
  const passed = once(admitted, id);
  const request = start(path, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'x-test-id': id, ...headers }, body.slice(0, 10));
  await passed;
  return request;
}

function multipartBody(bytes: number): { type: string; body: Buffer } {
  const boundary = 'budgetboundary';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.csv"\r\ncontent-type: text/csv\r\n\r\n`),
    Buffer.alloc(bytes, 'a'),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { type: `multipart/form-data; boundary=${boundary}`, body };
}

/** Waits until the budget is given back in full; fails the test (by its timeout) if it never is. */
async function releasedInFull(): Promise<void> {
  await vi.waitFor(() => expect(held()).toBe(0), { timeout: 10_000, interval: 5 });
}

describe('the request-body budget', () => {
  it('refuses a body that does not fit beside those in flight with a retryable 503, and admits one again once they end', async () => {
    const first = jsonOfLength({ name: 'first' }, 1000);
    const a = await holdJson('a', '/budget/echo', first);
    const b = await holdJson('b', '/budget/echo', jsonOfLength({ other: 'not a name' }, 1000));
    expect(held()).toBe(2000);

    const c = start('/budget/echo', { 'content-type': 'application/json', 'content-length': '1000', 'x-test-id': 'c' }, first.slice(0, 10));
    const refused = await c.answer;
    const body = envelopeOf(refused, 503, 'SERVICE_UNAVAILABLE');
    expect(body.details).toEqual({ reason: 'BODY_MEMORY_FULL' });
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['x-should-retry']).toBe('true');
    expect(held()).toBe(2000);
    c.socket.destroy();

    // The first completes (200), the second fails its body's validation (400): each gives its 1000 bytes back.
    a.send(first.slice(10));
    expect((await a.answer).status).toBe(200);
    const d = await holdJson('d', '/budget/echo', first);
    expect(held()).toBe(2000);
    b.send(jsonOfLength({ other: 'not a name' }, 1000).slice(10));
    envelopeOf(await b.answer, 400, 'INVALID_INPUT');
    expect(held()).toBe(1000);

    // A client that hangs up midway through its body gives its reservation back too.
    d.socket.destroy();
    await releasedInFull();
  });

  it('gives the reservation back once after a handler error', async () => {
    const body = jsonOfLength({}, 800);
    const failing = await holdJson('fail', '/budget/fail', body);
    expect(held()).toBe(800);
    failing.send(body.slice(10));
    expect((await failing.answer).status).toBe(500);
    expect(held()).toBe(0);
  });

  it('reserves nothing for a request refused for its credentials', async () => {
    const a = await holdJson('401-holder', '/budget/echo', jsonOfLength({ name: 'x' }, 1000));
    const b = await holdJson('401-holder-2', '/budget/echo', jsonOfLength({ name: 'x' }, 1000));
    const anonymous = start('/budget/echo', { 'content-type': 'application/json', 'content-length': '1000', authorization: 'Basic bm86Y3JlZGVudGlhbHM=' }, '{"name"');
    envelopeOf(await anonymous.answer, 401, 'UNAUTHORIZED');
    expect(held()).toBe(2000);
    a.socket.destroy();
    b.socket.destroy();
    anonymous.socket.destroy();
    await releasedInFull();
  });

  it('reserves nothing for a request whose connection closed while an earlier hook ran', async () => {
    const started = once(waiting, 'gone');
    const passed = once(admitted, 'gone');
    const request = start('/budget/echo', { 'content-type': 'application/json', 'content-length': '1000', 'x-test-id': 'gone', 'x-wait-for-close': 'gone' }, '{"name"');
    await started;
    request.socket.destroy();
    await passed;
    expect(held()).toBe(0);
  });

  it("reserves a chunked JSON body's route limit, and nothing for a declared length the limit refuses unread", async () => {
    const chunked = await holdJsonChunked('chunked');
    expect(held()).toBe(BODY_LIMIT);
    const filler = await holdJson('filler', '/budget/echo', jsonOfLength({ name: 'x' }, BUDGET - BODY_LIMIT));
    expect(held()).toBe(BUDGET);
    // Over the body limit: the limit's 400 even when the budget is full, never a 503.
    const tooLong = start('/budget/echo', { 'content-type': 'application/json', 'content-length': String(BODY_LIMIT + 1) }, '{"name"');
    envelopeOf(await tooLong.answer, 400, 'INVALID_INPUT');
    chunked.send('5\r\n"x"} \r\n0\r\n\r\n');
    expect((await chunked.answer).status).toBe(200);
    filler.socket.destroy();
    tooLong.socket.destroy();
    await releasedInFull();
  });

  it('reserves an in-memory multipart route its declared length, a spooling one nothing, and refuses one that could never fit as too large', async () => {
    const upload = multipartBody(1000);
    const admittedUpload = once(admitted, 'upload');
    const inMemory = start('/budget/in-memory', { 'content-type': upload.type, 'content-length': String(upload.body.length), 'x-test-id': 'upload' }, upload.body.subarray(0, 10));
    await admittedUpload;
    expect(held()).toBe(upload.body.length);

    const admittedSpooled = once(admitted, 'spooled');
    const spooled = start('/budget/spooled', { 'content-type': upload.type, 'content-length': String(upload.body.length), 'x-test-id': 'spooled' }, upload.body.subarray(0, 10));
    await admittedSpooled;
    expect(held()).toBe(upload.body.length);

    inMemory.send(upload.body.subarray(10));
    expect((await inMemory.answer).body).toEqual({ bytes: 1000 });
    spooled.send(upload.body.subarray(10));
    expect((await spooled.answer).status).toBe(200);
    expect(held()).toBe(0);
  });

  it('knows a multipart body by its media type in any case', async () => {
    const upload = multipartBody(1000);
    const type = upload.type.replace('multipart/form-data', 'Multipart/Form-Data');
    const admittedUpload = once(admitted, 'upload-cased');
    const inMemory = start('/budget/in-memory', { 'content-type': type, 'content-length': String(upload.body.length), 'x-test-id': 'upload-cased' }, upload.body.subarray(0, 10));
    try {
      await admittedUpload;
      expect(held()).toBe(upload.body.length);
      inMemory.send(upload.body.subarray(10));
      expect((await inMemory.answer).body).toEqual({ bytes: 1000 });
      expect(held()).toBe(0);
    } finally {
      inMemory.socket.destroy();
    }
  });

  it('is a positive whole number of bytes', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) expect(() => new BodyBudget(capacity)).toThrow(RangeError);
    expect(new BodyBudget(1).tryReserve(1)).toBe(true);
  });

  it('reserves a customer CSV import its declared length: the route reads the file into memory', async () => {
    const upload = multipartBody(1000);
    const csv = start('/customers/bulk/csv', { 'content-type': upload.type, 'content-length': String(upload.body.length) }, upload.body.subarray(0, 10));
    await vi.waitFor(() => expect(held()).toBe(upload.body.length), { timeout: 10_000, interval: 5 });
    csv.send(upload.body.subarray(10));
    // A file of one column of 'a's: not a customer CSV, which is beside the point here.
    expect((await csv.answer).status).toBe(400);
    await releasedInFull();
  });

  it('answers a body larger than the whole budget with the body limit’s 400, not a 503 a retry cannot fix', async () => {
    const app = await createTestContext({ env: { CORRIDOR_BODY_LIMIT_BYTES: String(BODY_LIMIT), CORRIDOR_BODY_BYTES_IN_FLIGHT: String(BODY_LIMIT) }, extraRoutes });
    try {
      const upload = multipartBody(1200);
      const response = await app.app.inject({ method: 'POST', url: `${BASE}/budget/in-memory`, headers: { authorization: app.platform.auth, 'content-type': upload.type }, payload: upload.body });
      expect(expectEnvelope(response, 400, 'INVALID_INPUT').message).toBe('The request body is larger than this endpoint accepts.');
      expect(app.app.bodyBudget.heldBytes).toBe(0);
      // A body the size of the whole budget fits it, alone.
      const exact = multipartBody(BODY_LIMIT - multipartBody(0).body.length);
      expect(exact.body.length).toBe(BODY_LIMIT);
      const fits = await app.app.inject({ method: 'POST', url: `${BASE}/budget/in-memory`, headers: { authorization: app.platform.auth, 'content-type': exact.type }, payload: exact.body });
      expect(fits.json()).toEqual({ bytes: BODY_LIMIT - multipartBody(0).body.length });
    } finally {
      await app.close();
    }
  });
});

/** A chunked JSON request whose first chunk is sent; resolves once the budget admitted it. */
async function holdJsonChunked(id: string): Promise<InFlight> {
  const passed = once(admitted, id);
  const request = start('/budget/echo', { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'x-test-id': id }, '7\r\n{"name"\r\n1\r\n:\r\n');
  await passed;
  return request;
}
