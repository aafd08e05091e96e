import type { Compilable, CompiledQuery } from 'kysely';
import type { DbOrTx } from './database.js';
import { runRead } from './pipelined-reads.js';

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
  let compiled: { query: CompiledQuery<Row>; argumentAt: number[] } | undefined;
  return async (db: DbOrTx, ...args: Args): Promise<Row[]> => {
    if (!compiled) {
      const standIns = args.map((_, index) => ({ standIn: index }));
      const query = build(db, ...(standIns as Args)).compile();
      const argumentAt = query.parameters.map((value) => standIns.indexOf(value as (typeof standIns)[number]));
      if (argumentAt.includes(-1) || new Set(argumentAt).size !== args.length) {
        throw new Error(`compiledOnce: each parameter must be one of the ${args.length} arguments, once: ${query.sql}`);
      }
      compiled = { query, argumentAt };
    }
    const { query, argumentAt } = compiled;
    return runRead<Row>(db, { ...query, parameters: argumentAt.map((index) => args[index]) });
  };
}
