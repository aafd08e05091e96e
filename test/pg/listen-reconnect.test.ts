import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NotifiedCache, notifyChanged } from '../../src/platform/cache.js';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
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
    // A database of its own, created and dropped inside the test: seconds on a loaded machine.
  }, 120_000);

  /** Polls `done` every 20 ms for at most `ms`; answers whether it came true. */
  async function eventually(done: () => boolean | Promise<boolean>, ms = 5_000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (await done()) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return false;
  }

  describe('a NotifiedCache', () => {
    let reader: DbHandle;
    let writer: DbHandle;
    afterEach(async () => {
      await reader?.close();
      await writer?.close();
    });

    it('does not keep a value loaded while a change was notified: it may predate the change', async () => {
      reader = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL! });
      writer = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL! });
      const channel = `corridor_test_${randomBytes(4).toString('hex')}`;
      const cache = new NotifiedCache<string>(reader, channel, 60_000);
      await cache.start();
      let heard = 0;
      await reader.listen(channel, () => heard++);
      // The load reads the old value, then another process commits a change and its NOTIFY
      // arrives, then the load returns: what it read is already out of date.
      let readDone!: () => void;
      const loaded = cache.getOrLoad('token-1', () => new Promise<string>((resolve) => (readDone = () => resolve('before the change'))));
      await notifyChanged(writer.db, channel, 'token-1');
      expect(await eventually(() => heard === 1)).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      readDone();
      expect(await loaded).toBe('before the change');
      expect(cache.get('token-1')).toBeUndefined();
      // A load with nothing notified meanwhile is kept.
      expect(await cache.getOrLoad('token-1', async () => 'after the change')).toBe('after the change');
      expect(cache.get('token-1')).toBe('after the change');
    });

    it('serves nothing while its LISTEN connection is lost, then caches again once it is back', async () => {
      reader = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL! });
      writer = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL! });
      const channel = `corridor_test_${randomBytes(4).toString('hex')}`;
      const cache = new NotifiedCache<string>(reader, channel, 60_000);
      await cache.start();
      expect(await cache.getOrLoad('config-1', async () => 'v1')).toBe('v1');
      expect(cache.get('config-1')).toBe('v1');

      // The connection is cut (a failover, an idle-session timeout): a NOTIFY sent now is missed.
      const cut = await sql`select pg_terminate_backend(pid) from pg_stat_activity where query = ${`LISTEN "${channel}"`}`.execute(writer.db);
      expect(cut.rows).toHaveLength(1);
      await notifyChanged(writer.db, channel, 'config-1');
      expect(await eventually(() => cache.get('config-1') === undefined, 2_000)).toBe(true);

      // Once LISTEN is back the cache serves again (it stayed off for good before).
      expect(
        await eventually(async () => {
          await cache.getOrLoad('config-1', async () => 'v2');
          return cache.get('config-1') === 'v2';
        }),
      ).toBe(true);
      // And notifications reach it again.
      await notifyChanged(writer.db, channel, 'config-1');
      expect(await eventually(() => cache.get('config-1') === undefined, 2_000)).toBe(true);
    });
  });
});
