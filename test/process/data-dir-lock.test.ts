import { existsSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migratedDataDir, runCli, serveUntilExitOrReady, startCorridor } from '../helpers/process.js';

/**
 * The embedded engine on one data directory, whichever engine the run tests: a second process
 * (a command, another serve) beside a running serve is refused in one line before it touches the
 * directory (two PGlite processes on one directory lost one side's writes, or left it
 * unreadable); a killed serve's lock is taken over by the next start, and PostgreSQL's
 * postmaster.pid with it, even one left empty; a clean stop frees it. A
 * directory PostgreSQL will not start on is refused with PostgreSQL's reason, not PGlite's stack.
 * None is about a new directory: each starts from a migrated one (migratedDataDir), not from the
 * seconds of initialising and migrating its own.
 */
let root: string;
let env: Record<string, string>;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'corridor-datadir-'));
  env = { CORRIDOR_DATA_DIR: join(root, 'data') };
  await migratedDataDir(env.CORRIDOR_DATA_DIR!);
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('an embedded data directory', () => {
  it('takes one process at a time', async () => {
    const server = await startCorridor(env);
    try {
      // Both at once: each is told within the two seconds a live holder takes to touch its lock.
      const [command, serve] = await Promise.all([runCli(env, 'tokens', 'create', '--json'), serveUntilExitOrReady(env)]);
      expect(command.code, command.output).toBe(2);
      expect(command.output).toMatch(/^corridor: the data directory .* is in use by another Corridor process/m);
      expect(serve.code, serve.output).toBe(2);
      expect(serve.output).toMatch(/is in use by another Corridor process/);
      // The running server kept its directory: it still answers, and its platform is still there.
      expect((await fetch(`http://127.0.0.1:${server.port}/readyz`)).status).toBe(200);
    } finally {
      await server.stop('SIGKILL');
    }

    // Killed, it left its lock: the next start takes it over once stale, and a clean stop frees it.
    expect(existsSync(join(env.CORRIDOR_DATA_DIR!, 'corridor.lock'))).toBe(true);
    const restarted = await startCorridor(env);
    expect(await restarted.stop()).toBe(0);
    expect(existsSync(join(env.CORRIDOR_DATA_DIR!, 'corridor.lock'))).toBe(false);
    const command = await runCli(env, 'tokens', 'create', '--json');
    expect(command.code, command.output).toBe(0);
    expect(JSON.parse(command.stdout.trim().split('\n').pop()!)).toMatchObject({ clientSecret: expect.any(String) });
  }, 120_000);

  it('left with an empty postmaster.pid (a start killed as PostgreSQL created it) starts', async () => {
    const interrupted = { CORRIDOR_DATA_DIR: join(root, 'interrupted') };
    await migratedDataDir(interrupted.CORRIDOR_DATA_DIR);
    await writeFile(join(interrupted.CORRIDOR_DATA_DIR, 'postmaster.pid'), '');
    const restarted = await runCli(interrupted, 'migrate');
    expect(restarted.code, restarted.output).toBe(0);
    expect(restarted.stdout).toContain('migrations are up to date');
  }, 120_000);

  it('that PostgreSQL will not start on is refused in one line with PostgreSQL’s reason, exit 1', async () => {
    const damaged = { CORRIDOR_DATA_DIR: join(root, 'damaged') };
    await migratedDataDir(damaged.CORRIDOR_DATA_DIR);
    // A control file whose checksum no longer matches: PostgreSQL refuses to start on it.
    const control = await open(join(damaged.CORRIDOR_DATA_DIR, 'global', 'pg_control'), 'r+');
    await control.write(Buffer.from('damaged'), 0, 7, 100);
    await control.close();
    for (const args of [['migrate'], ['ledger', 'verify']]) {
      const result = await runCli(damaged, ...args);
      expect(result.code, result.output).toBe(args[0] === 'migrate' ? 1 : 3);
      expect(result.output).not.toMatch(/^\s+at /m);
      expect(result.output).toContain(`the embedded database in ${damaged.CORRIDOR_DATA_DIR} did not start: FATAL: incorrect checksum in control file`);
    }
  }, 120_000);
});
