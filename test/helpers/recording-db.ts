import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type CompiledQuery, type DatabaseConnection, type Driver } from 'kysely';
import type { Database, Db } from '../../src/platform/db/database.js';

/**
 * A Kysely with PostgreSQL's compiler that records the statements it is asked to run instead of
 * sending them: what a repo function would send, for a test to read or explain. Each answers
 * `rows(query)` (none by default).
 */
export function recordingDb(rows: (query: CompiledQuery) => unknown[] = () => []): { db: Db; sent: CompiledQuery[] } {
  const sent: CompiledQuery[] = [];
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery) {
      sent.push(query);
      return { rows: rows(query) as R[] };
    },
    // eslint-disable-next-line require-yield
    async *streamQuery() {
      throw new Error('a recording database streams nothing');
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
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  return { db, sent };
}
