import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { onPostgres } from '../helpers/context.js';

/**
 * The LISTEN connections that keep caches in step (LISTEN/NOTIFY) are replaced when lost. A
 * database that refuses every connection (dropped, renamed, failing over) must be asked again
 * once per loss and less often each time: each loss used to be reported twice (the failed
 * connect and its error event), so the attempts doubled every half second until the process
 * held tens of thousands of sockets to PostgreSQL.
 */
describe.runIf(onPostgres)('LISTEN connections on PostgreSQL', () => {
  afterEach(() => vi.restoreAllMocks());

  it('are replaced once per loss, after a growing pause, while the database refuses them', async () => {
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    const name = `corridor_listen_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${name}`);
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${name}`;
    const handle = await openDatabase({ databaseUrl: url.toString() });
    try {
      let resets = 0;
      await handle.listen('corridor_test_channel', () => {}, () => resets++);
      const attempts = vi.spyOn(pg.Client.prototype, 'connect');
      await admin.query(`drop database ${name} with (force)`);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      // Pauses of 0.5, 1 and 2 s: three attempts in four seconds (doubling rounds: dozens).
      expect(attempts.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(attempts.mock.calls.length).toBeLessThanOrEqual(4);
      // Each loss clears what the cache knew once.
      expect(resets).toBe(attempts.mock.calls.length + 1);
    } finally {
      await handle.close();
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});
