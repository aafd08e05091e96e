import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type CompiledQuery, type DatabaseConnection, type Driver, type QueryResult } from 'kysely';
import type { Database, Db } from '../../src/platform/db/database.js';

/**
 * A Kysely with PostgreSQL's compiler whose every statement goes to `executeQuery`, on one
 * connection, transactions included (they begin and commit nothing): for a test that stands
 * between the code and the database.
 */
export function kyselyOn(executeQuery: <R>(query: CompiledQuery) => Promise<QueryResult<R>>, name: string): Db {
  const connection: DatabaseConnection = {
    executeQuery,
    // eslint-disable-next-line require-yield
    async *streamQuery() {
      throw new Error(`${name} streams nothing`);
    },
  };
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: async () => {},
    commitTransaction: async () => {},
    rollbackTransaction: async () => {},
    releaseConnection: async () => {},
    destroy: async () => {},
  };
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
}

/**
 * A Kysely with PostgreSQL's compiler that records the statements it is asked to run instead of
 * sending them: what a repo function would send, for a test to read or explain. Each answers
 * `rows(query)` (none by default).
 */
export function recordingDb(rows: (query: CompiledQuery) => unknown[] = () => []): { db: Db; sent: CompiledQuery[] } {
  const sent: CompiledQuery[] = [];
  const db = kyselyOn(async <R,>(query: CompiledQuery) => {
    sent.push(query);
    return { rows: rows(query) as R[] };
  }, 'a recording database');
  return { db, sent };
}
