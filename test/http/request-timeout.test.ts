import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * A client that stalls while sending its request cannot hold the connection for ever (Fastify
 * turns Node's limits off): stalled headers are answered 408, a stalled body disconnected, once
 * CORRIDOR_REQUEST_TIMEOUT_MS has passed.
 */
let ctx: TestContext;
let port: number;

beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_REQUEST_TIMEOUT_MS: '1000' } });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  port = (ctx.app.server.address() as { port: number }).port;
});
afterAll(() => ctx.close());

/** Sends `head` (and no more), then reads until the server closes the connection. */
function stall(head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('a request that stalls arriving', () => {
  it("mid-headers: disconnected (with a 408 when Node's request check comes first)", async () => {
    const answer = await stall(`GET ${BASE}/customers HTTP/1.1\r\nHost: localhost\r\n`);
    expect(answer === '' || /^HTTP\/1\.1 408 /.test(answer), answer).toBe(true);
  }, 30_000);

  it('mid-body: disconnected, nothing written', async () => {
    const customers = async () => Number((await ctx.app.inject({ method: 'GET', url: `${BASE}/customers`, headers: { authorization: ctx.platform.auth } })).json().totalCount);
    const before = await customers();
    const head = `POST ${BASE}/customers HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${ctx.platform.auth}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    expect(await stall(`${head}{"customerType":"INDIVIDUAL",`)).toBe('');
    expect(await customers()).toBe(before);
  }, 30_000);
});
