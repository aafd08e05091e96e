import { createQueryId, type Compilable, type CompiledQuery, type QueryResult } from 'kysely';
import type { DbOrTx } from './database.js';
import { runRead } from './pipelined-reads.js';

interface Compiled<Row> {
  query: CompiledQuery<Row>;
  /** For each parameter of the query, the index of the value it takes. */
  argumentAt: number[];
}

/**
 * Builds a query once with stand-ins for its `count` values and compiles it. Every parameter of
 * the compiled query must be one of the stand-ins, each used once: that is where each call's
 * values go. A constant belongs in the query text or among the values.
 */
function compileWithStandIns<Row>(count: number, build: (standIns: unknown[]) => Compilable<Row>): Compiled<Row> {
  const standIns = Array.from({ length: count }, (_, index) => ({ standIn: index }));
  const query = build(standIns).compile();
  const argumentAt = query.parameters.map((value) => standIns.indexOf(value as (typeof standIns)[number]));
  if (argumentAt.includes(-1) || new Set(argumentAt).size !== count) {
    throw new Error(`compiledOnce: each parameter must be one of the ${count} arguments, once: ${query.sql}`);
  }
  return { query, argumentAt };
}

function withValues<Row>({ query, argumentAt }: Compiled<Row>, values: readonly unknown[]): CompiledQuery<Row> {
  return { ...query, parameters: argumentAt.map((index) => values[index]), queryId: createQueryId() };
}

/**
 * A query the builder makes and compiles once, then runs with each call's values. For the reads
 * every request makes (GET by id): building the same statement afresh each time — immutable
 * query nodes, frozen and copied per `where`, then compiled to text — was about 8 % of a point
 * read's CPU (bench/README.md). Both engines compile with Kysely's PostgreSQL compiler, so the
 * text is the same whichever database runs it. Outside a transaction on PostgreSQL it runs on the
 * shared pipelined connections (pipelined-reads.ts): such a statement is one short read.
 *
 * `build` is called once with stand-ins for its arguments; every parameter of the query it
 * builds must be one of them, used once (a where clause's value): that is where each call's
 * values go. A constant belongs in the query text or among the arguments.
 */
export function compiledOnce<Args extends unknown[], Row>(build: (db: DbOrTx, ...args: Args) => Compilable<Row>) {
  let compiled: Compiled<Row> | undefined;
  return async (db: DbOrTx, ...args: Args): Promise<Row[]> => {
    compiled ??= compileWithStandIns(args.length, (standIns) => build(db, ...(standIns as Args)));
    return runRead<Row>(db, withValues(compiled, args));
  };
}

/**
 * As compiledOnce, for a write (or a read that locks): it runs on `db` as Kysely runs any
 * statement — in the caller's transaction, or on a pooled connection — never on the shared read
 * connections, and answers the whole result (rows and the count of rows it changed). The quote
 * and payment path's writes built each time were most of the builder's ≈ 15 % of a flow's
 * JavaScript (bench/README.md).
 */
export function compiledWrite<Args extends unknown[], Row>(build: (db: DbOrTx, ...args: Args) => Compilable<Row>) {
  let compiled: Compiled<Row> | undefined;
  return (db: DbOrTx, ...args: Args): Promise<QueryResult<Row>> => {
    compiled ??= compileWithStandIns(args.length, (standIns) => build(db, ...(standIns as Args)));
    return db.executeQuery<Row>(withValues(compiled, args));
  };
}

/** Distinct shapes kept per compiledPerShape; past it a statement is built each time (its variants are then not few). */
const MAX_SHAPES = 200;

/**
 * As compiledWrite, for a statement with a few shapes (the rows and tables of a transaction's
 * deferred INSERT, the columns an UPDATE sets): one compiled query per `shape`, a string that
 * tells the shapes apart, built by `build` with stand-ins for `values`.
 */
export function compiledPerShape<Row>() {
  const shapes = new Map<string, Compiled<Row>>();
  return (db: DbOrTx, shape: string, values: readonly unknown[], build: (standIns: unknown[]) => Compilable<Row>): Promise<QueryResult<Row>> => {
    let compiled = shapes.get(shape);
    if (!compiled) {
      compiled = compileWithStandIns(values.length, build);
      if (shapes.size < MAX_SHAPES) shapes.set(shape, compiled);
    }
    return db.executeQuery<Row>(withValues(compiled, values));
  };
}

/**
 * A row's columns and values for a compiledPerShape INSERT or UPDATE, those left undefined out
 * (the builder leaves them out too): the columns name the shape, the values fill it.
 */
export function definedColumns(row: Record<string, unknown>): [string[], unknown[]] {
  const entries = Object.entries(row).filter(([, value]) => value !== undefined);
  return [entries.map(([column]) => column), entries.map(([, value]) => value)];
}
