import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { freePort, processDatabase, type ProcessDatabase, spawnServe, waitUntil } from '../helpers/process.js';

/** The advisory lock the first-platform bootstrap takes (modules/platforms/service.ts). */
const BOOTSTRAP_LOCK = 7_301_991_002;

// PostgreSQL: another session holds the bootstrap's lock, so the start stops, listening, just
// before the first platform is made.
describe.runIf(onPostgres)('GET /readyz during start-up', () => {
  let database: ProcessDatabase;
  let holder: DbHandle;

  beforeAll(async () => {
    database = await processDatabase('readyz');
    holder = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 1 });
  });
  afterAll(async () => {
    await holder?.close();
    await database?.cleanup();
  });

  it('answers 503 until the first platform is made and the job worker runs, then 200 with the platform there', async () => {
    await sql`select pg_advisory_lock(${BOOTSTRAP_LOCK})`.execute(holder.db);
    const port = await freePort();
    const { child, output: log, exited } = spawnServe({ ...database.env, CORRIDOR_JOBS: 'true', LOG_LEVEL: 'info' }, port);
    const get = (path: string) => fetch(`http://127.0.0.1:${port}${path}`).then((r) => r, () => undefined);
    try {
      await waitUntil('the process listens', async () => (await get('/healthz'))?.status === 200, 60_000);
      // Listening, migrated, caches listening, but the bootstrap waits on the lock: not ready.
      for (let poll = 0; poll < 5; poll++) {
        const readiness = (await get('/readyz'))!;
        expect(readiness.status, log()).toBe(503);
        expect(((await readiness.json()) as { code: string }).code).toBe('SERVICE_UNAVAILABLE');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await holder.db.selectFrom('platforms').select('id').execute()).toHaveLength(0);

      await sql`select pg_advisory_unlock(${BOOTSTRAP_LOCK})`.execute(holder.db);
      await waitUntil('the process is ready', async () => (await get('/readyz'))?.status === 200, 60_000);
      // Ready means started: the platform is there and its token works (the banner, written
      // before, comes through its own pipe).
      expect(await holder.db.selectFrom('platforms').select('id').execute()).toHaveLength(1);
      await waitUntil('the banner is read', () => / curl -u /.test(log()), 10_000);
      const [, clientId, secret] = /curl -u ([0-9a-f]{32}):([0-9a-f]{64}) /.exec(log())!;
      const config = await fetch(`http://127.0.0.1:${port}${BASE}/config`, { headers: { authorization: basic(clientId!, secret!) } });
      expect(config.status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      await sql`select pg_advisory_unlock_all()`.execute(holder.db);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 120_000);
});
