import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, basic } from '../helpers/context.js';
import { createSandboxPlatform, processDatabase, startCorridor, waitUntil } from '../helpers/process.js';

/**
 * `corridor serve` stopped by a signal, over real sockets: a request whose body is still arriving
 * is answered, a new connection is refused, the process exits 0 within the grace period; a second
 * signal ends it at once. /metrics, scraped from the running process, is valid Prometheus text.
 */
let env: Record<string, string>;
let cleanup: () => Promise<void>;
let auth: string;
beforeAll(async () => {
  ({ env, cleanup } = await processDatabase('clishutdown'));
  const platform = await createSandboxPlatform(env);
  auth = basic(platform.clientId, platform.clientSecret);
}, 180_000);
afterAll(() => cleanup());

/** POST /customers with its headers and half its body sent; `finish` sends the rest and reads the answer. */
async function halfSentRequest(port: number): Promise<{ socket: Socket; finish: () => Promise<string> }> {
  const body = JSON.stringify({ customerType: 'INDIVIDUAL', platformCustomerId: `shutdown-${Date.now()}`, fullName: 'Ada Lovelace', email: 'ada@example.com' });
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  const head = `POST ${BASE}/customers HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${auth}\r\ncontent-type: application/json\r\nidempotency-key: ${crypto.randomUUID()}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  socket.write(head + body.slice(0, 20));
  return {
    socket,
    finish: async () => {
      socket.write(body.slice(20));
      await Promise.race([ended, waitUntil('the answer', () => /\r\n\r\n/.test(answer), 10_000)]);
      return answer;
    },
  };
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('corridor serve and signals', () => {
  it('SIGTERM: the in-flight request is answered, new connections are refused, exit 0 within the grace period', async () => {
    const server = await startCorridor({ ...env, CORRIDOR_SHUTDOWN_GRACE_MS: '20000', LOG_LEVEL: 'info' });
    const inFlight = await halfSentRequest(server.port);
    await new Promise((r) => setTimeout(r, 300));
    const signalled = performance.now();
    const exited = server.stop('SIGTERM');
    await waitUntil('the listener is closed', () => refused(server.port), 5_000);
    const answer = await inFlight.finish();
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(await exited).toBe(0);
    // The request drained well before the 20 s grace period would have cut it off.
    expect(performance.now() - signalled).toBeLessThan(15_000);
    expect(server.output()).toContain('"msg":"stopped"');
  }, 120_000);

  it('a second signal during the drain exits at once, not after the grace period', async () => {
    const server = await startCorridor({ ...env, CORRIDOR_SHUTDOWN_GRACE_MS: '60000' });
    const inFlight = await halfSentRequest(server.port);
    await new Promise((r) => setTimeout(r, 300));
    const exited = server.stop('SIGTERM');
    await waitUntil('the listener is closed', () => refused(server.port), 5_000);
    const again = performance.now();
    await server.stop('SIGINT');
    expect(await exited).toBe(1);
    expect(performance.now() - again).toBeLessThan(5_000);
    expect(server.output()).toContain('SIGINT during shutdown');
    inFlight.socket.destroy();
  }, 120_000);

  it('/metrics is valid Prometheus text: HELP and TYPE once per family before its samples, escaped labels, no duplicate series', async () => {
    const server = await startCorridor(env);
    try {
      const base = `http://127.0.0.1:${server.port}`;
      await fetch(`${base}${BASE}/config`, { headers: { authorization: auth } });
      await fetch(`${base}${BASE}/config`);
      await fetch(`${base}/no/such/"route\\`);
      const response = await fetch(`${base}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = await response.text();
      expect(text.endsWith('\n')).toBe(true);
      const families = new Map<string, { help: boolean; type?: string }>();
      const series = new Set<string>();
      const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/;
      for (const line of text.trimEnd().split('\n')) {
        const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
        if (meta) {
          const family = families.get(meta[2]!) ?? { help: false };
          if (meta[1] === 'HELP') {
            expect(family.help, `second HELP for ${meta[2]}`).toBe(false);
            family.help = true;
          } else {
            expect(family.type, `second TYPE for ${meta[2]}`).toBeUndefined();
            expect(['counter', 'gauge', 'histogram', 'summary', 'untyped']).toContain(meta[3]);
            family.type = meta[3]!;
          }
          families.set(meta[2]!, family);
          continue;
        }
        const parsed = sample.exec(line);
        expect(parsed, line).not.toBeNull();
        const name = parsed![1]!;
        const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''));
        expect(family?.type, `${name} has no TYPE before it`).toBeDefined();
        expect(series.has(`${name}{${parsed![2] ?? ''}}`), `duplicate ${line}`).toBe(false);
        series.add(`${name}{${parsed![2] ?? ''}}`);
      }
      expect([...families.keys()]).toEqual(expect.arrayContaining(['corridor_http_requests_total', 'corridor_http_request_duration_seconds', 'corridor_jobs']));
      expect(text).toMatch(/corridor_http_requests_total\{method="GET",route="unmatched",status="404"\} 1/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 120_000);
});
