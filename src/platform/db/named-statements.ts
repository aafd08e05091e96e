import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { DescribedOnceQuery, type Riders } from './described-once.js';

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
 * outside a transaction is retried once; inside one it fails the transaction (which `withTx` runs
 * again from the start) and that connection is replaced.
 * A connection asks PostgreSQL to describe a statement's rows once, not on every execution
 * (described-once.ts).
 *
 * BEGIN and COMMIT ride with a transaction's statements instead of taking a round trip each (a
 * round trip costs both processes a socket write and a wake-up, more than the BEGIN itself):
 * BEGIN is held until the transaction's first statement and sent in the same write, before it;
 * a statement whose text ends with COMMIT_AFTER is sent with COMMIT after it (tx.ts marks the
 * last write of a transaction that has nothing left to check). PostgreSQL runs them in order and
 * an error skips the rest up to the Sync, so the outcome is that of separate round trips: a
 * failed statement leaves the transaction open and aborted (the caller rolls back), a failed
 * COMMIT is the statement's error. A transaction that sent nothing sends neither.
 */
export const COMMIT_AFTER = ' /* then commit */';
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

/** What pg answers to a parameterless command that was not sent (a held BEGIN, a COMMIT already sent). */
const notSent = (command: string) => ({ command, rowCount: null, rows: [], fields: [] });
const BEGIN = /^\s*(begin|start)\b/i;
const END = /^\s*(commit|end|rollback)\b(?!.*\bto\b)/is;

class NamedStatementClient implements PostgresPoolClient {
  private inTransaction = false;
  private broken = false;
  /**
   * The connection's loss while it is checked out. pg-pool listens for a client's errors only
   * while it is idle, and pg emits a loss on the client itself when no query of it is under way
   * (a transaction between statements, a backend terminated by an operator, a failover): with
   * no listener that 'error' event would end the process. Noted here, the loss fails the next
   * statement (pg refuses a lost connection's queries) and the connection is not pooled again.
   */
  private lost: Error | undefined;
  private readonly onLoss = (error: Error) => {
    this.lost ??= error;
  };
  /** The BEGIN of the open transaction while no statement has gone with it. */
  private heldBegin: string | undefined;
  /** A statement with COMMIT_AFTER ended the transaction; the caller's COMMIT is not sent again. */
  private committed = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly pool: NamedStatementPool,
  ) {
    client.on('error', this.onLoss);
  }

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== 'string') {
      // pg runs its queries in order: a held BEGIN queued first still goes first.
      this.sendHeldBegin().catch(() => {});
      return this.client.query(sqlOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
    }
    if (!parameters || parameters.length === 0) {
      if (BEGIN.test(sqlOrCursor)) {
        this.inTransaction = true;
        this.committed = false;
        this.heldBegin = sqlOrCursor;
        return Promise.resolve(notSent('BEGIN') as unknown as PostgresQueryResult<R>);
      }
      if (END.test(sqlOrCursor)) {
        this.inTransaction = false;
        if (this.heldBegin !== undefined || this.committed) {
          // Nothing was sent in the transaction, or its last statement took the COMMIT along.
          this.heldBegin = undefined;
          this.committed = false;
          return Promise.resolve(notSent(sqlOrCursor.trim().split(/\s/)[0]!.toUpperCase()) as unknown as PostgresQueryResult<R>);
        }
      }
      return this.afterHeldBegin(() => this.client.query(sqlOrCursor, parameters as unknown[]) as unknown as Promise<PostgresQueryResult<R>>);
    }
    return this.named<R>(sqlOrCursor, parameters as unknown[], true);
  }

  /** Sends the held BEGIN on its own (before a statement that cannot carry it). */
  private sendHeldBegin(): Promise<unknown> {
    const begin = this.heldBegin;
    if (begin === undefined) return Promise.resolve();
    this.heldBegin = undefined;
    return this.client.query(begin);
  }

  private async afterHeldBegin<T>(send: () => Promise<T>): Promise<T> {
    if (this.committed) throw new Error('a statement after its transaction committed');
    if (this.heldBegin !== undefined) await this.sendHeldBegin();
    return send();
  }

  private async named<R>(text: string, values: unknown[], mayRetry: boolean): Promise<PostgresQueryResult<R>> {
    if (this.committed) throw new Error('a statement after its transaction committed');
    const name = this.pool.nameFor(text);
    const commits = this.inTransaction && text.endsWith(COMMIT_AFTER);
    try {
      if (!name) {
        const result = await this.afterHeldBegin(() => this.client.query({ text, values }));
        if (commits) {
          await this.client.query('commit');
          this.ended();
        }
        return result as unknown as PostgresQueryResult<R>;
      }
      // BEGIN rides only with a statement this connection has parsed: pg credits the first ParseComplete to the statement.
      const parsed = (this.client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements[name] !== undefined;
      if (this.heldBegin !== undefined && !parsed) await this.sendHeldBegin();
      const riders: Riders = { ...(this.heldBegin !== undefined ? { before: this.heldBegin } : {}), ...(commits ? { after: 'commit' } : {}) };
      this.heldBegin = undefined;
      const result = await new Promise<PostgresQueryResult<R>>((resolve, reject) => {
        const query = new DescribedOnceQuery(name, text, values, (error, result) => (error ? reject(error) : resolve(result as unknown as PostgresQueryResult<R>)), riders);
        this.client.query(query as unknown as pg.Submittable);
      });
      if (commits) this.ended();
      return result;
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

  /** The transaction committed with its last statement. */
  private ended(): void {
    this.inTransaction = false;
    this.committed = true;
  }

  release(): void {
    this.client.removeListener('error', this.onLoss);
    // A lost connection, or one whose prepared statements went stale inside a transaction, is not reused.
    this.client.release(this.lost ?? (this.broken ? new Error('prepared statement went stale') : undefined));
  }
}
