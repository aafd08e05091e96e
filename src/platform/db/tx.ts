import { sql, type Kysely, type QueryCreator, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import type { Db, DbOrTx, Tx } from './database.js';
import { compiledPerShape } from './compiled-once.js';
import { insertChunked, ROWS_PER_INSERT } from './insert-chunked.js';
import { COMMIT_AFTER, isStalePlan } from './named-statements.js';

/** SQLSTATEs after which the whole transaction may simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_ATTEMPTS = 5;

/** What a transaction opened by `withTx` still has to do: rows to write before it commits, hooks after. */
interface TxState {
  /** Rows to insert just before COMMIT, in the order they were deferred (table by table). */
  inserts: Array<{ table: string; row: Record<string, unknown> }>;
  /** One UPDATE to run with them (`deferUpdate`). */
  update?: DeferredUpdate;
  afterCommit: Array<(db: Db) => void>;
}

/**
 * An UPDATE run just before COMMIT in the statement that writes the deferred rows, which must
 * change exactly one row: `build` makes it on the statement's query creator with `values` (or
 * stand-ins for them: the statement is compiled once per shape, platform/db/compiled-once.ts);
 * `shape` tells apart the UPDATEs `build` makes (e.g. the columns it sets). When it changes none
 * (or more), the statement fails, the transaction rolls back and `notOne`'s error is thrown.
 */
export interface DeferredUpdate {
  shape: string;
  values: readonly unknown[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  build: (db: QueryCreator<any>, values: readonly unknown[]) => UpdateQueryBuilder<any, any, any, UpdateResult>;
  notOne: () => Error;
}

/** The SQLSTATE of expect_one_row() (migration 0033). */
const NOT_ONE_ROW = 'CP001';

/** The state of each open transaction opened by `withTx`. */
const states = new WeakMap<object, TxState>();

/**
 * Runs `hook` (with the root handle) once the transaction `trx` commits; answers false, and
 * registers nothing, when `trx` is not a transaction opened by `withTx` (the root handle: each
 * statement commits on its own). A rolled-back or retried transaction runs none of its hooks,
 * nor does a savepoint that rolls back (`inSavepoint`) keep those registered inside it.
 */
export function afterCommit(trx: DbOrTx, hook: (db: Db) => void): boolean {
  const state = states.get(trx);
  if (!state) return false;
  state.afterCommit.push(hook);
  return true;
}

/**
 * Inserts `rows` into `table` just before the transaction `trx` commits, together with every
 * other deferred row in one statement, instead of one round trip each now: for append-only
 * rows nothing in the transaction reads back (outbox events, jobs). Values are plain (no SQL
 * expressions): the statement is compiled once per shape and takes them as parameters. Answers false, and defers
 * nothing, when `trx` is not a transaction opened by `withTx`: the caller inserts them itself.
 * Rows deferred inside a savepoint that rolls back (`inSavepoint`) are dropped with it.
 */
export function deferInsert(trx: DbOrTx, table: string, rows: ReadonlyArray<Record<string, unknown>>): boolean {
  const state = states.get(trx);
  if (!state) return false;
  for (const row of rows) state.inserts.push({ table, row });
  return true;
}

/**
 * Runs `update` just before the transaction `trx` commits, in the one statement that writes its
 * deferred rows (their INSERTs become data-modifying CTEs of the UPDATE): for an UPDATE nothing
 * in the transaction depends on but its row count (a job's checkpoint). Answers false, and
 * defers nothing, when `trx` is not a transaction opened by `withTx` or already defers an
 * update: the caller runs it itself. Rolled back with a savepoint like a deferred row.
 */
export function deferUpdate(trx: DbOrTx, update: DeferredUpdate): boolean {
  const state = states.get(trx);
  if (!state || state.update) return false;
  state.update = update;
  return true;
}

/**
 * Writes the deferred rows and runs the deferred update: one INSERT, or one statement of
 * data-modifying CTEs for several tables and the UPDATE, whose row count the statement checks
 * itself (expect_one_row). It is the transaction's last statement, so COMMIT goes with it
 * (COMMIT_AFTER, named-statements.ts): one round trip for both. A bulk transaction (an import)
 * writes its rows first, a few INSERTs per table as large as allowed.
 */
async function flushInserts(trx: Tx, state: TxState): Promise<void> {
  const update = state.update;
  state.update = undefined;
  if (state.inserts.length === 0 && !update) return;
  // Tables are named by the platform's own callers (outbox, jobs), never by a request.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const untyped = trx as unknown as Kysely<any>;
  const byTable = new Map<string, Array<Record<string, unknown>>>();
  for (const { table, row } of state.inserts) {
    const rows = byTable.get(table);
    if (rows) rows.push(row);
    else byTable.set(table, [row]);
  }
  state.inserts = [];
  let tables = [...byTable];
  if (tables.some(([, rows]) => rows.length > ROWS_PER_INSERT)) {
    for (const [table, rows] of tables) await insertChunked(rows, (chunk) => untyped.insertInto(table).values(chunk).execute());
    if (!update) return;
    tables = [];
  }
  // One compiled statement per shape (tables, columns, rows, the update's shape): values in the order `build` takes them.
  let shape = update ? `update ${update.shape}` : '';
  const values: unknown[] = [];
  for (const [table, rows] of tables) {
    shape += `|${table}:${rows.map((row) => Object.keys(row).join()).join(';')}`;
    for (const row of rows) values.push(...Object.values(row));
  }
  if (update) values.push(...update.values);
  const build = (standIns: unknown[]) => {
    let next = 0;
    const withStandIns = (rows: Array<Record<string, unknown>>) => rows.map((row) => Object.fromEntries(Object.keys(row).map((column) => [column, standIns[next++]])));
    const inserts = tables.map(([table, rows]) => [table, withStandIns(rows)] as const);
    const last = update ? undefined : inserts.pop()!;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let query: any = untyped;
    inserts.forEach(([table, rows], i) => {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      query = query.with(`deferred_${i}`, (db: Kysely<any>) => db.insertInto(table).values(rows));
    });
    if (last) return query.insertInto(last[0]).values(last[1]).modifyEnd(sql.raw(COMMIT_AFTER));
    const updateValues = standIns.slice(next);
    return (
      query
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        .with('deferred_update', (db: Kysely<any>) => update!.build(db, updateValues).returning(sql<number>`1`.as('one')))
        .selectFrom('deferred_update')
        .select(sql<bigint>`expect_one_row(count(*))`.as('changed'))
        .modifyEnd(sql.raw(COMMIT_AFTER))
    );
  };
  try {
    await flushStatement(trx, shape, values, build);
  } catch (error) {
    if (update && (error as { code?: unknown } | null)?.code === NOT_ONE_ROW) throw update.notOne();
    throw error;
  }
}

const flushStatement = compiledPerShape();

/**
 * A stale plan is a prepared statement whose table another process changed (a migration adding
 * a column while this one runs): inside a transaction it cannot be retried alone, but the whole
 * transaction can, on a connection that prepares the statement afresh (named-statements.ts).
 */
function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && RETRYABLE.has(code)) || isStalePlan(error);
}

