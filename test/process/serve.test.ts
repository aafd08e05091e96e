import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, basic } from '../helpers/context.js';
import { freePort, processDatabase } from '../helpers/process.js';

const root = new URL('../../', import.meta.url).pathname;
let env: Record<string, string>;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ env, cleanup } = await processDatabase('serve'));
});
afterAll(() => cleanup());

interface Running {
  child: ChildProcess;
  output: () => string;
  port: number;
  exited: Promise<number | null>;
}

async function start(): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: env.DATABASE_URL ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!output.includes('Corridor listening')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, output: () => output, port, exited };
}

describe('corridor serve', () => {
  it('prints the first credentials once, serves them, and stops cleanly on SIGTERM', async () => {
    const first = await start();
    const banner = /curl -u ([0-9a-f]{32}):([0-9a-f]{64}) (\S+)/.exec(first.output());
    expect(banner, first.output()).not.toBeNull();
    const [, clientId, secret, exampleUrl] = banner!;
    expect(exampleUrl).toBe(`http://localhost:${first.port}${BASE}/config`);
    expect(first.output()).toMatch(/"engine":"(pglite|postgres)"/);

    const response = await fetch(`http://127.0.0.1:${first.port}${BASE}/config`, { headers: { authorization: basic(clientId!, secret!) } });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id');
    const e2e = await promisify(execFile)(process.execPath, ['examples/wallet-e2e.mjs'], {
      cwd: root,
      env: { ...process.env, CORRIDOR_URL: `http://127.0.0.1:${first.port}${BASE}`, CORRIDOR_CLIENT_ID: clientId, CORRIDOR_SECRET: secret },
    });
    // The wallet guide's script, run as a platform's client would: register, log in, one signed operation.
    expect(e2e.stdout).toMatch(/^wallet InternalAccount:\S+ credential EMAIL_OTP \S+@example\.com\nsession Session:\S+ until \S+\nprivateEnabled true\n$/);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const requestLine = first.output().split('\n').find((l) => l.includes('"msg":"request"') && l.includes(requestId!));
    expect(JSON.parse(requestLine!)).toMatchObject({ reqId: requestId, method: 'GET', route: `${BASE}/config`, status: 200 });
    expect(first.output()).toContain('"msg":"stopped"');
    // The secret appears in the banner only, never in a JSON log line.
    expect(first.output().split('\n').filter((l) => l.startsWith('{') && l.includes(secret!))).toEqual([]);

    const second = await start();
    expect(second.output()).not.toContain('first API token');
    expect(second.output()).not.toContain(secret);
    const again = await fetch(`http://127.0.0.1:${second.port}${BASE}/config`, { headers: { authorization: basic(clientId!, secret!) } });
    expect(again.status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 120_000);
});
