import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { BASE, basic } from '../helpers/context.js';
import { corridorCommand, freePort, processDatabase, untilFileEnds } from '../helpers/process.js';

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

/** `corridor serve` in a child process; `until: 'exit'` waits for it to stop instead of to listen. */
async function start(overrides: Record<string, string | undefined> = {}, until: 'listening' | 'exit' = 'listening'): Promise<Running> {
  const port = await freePort();
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...overrides };
  childEnv.DATABASE_URL ??= '';
  for (const [name, value] of Object.entries(childEnv)) if (value === undefined) delete childEnv[name];
  const child = untilFileEnds(spawn(...corridorCommand('serve'), { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  if (until === 'exit') {
    await exited;
    return { child, output: () => output, port, exited };
  }
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
    // The README's first payment, as a platform's backend would make it: quote, execute, settle.
    const payment = await promisify(execFile)(process.execPath, ['examples/first-payment.mjs'], {
      cwd: root,
      env: { ...process.env, CORRIDOR_URL: `http://127.0.0.1:${first.port}${BASE}`, CORRIDOR_CLIENT_ID: clientId, CORRIDOR_SECRET: secret },
    });
    expect(payment.stdout).toMatch(
      /^quote Quote:\S+: send 100\.00 USD, receive \d+\.\d\d EUR \(rate [\d.]+, fees [\d.]+ USD\), until \S+\nexecuted Transaction:\S+: (PENDING|PROCESSING), available 900\.00 USD\nCOMPLETED: available 900\.00 USD, total 900\.00 USD\n$/,
    );
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

describe.skipIf(!process.env.TEST_DATABASE_URL)('first start on an empty PostgreSQL database', () => {
  it('refuses to start without CORRIDOR_MASTER_KEY before writing anything, then starts with a generated one', async () => {
    const url = process.env.TEST_DATABASE_URL!;
    const schema = `empty_${process.pid}_${Date.now()}`;
    const admin = await openDatabase({ databaseUrl: url, poolSize: 1 });
    try {
      await admin.db.schema.createSchema(schema).execute();
      const databaseUrl = new URL(url);
      databaseUrl.searchParams.set('options', `-c search_path=${schema}`);
      const tables = async () =>
        (await admin.db.selectFrom('information_schema.tables' as never).select('table_name' as never).where('table_schema' as never, '=', schema as never).execute()).length;

      const refused = await start({ DATABASE_URL: databaseUrl.toString(), CORRIDOR_MASTER_KEY: undefined }, 'exit');
      expect(await refused.exited).toBe(2);
      expect(refused.output()).toContain('CORRIDOR_MASTER_KEY must be set');
      expect(refused.output()).toContain('master-key generate');
      expect(refused.output()).not.toContain('first API token');
      expect(await tables()).toBe(0);

      // The README's commands, as printed: generate a key, then start with it.
      const generated = await promisify(execFile)('npm', ['run', '--silent', 'corridor', '--', 'master-key', 'generate'], { cwd: root });
      expect(generated.stdout).toMatch(/^[0-9a-f]{64}\n$/);
      expect(generated.stderr).toContain('secret manager');
      const started = await start({ DATABASE_URL: databaseUrl.toString(), CORRIDOR_MASTER_KEY: generated.stdout.trim() });
      const banner = /curl -u ([0-9a-f]{32}):([0-9a-f]{64}) /.exec(started.output());
      expect(banner, started.output()).not.toBeNull();
      expect((await fetch(`http://127.0.0.1:${started.port}/readyz`)).status).toBe(200);
      const config = await fetch(`http://127.0.0.1:${started.port}${BASE}/config`, { headers: { authorization: basic(banner![1]!, banner![2]!) } });
      expect(config.status).toBe(200);
      started.child.kill('SIGTERM');
      expect(await started.exited).toBe(0);
      expect(await tables()).toBeGreaterThan(0);
    } finally {
      await admin.db.schema.dropSchema(schema).ifExists().cascade().execute();
      await admin.close();
    }
  }, 120_000);
});
