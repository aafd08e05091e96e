import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { DescribedOnceQuery } from './described-once.js';

/**
 * Kysely's PostgreSQL driver sends every statement unnamed, so PostgreSQL parses and plans it
 * on each execution. Through this pool every parameterised statement is sent as a named
 * prepared statement, named after its text: a connection parses it once, then only binds and
 * executes it (PostgreSQL switches to a generic plan where that is as good). Statements without
 * parameters (BEGIN, COMMIT, migrations of several statements) go through unchanged.
 *
 * Names are per process and bounded (a query builder can make endless variants, e.g. IN lists
 * of every length); past the bound statements go unnamed again. When another process changes a
 * table's columns, a prepared `select *` fails with "cached plan must not change result type":
 * the text then gets a new name (so every connection prepares it afresh), and a statement
 * outside a transaction is retried once; inside one it fails, and that connection is replaced.
 * A connection asks PostgreSQL to describe a statement's rows once, not on every execution
 * (described-once.ts).
 */
const MAX_NAMED = 2_000;
export const isStalePlan = (error: unknown) =>
  (error as { code?: string }).code === '0A000' && /cached plan must not change result type/.test((error as Error).message);

export class NamedStatementPool implements PostgresPool {
  private readonly names = new Map<string, string>();
  private generation = 0;

  constructor(private readonly pool: pg.Pool) {}

  async connect(): Promise<PostgresPoolClient> {
    return new NamedStatementClient(await this.pool.connect(), this);
  }

  end(): Promise<void> {
    return this.pool.end();
  }

  nameFor(text: string): string | undefined {
    const known = this.names.get(text);
    if (known !== undefined || this.names.size >= MAX_NAMED) return known;
    const name = `corridor_${++this.generation}`;
    this.names.set(text, name);
    return name;
  }

  /** Forgets the statement's name, so that every connection prepares its text again. */
  rename(text: string): void {
    this.names.delete(text);
  }
}

class NamedStatementClient implements PostgresPoolClient {
  private inTransaction = false;
  private broken = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly pool: NamedStatementPool,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== 'string') return this.client.query(sqlOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
    if (!parameters || parameters.length === 0) {
      if (/^\s*(begin|start)\b/i.test(sqlOrCursor)) this.inTransaction = true;
      else if (/^\s*(commit|end|rollback)\b(?!.*\bto\b)/is.test(sqlOrCursor)) this.inTransaction = false;
      return this.client.query(sqlOrCursor, parameters as unknown[]) as unknown as Promise<PostgresQueryResult<R>>;
    }
    return this.named<R>(sqlOrCursor, parameters as unknown[], true);
  }

  private async named<R>(text: string, values: unknown[], mayRetry: boolean): Promise<PostgresQueryResult<R>> {
    const name = this.pool.nameFor(text);
    try {
      if (!name) return (await this.client.query({ text, values })) as unknown as PostgresQueryResult<R>;
      return await new Promise<PostgresQueryResult<R>>((resolve, reject) => {
        const query = new DescribedOnceQuery(name, text, values, (error, result) => (error ? reject(error) : resolve(result as unknown as PostgresQueryResult<R>)));
        this.client.query(query as unknown as pg.Submittable);
      });
    } catch (error) {
      if (!name || !isStalePlan(error)) throw error;
      this.pool.rename(text);
      if (this.inTransaction || !mayRetry) {
        this.broken = true;
        throw error;
      }
      return this.named<R>(text, values, false);
    }
  }

  release(): void {
    // A connection whose prepared statements went stale inside a transaction is not reused.
    this.client.release(this.broken ? new Error('prepared statement went stale') : undefined);
  }
}
