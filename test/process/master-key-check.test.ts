import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config.js';
import { checkMasterKey } from '../../src/platform/crypto/master-key.js';
import { openTestDatabase } from '../helpers/context.js';
import { processDatabase, runCli, serveUntilExitOrReady, startCorridor, type ProcessDatabase } from '../helpers/process.js';

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
    const token = await runCli(database.env, 'tokens', 'create', '--json', '--permissions', 'VIEW,TRANSACT');
    expect(token.code, token.output).toBe(0);
    // As the API gives a token's permissions: an array.
    expect(JSON.parse(token.stdout)).toMatchObject({ tokenId: expect.stringMatching(/^Token:/), permissions: ['VIEW', 'TRANSACT'] });
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
