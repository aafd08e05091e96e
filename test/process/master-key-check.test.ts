import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { checkMasterKey } from '../../src/platform/crypto/master-key.js';
import { openTestDatabase } from '../helpers/context.js';
import { corridorCommand, freePort, processDatabase, runCli, startCorridor, untilFileEnds, waitUntil, type ProcessDatabase } from '../helpers/process.js';

/** `corridor serve` until it exits, or until it is ready (then stopped): a start that should have been refused fails fast. */
async function serveUntilExitOrReady(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const port = await freePort();
  const child = untilFileEnds(
    spawn(...corridorCommand('serve'), {
      env: { ...process.env, DATABASE_URL: '', CORRIDOR_JOBS: 'false', LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const ready = () => fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
  await waitUntil('corridor serve exits or is ready', async () => child.exitCode !== null || (await ready()), 100_000);
  if (child.exitCode === null) child.kill('SIGTERM');
  return { code: await exited, output };
}

/**
 * A process given another master key than the database's refuses to start (exit 2, one line,
 * nothing written) instead of answering /readyz 200 while it can open nothing the others sealed.
 */
describe('the master key is checked against the database at start-up', () => {
  let database: ProcessDatabase;
  beforeAll(async () => {
    database = await processDatabase('masterkey');
  });
  afterAll(() => database.cleanup());

  it('the first start records the key; a start with another one exits 2 before writing; the right one starts', async () => {
    const first = await startCorridor(database.env);
    expect(await first.stop()).toBe(0);

    const refused = await serveUntilExitOrReady({ ...database.env, CORRIDOR_MASTER_KEY: randomBytes(32).toString('hex') });
    expect(refused.code, refused.output).toBe(2);
    expect(refused.output.trim().split('\n')).toEqual([
      "corridor: CORRIDOR_MASTER_KEY is not the key this database's secrets were sealed with (every process of a database needs the same key)",
    ]);

    // Nothing was made by the refused start: still the first start's platform alone (tokens create picks the only one).
    const token = await runCli(database.env, 'tokens', 'create', '--json');
    expect(token.code, token.output).toBe(0);
    const again = await startCorridor(database.env);
    expect(await again.stop()).toBe(0);
  }, 240_000);
});

describe('checkMasterKey', () => {
  it('of starts at once, all with the same key agree; of two keys, the one recorded wins and the other is refused', async () => {
    const { handle, drop } = await openTestDatabase();
    try {
      const key = randomBytes(32);
      await Promise.all([checkMasterKey(handle.db, key, 'K'), checkMasterKey(handle.db, key, 'K'), checkMasterKey(handle.db, key, 'K')]);
      await expect(checkMasterKey(handle.db, randomBytes(32), 'K')).rejects.toThrow(new ConfigError("K is not the key this database's secrets were sealed with (every process of a database needs the same key)"));
      await checkMasterKey(handle.db, key, 'K');
      expect(await handle.db.selectFrom('master_key_check').select('id').execute()).toEqual([{ id: 1 }]);
    } finally {
      await drop();
    }
  });

  it('two first starts with different keys at once: exactly one is refused', async () => {
    const { handle, drop } = await openTestDatabase();
    try {
      const outcomes = await Promise.allSettled([checkMasterKey(handle.db, randomBytes(32), 'K'), checkMasterKey(handle.db, randomBytes(32), 'K')]);
      expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    } finally {
      await drop();
    }
  });
});
