import { createQueryId, type CompiledQuery, type QueryResult } from 'kysely';
import pg from 'pg';
import { DescribedOnceQuery } from './described-once.js';
import { isStalePlan, type NamedStatementPool } from './named-statements.js';
import { isConnectionLost } from './unavailable.js';
import { Waiting } from './waiting.js';

/**
 * The reads sent here are planned once per connection, never per execution. Under the default
 * (`auto`) PostgreSQL compares the generic plan's estimated cost with the custom plans' and plans
 * again on every execution while the generic one looks dearer. A list page's generic plan must
 * guess the rows of an unknown platform and an unknown LIMIT (a tenth of them), so its estimate
 * grows with the table while a custom plan's does not: with 40,000 customers of another platform
 * each page was planned afresh, 0.2 ms of PostgreSQL's time per page in Bind, and PostgreSQL's
 * CPU per `GET /customers?limit=20` tripled (77 → 225 µs, bench/README.md). Each statement here
 * reads by primary key or along the platform's own (platform_id, id) index whatever the
 * parameters (platform-page.ts), which is the generic plan (test/pg/list-plans.test.ts).
 */
const GENERIC_PLANS = 'set plan_cache_mode = force_generic_plan';

/**
 * The reads every request makes (a point read, a page of a list) outside any transaction, sent
 * on a few connections shared by every request in pg's pipeline mode instead of one pooled
 * connection each. A read on the pool is a socket write to PostgreSQL of its own, which on
 * loopback wakes a backend per query; under load that write was the largest single cost of a
 * point read (bench/README.md). Here the reads that the requests of one event-loop turn send are
 * written to each connection at once (the socket is corked until `setImmediate`), PostgreSQL
 * reads them in one go and answers them in order, and no pool checkout or release is paid.
 *
 * Only single statements that cannot hold a connection for long go here: a pipelined connection
 * answers in order, so a slow statement would delay every read behind it. Each statement has its
 * own Sync, so one that fails fails alone. Statements are named and described once, as on the
 * pool (named-statements.ts, described-once.ts), with the same retry of a stale prepared
 * statement. A connection that fails is replaced on the next read; a read whose connection was
 * lost under it is sent again (`isConnectionLost`), as a read may be.
 */
export class PipelinedReads {
  private readonly clients: Array<pg.Client | undefined>;
  private turn = 0;
  private readonly corked = new Set<{ uncork(): void }>();
  private closed = false;
  /** Connections that became ready: a read lost on one may be sent again, not one on a connection that never opened. */
  private readonly opened = new WeakSet<pg.Client>();
  /**
   * Connections let go because a read found them lost. Letting go ends the client, after which
   * pg fails the reads still queued on it with plain 'Connection terminated': those were lost
   * with it too, and are sent again like the first.
   */
  private readonly lost = new WeakSet<pg.Client>();
  /** The reads asked and not yet answered. */
  private readonly unanswered = new Waiting();

  /** `Client`: how connections are made (database.ts watches them for silence, silent-connections.ts). */
  constructor(
    private readonly config: pg.ClientConfig,
    private readonly names: NamedStatementPool,
    connections: number,
    private readonly Client: typeof pg.Client = pg.Client,
  ) {
    this.clients = new Array<pg.Client | undefined>(connections).fill(undefined);
  }

  async query<R>(text: string, values: readonly unknown[]): Promise<R[]> {
    const read = this.unanswered.arrive();
    try {
      return await this.sendUntilAnswered<R>(text, values);
    } finally {
      this.unanswered.leave(read);
    }
  }

  /**
   * About how many milliseconds a read asked now would wait for its answer (0 when none waits):
   * how long the oldest read still unanswered has waited. Each connection answers in order and
   * they take reads in turn, so reads asked now queue behind it on its connection: when
   * PostgreSQL is slower than the reads asked of it (a lock, a slow disk, its CPU starved), the
   * queues grow and the oldest read's age with them; when one read stalls (a lock wait), the
   * reads behind it wait as long as it has. Nothing is remembered of the reads answered, so the
   * estimate is 0 again as soon as every read is answered, never a pace measured across a stall.
   * O(1): read on every request (platform/http/overload.ts).
   */
  waitMs(): number {
    return this.unanswered.oldestMs();
  }

