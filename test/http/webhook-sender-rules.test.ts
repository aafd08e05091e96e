import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/platform/address-guard.js';
import { MAX_RESPONSE_BYTES, postWebhook, type WebhookRequest } from '../../src/modules/webhooks/sender.js';

/**
 * modules/webhooks/sender.ts on its own, against local receivers: what it reads of an answer,
 * when it gives up, when it sends again at once, and that a production (guarded) delivery never
 * rides on a connection a sandbox (unguarded) one opened. No database.
 */
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => {
    s.closeAllConnections();
    s.close(resolve);
  })));
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    req.resume();
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://localhost:${(server.address() as AddressInfo).port}/hooks`, requests: () => requests };
}

const loopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
const post = (url: string, extra: Partial<WebhookRequest> = {}) =>
  postWebhook({ url, body: '{"id":"Webhook:1"}', headers: { 'content-type': 'application/json' }, timeoutMs: 5_000, guard: false, ...extra }, loopback);

describe('postWebhook', () => {
  it('reads at most MAX_RESPONSE_BYTES of an answer', async () => {
    const { url } = await serve((_req, res) => res.end('x'.repeat(MAX_RESPONSE_BYTES * 8)));
    const answer = await post(url);
    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(MAX_RESPONSE_BYTES);
  });

  it('stops reading an answer that never ends once it has MAX_RESPONSE_BYTES, without waiting for the timeout', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200);
      const chunk = 'y'.repeat(4096);
      const timer = setInterval(() => res.write(chunk), 5);
      res.on('close', () => clearInterval(timer));
    });
    const answer = await post(url, { timeoutMs: 10_000 });
    expect(answer).toMatchObject({ status: 200 });
    expect(answer.body).toHaveLength(MAX_RESPONSE_BYTES);
    expect(answer.latencyMs).toBeLessThan(3_000);
  });

  it('gives up timeoutMs after the start, on an endpoint that never answers', async () => {
    const { url } = await serve(() => undefined);
    // Bounds far apart, so a loaded machine cannot blur them: the whole exchange, not a multiple of it.
    const answer = await post(url, { timeoutMs: 1_000 });
    expect(answer).toMatchObject({ error: 'no answer within 1000 ms' });
    expect(answer.status).toBeUndefined();
    expect(answer.latencyMs).toBeGreaterThanOrEqual(1_000);
    expect(answer.latencyMs).toBeLessThan(2_500);
  });

  it('sends again at once, on a fresh connection, when a kept-alive connection turns out closed', async () => {
    const used = new Map<Socket, number>();
    const { url, requests } = await serve((req, res) => {
      const n = (used.get(req.socket) ?? 0) + 1;
      used.set(req.socket, n);
      // The receiver restarted: the connection kept alive from the first delivery is gone.
      if (n > 1) return void req.socket.destroy();
      res.end('ok');
    });
    expect((await post(url)).status).toBe(200);
    const second = await post(url);
    expect(second).toMatchObject({ status: 200, body: 'ok' });
    expect(requests()).toBe(3);
  });

  it('does not send again when a fresh connection is reset: the receiver had the request', async () => {
    const { url, requests } = await serve((req) => void req.socket.destroy());
    const answer = await post(url);
    expect(answer).toMatchObject({ error: 'the connection was reset' });
    expect(requests()).toBe(1);
  });

  it('never carries a guarded delivery on a connection an unguarded one kept alive', async () => {
    const { url, requests } = await serve((_req, res) => res.end('ok'));
    // A sandbox delivery to its own machine keeps its connection alive…
    expect((await post(url, { guard: false })).status).toBe(200);
    // …and a production one to the same host and port is judged afresh, and refused.
    const guarded = await post(url, { guard: true });
    expect(guarded).toMatchObject({ refused: true, error: 'refused: the endpoint resolves to 127.0.0.1, a loopback address' });
    expect(guarded.status).toBeUndefined();
    expect(requests()).toBe(1);
  });
});
