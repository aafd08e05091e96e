import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, serveUntilExitOrReady, startCorridor } from '../helpers/process.js';

/**
 * The embedded engine on one data directory, whichever engine the run tests: a second process
 * (a command, another serve) beside a running serve is refused in one line before it touches the
 * directory (two PGlite processes on one directory lost one side's writes, or left it
 * unreadable); a killed serve's lock is taken over by the next start; a clean stop frees it.
 */
let root: string;
let env: Record<string, string>;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'corridor-datadir-'));
  env = { CORRIDOR_DATA_DIR: join(root, 'data') };
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('an embedded data directory', () => {
  it('takes one process at a time', async () => {
    const server = await startCorridor(env);
    try {
      const command = await runCli(env, 'tokens', 'create', '--json');
      expect(command.code, command.output).toBe(2);
      expect(command.output).toMatch(/^corridor: the data directory .* is in use by another Corridor process/m);
      const serve = await serveUntilExitOrReady(env);
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
});
