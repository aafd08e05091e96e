import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

/**
 * What a caller can send at the HTTP protocol level, below any one route, against a listening
 * server: requests pipelined on one connection, JSON a parser reads more than one way, bodies in
 * an encoding or charset Corridor does not read.
 */
let ctx: TestContext;
let port: number;
let accountId: string;
beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  port = (ctx.app.server.address() as AddressInfo).port;
  const accounts = await ctx.app.inject({ method: 'GET', url: `${BASE}/platform/internal-accounts`, headers: { authorization: ctx.platform.auth } });
  accountId = (accounts.json() as { data: Array<{ id: string }> }).data[0]!.id;
});
afterAll(() => ctx.close());

const fundPath = () => `${BASE}/sandbox/internal-accounts/${accountId}/fund`;

async function balance(): Promise<number> {
  const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/platform/internal-accounts`, headers: { authorization: ctx.platform.auth } });
  return (response.json() as { data: Array<{ id: string; balance: { amount: number } }> }).data.find((a) => a.id === accountId)!.balance.amount;
}

/** One request's bytes; `headers` are written as given, after Host, Authorization and Connection (close unless given). */
function request(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Buffer {
  const bytes = body === undefined ? Buffer.alloc(0) : Buffer.from(body);
  const all: Record<string, string> = { host: 'corridor', authorization: ctx.platform.auth, connection: 'close', ...headers };
  if (body !== undefined && all['content-length'] === undefined) all['content-length'] = String(bytes.length);
  const head = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return Buffer.concat([Buffer.from(`${method} ${path} HTTP/1.1\r\n${head}\r\n`), bytes]);
}

interface Answer {
  status: number;
  body: { status: number; code: string; message: string } & Record<string, unknown>;
}

/** Writes `bytes` at once on one connection and reads every response until the server closes it. */
function exchange(bytes: Buffer): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const answers: Answer[] = [];
      let rest = Buffer.concat(chunks).toString('utf8');
      while (rest.length > 0) {
        const headEnd = rest.indexOf('\r\n\r\n');
        const head = rest.slice(0, headEnd);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)![1]);
        const body = rest.slice(headEnd + 4, headEnd + 4 + length);
        answers.push({ status: Number(head.split(' ')[1]), body: JSON.parse(body) as Answer['body'] });
        rest = rest.slice(headEnd + 4 + length);
      }
      resolve(answers);
    });
  });
}

const json = { 'content-type': 'application/json', connection: 'keep-alive' };

describe('requests pipelined on one connection', () => {
  it('answers a request Node’s parser refuses after the earlier ones’ answers, about itself', async () => {
    const answers = await exchange(Buffer.concat([request('GET', `${BASE}/config`, { connection: 'keep-alive' }), request('FOO', `${BASE}/customers`)]));
    // Was one answer: the 405 went out in the GET's place, naming the GET ("GET is not allowed on …").
    expect(answers.map((a) => a.status)).toEqual([200, 405]);
    expect(answers[1]!.body.message).toMatch(/^FOO is not allowed on \/2025-10-13\/customers/);
  });

  it('never refuses a write that commits: a fund before a malformed request is answered 200, credited once', async () => {
    const before = await balance();
    const answers = await exchange(
      Buffer.concat([request('POST', fundPath(), json, '{"amount":7}'), Buffer.from('GET /x HTTP/1.1\r\nhost: corridor\r\nbad header\r\n\r\n')]),
    );
    // Was a lone 400 closing the connection while the fund committed.
    expect(answers.map((a) => a.status)).toEqual([200, 400]);
    expect(answers[1]!.body.code).toBe('INVALID_INPUT');
    expect(await balance()).toBe(before + 7);
  });
});

describe('JSON bodies read one way only', () => {
  it('refuses a name twice in one object, at any depth and however escaped, and credits nothing', async () => {
    const before = await balance();
    for (const body of ['{"amount":1,"amount":100}', '{"amount":1,"\\u0061mount":100}', '{"amount":1,"x":[{"a":1,"b":{"c":1,"c":2}}]}']) {
      const [answer] = await exchange(request('POST', fundPath(), { 'content-type': 'application/json' }, body));
      // Was 200, crediting the last value (100).
      expect(answer!.status, body).toBe(400);
      expect(answer!.body.code).toBe('INVALID_INPUT');
      expect(answer!.body.message).toMatch(/names "(amount|c)" twice in one object/);
    }
    expect(await balance()).toBe(before);
  });

  it('tells names from values and sibling objects apart', async () => {
    // The same name in sibling objects, a value equal to a name, a comma in a string: no duplicate.
    const response = await ctx.app.inject({
      method: 'POST',
      url: fundPath(),
      headers: { authorization: ctx.platform.auth, 'content-type': 'application/json' },
      payload: '{"amount":2,"x":[{"a":"amount,","b":{}},{"a":"amount"}]}',
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(response.json().details.errors).toEqual([expect.objectContaining({ field: 'x', message: 'is not a known field' })]);
  });
});

describe('bodies Corridor does not read as sent', () => {
  it('refuses a Content-Encoding, a charset other than UTF-8 and text/plain, and credits nothing', async () => {
    const before = await balance();
    const cases: Array<[Record<string, string>, string | Buffer, RegExp]> = [
      // Was 400 "not valid UTF-8" for gzip, and 200 for a plain body labelled br.
      [{ 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync('{"amount":3}'), /Content-Encoding/],
      [{ 'content-type': 'application/json', 'content-encoding': 'br' }, '{"amount":3}', /Content-Encoding/],
      // Were 200: read as UTF-8 whatever they said.
      [{ 'content-type': 'application/json; charset=latin1' }, '{"amount":3}', /charset/],
      [{ 'content-type': 'application/json; charset="utf-16"' }, '{"amount":3}', /charset/],
      // Was "(body) must be an object": Fastify's text/plain parser handed the route a string.
      [{ 'content-type': 'text/plain' }, '{"amount":3}', /Unsupported Content-Type/],
    ];
    for (const [headers, body, message] of cases) {
      const [answer] = await exchange(request('POST', fundPath(), headers, body));
      expect(answer!.status, JSON.stringify(headers)).toBe(400);
      expect(answer!.body.message).toMatch(message);
    }
    expect(await balance()).toBe(before);
    for (const type of ['application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json', 'APPLICATION/JSON']) {
      const [answer] = await exchange(request('POST', fundPath(), { 'content-type': type, 'content-encoding': 'identity' }, '{"amount":1}'));
      expect(answer!.status, type).toBe(200);
    }
    expect(await balance()).toBe(before + 4);
  });
});
