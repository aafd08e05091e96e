import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import lockfile from 'proper-lockfile';
import { afterAll, expect, inject } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { BASE, basic } from './context.js';
import { migratedDump } from './migrated-dump.js';

/**
 * Servers this test file started and has not seen exit. A test that fails before stopping its
 * server would leave it running after the file (vitest ends a worker without an 'exit' event),
 * polling a database that is then dropped; the file's last hook kills what is left.
 */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * How to run `corridor <args>`: this run's sources as bundled once by test/global-setup.ts (as
 * `npm start` runs `dist/`), each start without compiling them again.
 */
export function corridorCommand(...args: string[]): [string, string[]] {
  return [process.execPath, [join(inject('corridorBundle'), 'cli.js'), ...args]];
}

/** Kills `child` when the test file ends, if it has not exited by then. */
export function untilFileEnds<T extends ChildProcess>(child: T): T {
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

/**
 * Ports this test worker hands out: below Linux's ephemeral range (32768–60999), where a bind to
 * port 0 never lands, in a slice no other test process on this machine holds. A slice per
 * VITEST_POOL_ID was not enough: two test runs at once (both engines side by side) have the same
 * pool ids, and a test then polled the other run's server on its port, took it for its own
 * starting one, and stopped its own before it had signal handlers (exit by SIGTERM, not 0).
 */
const PORTS_PER_WORKER = 1_000;
const SLICES = 12;
let firstPort: Promise<number> | undefined;
let portsHanded = 0;

/** The first port of a slice this process holds: a lock per slice (proper-lockfile), released when the process exits. */
function slice(): Promise<number> {
  return (firstPort ??= (async () => {
    for (let n = 0; n < SLICES; n++) {
      try {
        await lockfile.lock(tmpdir(), {
          lockfilePath: join(tmpdir(), `corridor-test-ports-${n}.lock`),
          realpath: false,
          stale: 60_000,
          // A worker stalled for a minute may lose its slice: its next ports may then be shared, no more.
          onCompromised: () => {},
        });
        return 20_000 + n * PORTS_PER_WORKER;
      } catch (error) {
        if ((error as { code?: string }).code !== 'ELOCKED') throw error;
      }
    }
    throw new Error(`every one of the ${SLICES} port slices is held by another test process`);
  })());
}

/**
 * A TCP port nothing listens on right now and that no other test is handed. A port the system
 * picks (a bind to 0) and releases can be picked again at once for another test's server: a
 * `corridor serve` started on it then failed to listen while another test's process answered its
 * /readyz, and the test talked to a process that was not its own (in CI, one a crash test killed).
 */
export async function freePort(): Promise<number> {
  const first = await slice();
  for (let tries = 0; tries < PORTS_PER_WORKER; tries++) {
    const port = first + (portsHanded++ % PORTS_PER_WORKER);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${first} and ${first + PORTS_PER_WORKER - 1}`);
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Waits (a deadline, not an assertion on time) until `done` holds, asking every `pollMs`. */
export async function waitUntil(what: string, done: () => boolean | Promise<boolean>, ms: number, pollMs = 100): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export interface ProcessDatabase {
  /** Environment that points a `corridor` process at its own database. */
  env: Record<string, string>;
  cleanup: () => Promise<void>;
}

/**
 * A private database for processes a test starts: on PostgreSQL (TEST_DATABASE_URL) a fresh
 * schema reached through the URL's search_path, with a master key (required there); else an
 * embedded data directory, migrated unless `empty` (then not even made).
 */
export async function processDatabase(prefix: string, options: { empty?: boolean } = {}): Promise<ProcessDatabase> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const schema = `${prefix}_${process.pid}_${Date.now()}`;
    const admin = await openDatabase({ databaseUrl: url, poolSize: 1 });
    await admin.db.schema.createSchema(schema).execute();
    await admin.close();
    const withSchema = new URL(url);
    withSchema.searchParams.set('options', `-c search_path=${schema}`);
    return {
      env: { DATABASE_URL: withSchema.toString(), CORRIDOR_MASTER_KEY: randomBytes(32).toString('hex') },
      cleanup: async () => {
        const db = await openDatabase({ databaseUrl: url, poolSize: 1 });
        await db.db.schema.dropSchema(schema).cascade().execute();
        await db.close();
      },
    };
  }
  const dir = await mkdtemp(join(tmpdir(), `corridor-${prefix}-`));
  const dataDir = join(dir, 'data');
  if (!options.empty) await migratedDataDir(dataDir);
  return { env: { CORRIDOR_DATA_DIR: dataDir }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Makes `dataDir` an embedded data directory migrated to this version. Initialising and
 * migrating a new directory costs a process seconds of CPU: it starts from the run's migrated
 * one (test/global-setup.ts), as `corridor migrate` would have left it. For a test whose
 * subject is not a brand-new directory.
 */
export async function migratedDataDir(dataDir: string): Promise<void> {
  const seed = await openDatabase({ dataDir, loadDataDir: await migratedTemplate() });
  await seed.close();
}

/**
 * A migrated directory's dump: the run's, on PGlite. A PostgreSQL run makes none (only the
 * tests of the embedded engine itself open one there), so the first of those in this worker
 * makes one, kept for the next.
 */
let workerTemplate: Promise<Blob> | undefined;
async function migratedTemplate(): Promise<Blob> {
  const path = inject('pgliteTemplate');
  if (path) return new Blob([await readFile(path)]);
  workerTemplate ??= migratedDump();
  return workerTemplate;
}

/** A `corridor serve` process (this run's bundle) as spawned: its output so far, and its exit code once it exits. */
export interface ServeProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Spawns `corridor serve` on `port` (0: the system's choice) against `env`'s database, killed
 * when the file ends. Jobs off unless the test runs them in the server (CORRIDOR_JOBS: 'true');
 * warnings only unless it reads the log.
 */
export function spawnServe(env: Record<string, string>, port: number): ServeProcess {
  const child = untilFileEnds(
    spawn(...corridorCommand('serve'), {
      cwd: new URL('../../', import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: '', CORRIDOR_JOBS: 'false', LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

const ready = (port: number) => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);

export interface CorridorProcess {
  port: number;
  output: () => string;
  /** SIGTERM (or the signal given, e.g. SIGKILL for a crash), then the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Starts `corridor serve` (this run's bundle) in its own process and waits until /readyz answers 200. */
export async function startCorridor(env: Record<string, string>): Promise<CorridorProcess> {
  const port = await freePort();
  const { child, output, exited } = spawnServe(env, port);
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null) child.kill(signal);
    return exited;
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`corridor serve did not become ready:\n${output()}`);
    }
    if (await ready(port)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, output, stop };
}

/** `corridor serve` until it exits, or until it is ready (then stopped): a start that should have been refused fails fast. */
export async function serveUntilExitOrReady(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const port = await freePort();
  const { child, output, exited } = spawnServe(env, port);
  await waitUntil('corridor serve exits or is ready', async () => child.exitCode !== null || (await ready(port)), 100_000);
  if (child.exitCode === null) child.kill('SIGTERM');
  return { code: await exited, output: output() };
}

const runFile = promisify(execFile);

/** `corridor <args>` (this run's bundle) run against `env`'s database: the exit code, stdout, and stdout + stderr. */
export async function runCli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; output: string }> {
  const options = { cwd: new URL('../../', import.meta.url).pathname, env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'warn', ...env } };
  try {
    const { stdout, stderr } = await runFile(...corridorCommand(...args), options);
    return { code: 0, stdout, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', output: (failed.stdout ?? '') + (failed.stderr ?? '') };
  }
}

/** A sandbox platform made by `corridor platforms create --json`: its id and first token. */
export async function createSandboxPlatform(env: Record<string, string>): Promise<{ platformId: string; clientId: string; clientSecret: string }> {
  const { stdout } = await runCli(env, 'platforms', 'create', '--environment', 'sandbox', '--json');
  return JSON.parse(stdout.trim().split('\n').pop()!) as { platformId: string; clientId: string; clientSecret: string };
}

/**
 * What the crash tests drive through whichever process `current()` answers (a restart replaces
 * it): `api` calls as the platform, and `fund(n)` funds one customer's USD account with n minor
 * units under Idempotency-Key `crash-n`, so a retried amount replays instead of funding twice.
 */
export async function crashFunding(current: () => CorridorProcess, platform: { clientId: string; clientSecret: string }) {
  const authorization = basic(platform.clientId, platform.clientSecret);
  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${current().port}${BASE}${path}`, {
      method,
      headers: { authorization, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const customer = (await (await api('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Crash Test' })).json()) as { id: string };
  const accounts = (await (await api('GET', `/customers/internal-accounts?customerId=${customer.id}`)).json()) as { data: Array<{ id: string }> };
  const account = accounts.data[0]!.id;
  const fund = (n: number) => api('POST', `/sandbox/internal-accounts/${account}/fund`, { amount: n }, { 'idempotency-key': `crash-${n}` });
  /**
   * After the restarts: every `acknowledged` request's retry replays its stored answer, retrying
   * all that was `sent` applies each exactly once, and the balance is their sum.
   */
  const expectEachAppliedOnce = async (acknowledged: Map<number, unknown>, sent: number[]) => {
    await inBatches([...acknowledged], async ([n, body]) => {
      const retry = await fund(n);
      expect(retry.status, `crash-${n}`).toBe(200);
      expect(retry.headers.get('idempotent-replayed'), `crash-${n}`).toBe('true');
      expect(await retry.json()).toEqual(body);
    });
    await inBatches(sent, async (n) => expect((await fund(n)).status).toBe(200));
    const after = (await (await api('GET', `/customers/internal-accounts?customerId=${customer.id}`)).json()) as { data: Array<{ balance: { amount: number } }> };
    expect(after.data[0]!.balance.amount).toBe(sent.reduce((a, b) => a + b, 0));
  };
  return { fund, expectEachAppliedOnce };
}

/** `work` on every item, eight at a time. */
async function inBatches<T>(items: T[], work: (item: T) => Promise<void>, size = 8): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(work));
}
