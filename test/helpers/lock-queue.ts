import { sql } from 'kysely';
import { openDatabase, type Db, type DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';

/**
 * Lock-ordering tests on PostgreSQL: a side connection's transaction holds rows while requests
 * queue behind it in a known order (seen through pg_blocking_pids), then all are released at once.
 */

/**
 * The test's own connections to the database `db` works on (TEST_DATABASE_URL, the test file's
 * schema): the app's pool is the app's, so the side that holds locks needs its own.
 */
export async function openSide(db: Db, poolSize: number): Promise<DbHandle> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL!, schema: rows[0]!.schema, poolSize });
}

/** Opens a transaction on `side`, runs `lock` in it and keeps it open until `release`. */
export async function holdLocks(side: Db, lock: (trx: Db) => Promise<unknown>): Promise<{ pid: number; release: () => Promise<void> }> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let ready!: (pid: number) => void;
  const locked = new Promise<number>((resolve) => (ready = resolve));
  const done = withTx(side, async (trx) => {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
    await lock(trx as unknown as Db);
    ready(rows[0]!.pid);
    await gate;
  });
  const pid = await Promise.race([locked, done.then(() => -1)]);
  return {
    pid,
    release: async () => {
      open();
      await done;
    },
  };
}

/**
 * The backend (other than `besides`) waiting for a lock one of `holders` holds, once there is
 * one. `answered` says whether the request expected to wait answered instead (it never waited:
 * the lock it should have taken is missing), which ends the wait with that answer.
 */
export async function waiterBehind(
  side: Db,
  holders: number[],
  options: { besides?: number[]; answered?: () => { statusCode: number; body: string } | undefined } = {},
): Promise<number> {
  const besides = options.besides ?? [];
  for (let attempt = 0; attempt < 1_000; attempt++) {
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where pg_blocking_pids(pid) && ${sql.val(holders)}::int[]`.execute(side);
    const waiter = rows.map((r) => r.pid).find((pid) => !besides.includes(pid));
    if (waiter !== undefined) return waiter;
    const answer = options.answered?.();
    if (answer) throw new Error(`answered ${answer.statusCode} ${answer.body} without waiting for ${holders.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no backend came to wait for ${holders.join(', ')}`);
}

/**
 * A request under way, and its answer once it has come: what waiterBehind's `answered` reads to
 * tell a request that never waited from one still queued.
 */
export interface Started<Answer> {
  request: Promise<Answer>;
  answered: () => Answer | undefined;
}

export function started<Answer extends { statusCode: number; body: string }>(request: Promise<Answer>): Started<Answer> {
  const state: { answer?: Answer } = {};
  void request.then((answer) => (state.answer = answer));
  return { request, answered: () => state.answer };
}

/**
 * The backend of `request` (other than `besides`), which must come to wait for one of `holders`
 * on `side`, not answer: waiterBehind for a request started with `started`.
 */
export function waitingFor<Answer extends { statusCode: number; body: string }>(side: Db, holders: number[], request: Started<Answer>, besides: number[] = []): Promise<number> {
  return waiterBehind(side, holders, { besides, answered: request.answered });
}
