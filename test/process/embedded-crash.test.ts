import { statSync } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { amcheck } from '@electric-sql/pglite/contrib/amcheck';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { onPostgres } from '../helpers/context.js';
import {
  type CorridorProcess,
  crashFunding,
  createSandboxPlatform,
  freePort,
  type ProcessDatabase,
  processDatabase,
  runCli,
  spawnServe,
  startCorridor,
  waitUntil,
} from '../helpers/process.js';

/**
 * The embedded engine, where a laptop or a CI job may kill `corridor serve` at any moment: PGlite
 * writes the directory from inside the process, and a commit's WAL must be in the files before
 * its answer leaves. Killed with SIGKILL while eight clients stream funding requests (each under
 * its own Idempotency-Key) — deep in a stream, just after a restart, and while starting on the
 * directory a kill left (recovery) — and restarted as an operator would, nothing removed (each
 * start takes the dead process's lock over once stale), every acknowledged request is there once
 * and its retry replays it, the ledger verifies, and the directory's tables and indexes check.
 */
describe.runIf(!onPostgres)('corridor serve on the embedded engine killed with SIGKILL during a stream of funding requests', () => {
  let database: ProcessDatabase;
  beforeAll(async () => {
    database = await processDatabase('embcrash');
  });
  afterAll(() => database.cleanup());

  it('restarts on the same data directory with every acknowledged request present, once', async () => {
    const dataDir = database.env.CORRIDOR_DATA_DIR!;
    // As a restart some seconds after a kill finds it: the dead process's lock already stale
    // (untouched for longer than the 5 s of data-dir-lock.ts), so the next start takes it over
    // after checking that no live process touches it, instead of also waiting out the rest of
    // the 5 s here three times. Waiting for a lock to go stale is data-dir-lock.test.ts's subject.
    const lockLeftLongAgo = () => {
      const past = new Date(Date.now() - 60_000);
      return utimes(join(dataDir, 'corridor.lock'), past, past);
    };
    const created = await createSandboxPlatform(database.env);
    let server: CorridorProcess = await startCorridor(database.env);
    const { fund, expectEachAppliedOnce } = await crashFunding(() => server, created);

    const sent: number[] = [];
    const acknowledged = new Map<number, unknown>();
    let next = 1;
    // Eight clients send funding requests (amount n under key crash-n) until the server is
    // killed, once `more` of them have been acknowledged. Each is either answered 200 or cut off
    // by the kill: any other answer (the account gone after a restart) fails at once.
    const streamThenKill = async (more: number) => {
      const target = acknowledged.size + more;
      let dead = false;
      let refused: string | undefined;
      const clients = Array.from({ length: 8 }, async () => {
        while (!dead) {
          const n = next++;
          sent.push(n);
          try {
            const response = await fund(n);
            if (response.status === 200) acknowledged.set(n, await response.json());
            else refused ??= `crash-${n}: ${response.status} ${await response.text()}`;
          } catch {
            // The connection died with the server: not acknowledged.
          }
        }
      });
      await waitUntil(`${target} fundings are acknowledged`, () => acknowledged.size >= target || refused !== undefined, 60_000, 5);
      await server.stop('SIGKILL');
      dead = true;
      await Promise.all(clients);
      await lockLeftLongAgo();
      expect(refused).toBeUndefined();
    };
    // What an operator runs after a crash (it takes the dead process's lock over first).
    const verifyLedger = async () => {
      const verify = await runCli(database.env, 'ledger', 'verify');
      expect(verify.code, verify.output).toBe(0);
      expect(verify.stdout).toContain('ledger verify: OK');
    };

    await streamThenKill(30);
    await verifyLedger();
    server = await startCorridor(database.env);
    await streamThenKill(3);

    // Killed again once the next start's PostgreSQL has begun on the directory (writing its
    // postmaster.pid, then replaying the WAL the kill left).
    const killedAt = Date.now();
    const starting = spawnServe(database.env, await freePort());
    const pidWritten = () => statSync(join(dataDir, 'postmaster.pid'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
    await waitUntil('the next start opens the directory', () => pidWritten() > killedAt || starting.child.exitCode !== null, 60_000, 5);
    expect(starting.child.exitCode, starting.output()).toBeNull();
    starting.child.kill('SIGKILL');
    await starting.exited;
    await lockLeftLongAgo();

    server = await startCorridor(database.env);
    try {
      // Every acknowledged request is there once; what got no answer applies once on its retry.
      await expectEachAppliedOnce(acknowledged, sent);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    await verifyLedger();

    const handle = await openDatabase({ dataDir });
    try {
      const events = await handle.db.selectFrom('events').select('id').where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').execute();
      expect(events).toHaveLength(sent.length);
    } finally {
      await handle.close();
    }
    // No page of the directory is corrupt: every table's heap, and every B-tree index against
    // its heap (each tuple indexed), pass PostgreSQL's amcheck.
    const pglite = new PGlite({ dataDir, extensions: { amcheck } });
    try {
      await pglite.exec('create extension amcheck');
      const heaps = await pglite.query<{ relname: string; problems: number }>(
        `select c.relname, (select count(*) from verify_heapam(c.oid))::int as problems
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where c.relkind in ('r', 'm', 't') and n.nspname not in ('pg_catalog', 'information_schema')`,
      );
      expect(heaps.rows.length).toBeGreaterThan(10);
      expect(heaps.rows.filter((r) => r.problems > 0)).toEqual([]);
      const indexes = await pglite.query<{ checked: number }>(
        `select count(bt_index_check(c.oid, true))::int as checked
           from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
          where am.amname = 'btree' and c.relpersistence <> 't'`,
      );
      expect(indexes.rows[0]!.checked).toBeGreaterThan(10);
    } finally {
      await pglite.close();
    }
  }, 180_000);
});
