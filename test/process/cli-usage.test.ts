import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../src/config.js';
import { toPem } from '../../src/platform/crypto/pem.js';
import { issueCertificate } from '../../src/modules/uma/certificates.js';
import { migratedDataDir, runCli, spawnServe, waitUntil } from '../helpers/process.js';

/**
 * The command line as an operator meets it: help for everything and for one command, a mistake
 * answered with the usage and exit 2, a refusal by the machine or the database with one line and
 * exit 1 (exit 2 when it is the settings': TLS the server cannot give); never a stack trace, never
 * the database password.
 */
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corridor-cli-usage-'));
  env = { CORRIDOR_DATA_DIR: join(dir, 'data') };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const STACK = /^\s+at /m;

/**
 * A PostgreSQL server as far as a client's request for TLS goes: it answers 'N' (no TLS, as a
 * server without ssl = on does), or 'S' and then a handshake with a self-signed certificate.
 */
async function fakePostgres(answer: 'N' | 'S'): Promise<{ port: number; close: () => Promise<void> }> {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const now = Date.now();
  const cert = toPem(
    issueCertificate({ subject: '127.0.0.1', subjectKey: publicKey, issuer: '127.0.0.1', issuerKey: privateKey, notBefore: new Date(now - 60_000), notAfter: new Date(now + 3_600_000), ca: false }),
  );
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    // The client's SSLRequest (8 bytes), answered with one byte.
    socket.once('data', () => {
      socket.write(answer);
      if (answer === 'S') new TLSSocket(socket, { isServer: true, key: privateKey.export({ type: 'pkcs8', format: 'pem' }), cert }).on('error', () => {});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// Every test runs its own CLI process and none changes anything another reads (the usage and
// settings mistakes are refused before a database is opened; the mistyped directory is its
// own), so they run concurrently: each spawn is seconds of start-up, most of this file's time.
// Timeouts allow for the spawns sharing the machine's cores; the second describe's tests are just as independent.
describe.concurrent('corridor usage', () => {
  it('--help lists every command; a command with --help shows its own lines', async () => {
    const [all, ledger, directories] = await Promise.all([runCli(env, '--help'), runCli(env, 'ledger', 'verify', '--help'), runCli(env, 'directories', '--help')]);
    expect(all.code).toBe(0);
    for (const command of ['serve', 'migrate', 'master-key generate', 'platforms create', 'tokens create', 'directories load', 'verifications decide', 'ledger verify']) {
      expect(all.stdout).toContain(`  ${command}`);
    }
    expect(ledger.code).toBe(0);
    expect(ledger.stdout).toContain('ledger verify [--platform ID] [--batch-size N] [--json]');
    expect(ledger.stdout).not.toContain('platforms create');
    expect(directories.stdout).toContain('directories load <file>');
    expect(directories.stdout).toContain('directories show');
    // Every description starts in one column, a command's own line or its continuation.
    const columns = all.stdout
      .split('\n')
      .filter((line) => /^ {2}\S.* {2}\S|^ {3}/.test(line))
      .map((line) => /^ {2}\S.*? {2,}(?=\S)|^ +/.exec(line)![0].length);
    expect(columns.length).toBeGreaterThan(10);
    expect(new Set(columns)).toEqual(new Set([42]));
  }, 120_000);

  it.each([
    [['bogus'], 'unknown command "bogus"'],
    [['serve', '--bogus'], "Unknown option '--bogus'"],
    [['ledger', 'verify', '--platform'], "Option '--platform <value>' argument missing"],
    [['migrate', 'now'], 'unexpected argument "now"'],
    [['ledger', 'verify', 'everything'], 'unexpected argument "everything"'],
    [['ledger'], 'expected: corridor ledger verify'],
  ])('corridor %j: exit 2 with the usage, no stack trace', async (args, message) => {
    const result = await runCli(env, ...args);
    expect(result.code, result.output).toBe(2);
    expect(result.output).toContain(`corridor: ${message}`);
    expect(result.output).toContain('Usage: corridor <command> [options]');
    expect(result.output).not.toMatch(STACK);
  }, 120_000);

  it('ledger verify on an embedded directory it cannot open: exit 3 (nothing judged), one line, not 1 (breaches)', async () => {
    const damaged = join(dir, 'damaged');
    await mkdir(damaged);
    await writeFile(join(damaged, 'PG_VERSION'), '17\n');
    const result = await runCli({ CORRIDOR_DATA_DIR: damaged }, 'ledger', 'verify');
    expect(result.code, result.output).toBe(3);
    expect(result.output.trim().split('\n')).toEqual([expect.stringMatching(/^corridor: ledger verify could not finish, nothing was judged: /)]);
  }, 120_000);

  it('migrate says how many migrations it applied, then that there are none', async () => {
    const fresh = { CORRIDOR_DATA_DIR: join(dir, 'migrated') };
    const first = await runCli(fresh, 'migrate');
    expect(first.code, first.output).toBe(0);
    expect(first.stdout).toMatch(/^applied \d+ migrations \(0001_foundation … \d{4}_[a-z0-9_]+\)\nmigrations are up to date\n$/);
    const second = await runCli(fresh, 'migrate');
    expect(second.stdout).toBe('migrations are up to date\n');
    // ledger verify of a platform the database does not have: a refusal (exit 2), not an OK over nothing.
    const unknown = 'Platform:00000000-0000-4000-8000-000000000000';
    const verify = await runCli(fresh, 'ledger', 'verify', '--platform', unknown);
    expect(verify.code, verify.output).toBe(2);
    expect(verify.output).toMatch(new RegExp(`^corridor: .* has no platform ${unknown}\n$`));
    // Nor is rotating the identifier key of a platform it does not have a crash with a stack trace.
    const rotate = await runCli(fresh, 'identifiers', 'rotate-key', '--platform', unknown);
    expect(rotate.code, rotate.output).toBe(2);
    expect(rotate.output).toBe(`corridor: no platform ${unknown}\n`);
  }, 120_000);

  it('directories load of the version already loaded, --force or not: says so, without suggesting --force', async () => {
    const shipped = fileURLToPath(new URL('../../reference-data/directories.json', import.meta.url));
    const { version } = JSON.parse(await readFile(shipped, 'utf8')) as { version: number };
    // The start (the migration step) loads the shipped file first: the same version. A migrated
    // directory, not a new one: initialising it is no part of this.
    const dataDir = join(dir, 'directories');
    await migratedDataDir(dataDir);
    const result = await runCli({ CORRIDOR_DATA_DIR: dataDir }, 'directories', 'load', shipped, '--force');
    expect({ code: result.code, output: result.output }).toEqual({
      code: 0,
      output: `directories already at version ${version}, the version of ${shipped}: nothing loaded (raise its version)\n`,
    });
  }, 120_000);

  it('serve with PORT=0 prints the port the system chose, in the banner and the listening line, not :0', async () => {
    const dataDir = join(dir, 'port-zero');
    await migratedDataDir(dataDir);
    const server = spawnServe({ CORRIDOR_DATA_DIR: dataDir, LOG_LEVEL: 'info' }, 0);
    await waitUntil('corridor serve listens', () => server.output().includes('Corridor listening') || server.child.exitCode !== null, 100_000);
    server.child.kill('SIGTERM');
    await server.exited;
    const output = server.output();
    const bound = /"msg":"Server listening at http:\/\/127\.0\.0\.1:(\d+)"/.exec(output)?.[1];
    expect(bound, output).toBeDefined();
    expect(output).toContain(`curl -u `);
    expect(output).toContain(` http://localhost:${bound}${BASE_PATH}/config\n`);
    expect(output).toContain(`Corridor listening on http://localhost:${bound}${BASE_PATH} `);
    expect(output).not.toContain('localhost:0');
  }, 120_000);

  it('ledger verify never makes the embedded database it was pointed at', async () => {
    const missing = join(dir, 'mistyped');
    const result = await runCli({ CORRIDOR_DATA_DIR: missing }, 'ledger', 'verify');
    expect(result.code, result.output).toBe(2);
    expect(result.output).toContain(`no embedded database in ${missing}`);
    // A refusal, not a mistake in the command line: the one line, without the usage under it.
    expect(result.output).not.toContain('Usage:');
    expect(existsSync(missing)).toBe(false);
  }, 120_000);
});

describe.concurrent('settings and refusals at start-up', () => {
  // The answer (N, a certificate, a refused connection) is waiting on the CLI's socket within
  // milliseconds, but a process starved of the CPU for the 5 s default connect timeout wakes to
  // run its timers before its I/O and reports "timeout expired" instead (a CI run, the spawns of
  // this file's concurrent tests sharing two cores, did). The subject is the refusal, not the timeout.
  const unhurriedConnect = { CORRIDOR_DB_CONNECT_TIMEOUT_MS: '60000' };
  it.each([
    [{ PORT: 'eighty' }, 'PORT must be a whole number'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of'],
    [{ CORRIDOR_PUBLIC_URL: 'payments.example.com' }, 'CORRIDOR_PUBLIC_URL must be an http(s) URL'],
    [{ DATABASE_URL: 'postgres://corridor:s3cretPW@[db/corridor' }, 'DATABASE_URL is not a valid URL'],
    [{ DATABASE_URL: 'mysql://corridor:s3cretPW@db/corridor' }, 'DATABASE_URL must be a postgres://'],
    [{ DATABASE_URL: 'postgres://corridor:s3cretPW@db/corridor?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem' }, "DATABASE_URL names sslrootcert=/nonexistent/ca.pem, which cannot be read (ENOENT)"],
    [{ CORRIDOR_DATA_DIR: '/dev/null' }, 'CORRIDOR_DATA_DIR /dev/null is not a directory'],
    [{ CORRIDOR_DATA_DIR: '/dev/null/data' }, 'CORRIDOR_DATA_DIR /dev/null/data is not a directory: a file is on its path'],
    [{ CORRIDOR_UPLOAD_DIR: '/nonexistent/uploads' }, 'CORRIDOR_UPLOAD_DIR /nonexistent/uploads does not exist'],
  ])('%j: exit 2, one line naming the variable', async (settings, message) => {
    const result = await runCli({ ...env, ...settings }, 'migrate');
    expect(result.code, result.output).toBe(2);
    expect(result.output.startsWith(`corridor: ${message}`), result.output).toBe(true);
    expect(result.output.trim().split('\n')).toHaveLength(1);
    expect(result.output).not.toContain('s3cretPW');
  }, 120_000);

  it.each([
    ['N', 'the database server does not accept TLS connections, and DATABASE_URL asks for TLS (sslmode): enable TLS on the server, or change sslmode'],
    ['S', "the database's TLS certificate was refused: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT; check sslmode and sslrootcert in DATABASE_URL)"],
  ] as const)('TLS the server cannot give (it answers %s): exit 2, one line, not the password', async (answer, message) => {
    const server = await fakePostgres(answer);
    try {
      const result = await runCli({ DATABASE_URL: `postgres://corridor:s3cretPW@127.0.0.1:${server.port}/corridor?sslmode=verify-full`, ...unhurriedConnect }, 'migrate');
      expect(result.code, result.output).toBe(2);
      expect(result.output.trim().split('\n')).toEqual([`corridor: ${message}`]);
      expect(result.output).not.toContain('s3cretPW');
    } finally {
      await server.close();
    }
  }, 120_000);

  it('a database that cannot be reached: exit 1, one line naming the settings, not the password', async () => {
    const result = await runCli({ DATABASE_URL: 'postgres://corridor:s3cretPW@127.0.0.1:1/corridor', ...unhurriedConnect }, 'migrate');
    expect(result.code, result.output).toBe(1);
    expect(result.output.trim().split('\n')).toEqual([expect.stringMatching(/^corridor: .*ECONNREFUSED.*\(check DATABASE_URL, HOST and PORT\)$/)]);
    expect(result.output).not.toContain('s3cretPW');
  }, 120_000);
});