/**
 * Runs `work` in one transaction; on a serialization failure, a deadlock or a stale prepared
 * statement the transaction is rolled back and run again (with jittered backoff), so `work` must
 * not have effects outside the database before it returns.
 */
export async function withTx<T>(
  db: Db,
  work: (trx: Tx) => Promise<T>,
  options: { isolation?: 'read committed' | 'repeatable read' | 'serializable' } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const state: TxState = { inserts: [], afterCommit: [] };
    try {
      const builder = options.isolation ? db.transaction().setIsolationLevel(options.isolation) : db.transaction();
      const result = await builder.execute(async (trx) => {
        states.set(trx, state);
        const answer = await work(trx);
        await flushInserts(trx, state);
        return answer;
      });
      for (const hook of state.afterCommit) hook(db);
      return result;
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(error)) throw error;
      const delay = Math.random() * 10 * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * Runs `work` in `db` when it already is a transaction, else in one of its own (`withTx`): for
 * code handed the root handle by a caller that opens no transaction for a single write
 * (`sendWrite`'s `transaction: 'when-needed'`), wherever it writes more than once.
 */
export function inTransaction<T>(db: DbOrTx, work: (trx: Tx) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db as Tx) : withTx(db as Db, work);
}

/**
 * Runs `work` inside a savepoint of the caller's transaction, so a failure undoes only what
 * `work` wrote and the transaction can go on (e.g. to record that the work failed).
 */
export async function inSavepoint<T>(trx: DbOrTx, name: string, work: () => Promise<T>): Promise<T> {
  await sql.raw(`savepoint ${name}`).execute(trx);
  const state = states.get(trx);
  const deferred = state?.inserts.length ?? 0;
  const hooks = state?.afterCommit.length ?? 0;
  const hadUpdate = state?.update !== undefined;
  try {
    const result = await work();
    await sql.raw(`release savepoint ${name}`).execute(trx);
    return result;
  } catch (error) {
    await sql.raw(`rollback to savepoint ${name}`).execute(trx);
    if (state) {
      // What the undone work deferred is undone with it: its rows, its update, its after-commit hooks.
      state.inserts.length = deferred;
      state.afterCommit.length = hooks;
      if (!hadUpdate) state.update = undefined;
    }
    throw error;
  }
}

class DryRunRollback extends Error {}

/** Runs `work` and undoes its writes: the caller learns whether it would succeed, and its answer. */
export async function dryRun<T>(trx: DbOrTx, work: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  try {
    await inSavepoint(trx, 'dry_run', async () => {
      result = await work();
      throw new DryRunRollback();
    });
  } catch (error) {
    if (!(error instanceof DryRunRollback)) throw error;
  }
  return result as T;
}
