import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';

/**
 * The command line as an operator meets it: help for everything and for one command, a mistake
 * answered with the usage and exit 2, a refusal by the machine or the database with one line and
 * exit 1; never a stack trace, never the database password.
 */
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'corridor-cli-usage-'));
  env = { CORRIDOR_DATA_DIR: join(dir, 'data') };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const STACK = /^\s+at /m;

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

  it('ledger verify never makes the embedded database it was pointed at', async () => {
    const missing = join(dir, 'mistyped');
    const result = await runCli({ CORRIDOR_DATA_DIR: missing }, 'ledger', 'verify');
    expect(result.code, result.output).toBe(2);
    expect(result.output).toContain(`no embedded database in ${missing}`);
    expect(existsSync(missing)).toBe(false);
  }, 120_000);
});

describe.concurrent('settings and refusals at start-up', () => {
  it.each([
    [{ PORT: 'eighty' }, 'PORT must be a whole number'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of'],
    [{ CORRIDOR_PUBLIC_URL: 'payments.example.com' }, 'CORRIDOR_PUBLIC_URL must be an http(s) URL'],
    [{ DATABASE_URL: 'postgres://corridor:s3cretPW@[db/corridor' }, 'DATABASE_URL is not a valid URL'],
    [{ DATABASE_URL: 'mysql://corridor:s3cretPW@db/corridor' }, 'DATABASE_URL must be a postgres://'],
  ])('%j: exit 2, one line naming the variable', async (settings, message) => {
    const result = await runCli({ ...env, ...settings }, 'migrate');
    expect(result.code, result.output).toBe(2);
    expect(result.output.startsWith(`corridor: ${message}`), result.output).toBe(true);
    expect(result.output.trim().split('\n')).toHaveLength(1);
    expect(result.output).not.toContain('s3cretPW');
  }, 120_000);

  it('a database that cannot be reached: exit 1, one line naming the settings, not the password', async () => {
    const result = await runCli({ DATABASE_URL: 'postgres://corridor:s3cretPW@127.0.0.1:1/corridor' }, 'migrate');
    expect(result.code, result.output).toBe(1);
    expect(result.output.trim().split('\n')).toEqual([expect.stringMatching(/^corridor: .*ECONNREFUSED.*\(check DATABASE_URL, HOST and PORT\)$/)]);
    expect(result.output).not.toContain('s3cretPW');
  }, 120_000);
});