  private async sendUntilAnswered<R>(text: string, values: readonly unknown[]): Promise<R[]> {
    let renamed = false;
    let resends = 0;
    for (;;) {
      const client = this.client();
      try {
        return await this.send<R>(client, text, values);
      } catch (error) {
        if (isStalePlan(error) && !renamed) {
          renamed = true;
          this.names.rename(text);
        } else if ((isConnectionLost(error) || this.lost.has(client)) && this.opened.has(client) && resends < this.clients.length && !this.closed) {
          // The connection ended under the read (a terminated backend, a restart, an idle-session
          // timeout): a read changes nothing, so it is sent again rather than failing its request.
          // The loss may not have been reported on the client yet (its other reads fail with it),
          // so the connection is let go here; the other connections may have died with it, so
          // the read may go once on each before one of them is new. A connection that never
          // opened (the database unreachable, the connect timeout) fails its reads as lost too:
          // they are not sent again, each new try would wait out the timeout once more.
          resends++;
          this.lost.add(client);
          this.drop(client);
        } else {
          throw error;
        }
      }
    }
  }

  private send<R>(client: pg.Client, text: string, values: readonly unknown[]): Promise<R[]> {
    if (this.closed) return Promise.reject(new Error('the database is closed'));
    this.corkUntilNextTurn(client);
    const name = this.names.nameFor(text);
    return new Promise<R[]>((resolve, reject) => {
      const done = (error: Error | undefined, result: pg.QueryResult | undefined) => (error ? reject(error) : resolve(result!.rows as R[]));
      if (name) client.query(new DescribedOnceQuery(name, text, values as unknown[], done) as unknown as pg.Submittable);
      else client.query({ text, values: [...values] }).then((result) => done(undefined, result), (error: Error) => done(error, undefined));
    });
  }

  /** The next connection in turn, opened (or replaced) when needed. */
  private client(): pg.Client {
    const slot = this.turn;
    this.turn = (slot + 1) % this.clients.length;
    const existing = this.clients[slot];
    if (existing) return existing;
    const client = new this.Client({ ...this.config, pipeline: true });
    // A failed or lost connection is let go (its socket closed) and replaced by the next read.
    const drop = () => this.drop(client);
    client.on('error', drop);
    client.on('end', drop);
    // Reads sent before the connection is ready wait in pg's queue; a failed connection fails them.
    client.connect().then(() => this.opened.add(client), drop);
    // Queued ahead of every read on this connection (GENERIC_PLANS).
    client.query(GENERIC_PLANS).catch(drop);
    this.clients[slot] = client;
    return client;
  }

  /** Lets `client` go: its slot takes a new connection on its next read. Its 'error' listener stays, for the rest of its end. */
  private drop(client: pg.Client): void {
    const slot = this.clients.indexOf(client);
    if (slot >= 0) this.clients[slot] = undefined;
    client.end().catch(() => {});
  }

  /** Holds the connection's writes until the event loop's next turn, so they go in one write. */
  private corkUntilNextTurn(client: pg.Client): void {
    const stream = (client as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream;
    if (this.corked.has(stream)) return;
    if (this.corked.size === 0) setImmediate(() => this.uncorkAll());
    stream.cork();
    this.corked.add(stream);
  }

  private uncorkAll(): void {
    for (const stream of this.corked) stream.uncork();
    this.corked.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.uncorkAll();
    await Promise.all(this.clients.map((client) => client?.end().catch(() => {})));
  }
}

// Keyed by the root handle (database.ts's Db, which imports this file: named by shape here).
const readers = new WeakMap<object, PipelinedReads>();

export function usePipelinedReads(db: object, reads: PipelinedReads): void {
  readers.set(db, reads);
}

/**
 * Runs a compiled read: on the shared pipelined connections when `db` is the root handle of a
 * PostgreSQL database, else (PGlite, or inside a transaction) as Kysely runs any statement.
 */
export async function runRead<Row>(db: { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> }, query: CompiledQuery<Row>): Promise<Row[]> {
  const reads = readers.get(db);
  if (reads) return reads.query<Row>(query.sql, query.parameters);
  return (await db.executeQuery<Row>({ ...query, queryId: createQueryId() })).rows;
}
