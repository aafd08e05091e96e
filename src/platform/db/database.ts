import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect, type Dialect, type Transaction } from 'kysely';
import pg from 'pg';
import { parse as parseConnectionString } from 'pg-connection-string';
import { lockDataDir } from './data-dir-lock.js';
import { Waiting } from './waiting.js';
import { StartupLog } from './embedded-start.js';
import { NamedStatementPool } from './named-statements.js';
import { PipelinedReads, usePipelinedReads } from './pipelined-reads.js';
import { PGliteDialect } from './pglite-dialect.js';
import { ConnectionWatch, DEFAULT_DB_CONNECT_TIMEOUT_MS, DEFAULT_DB_SILENCE_MS } from './silent-connections.js';

/**
 * The table map. Empty here on purpose: each module adds its own tables by declaration merging
 * (`declare module '…/platform/db/database.js' { interface Database { … } }`), so the platform
 * knows no domain and every table is declared beside the repo that owns it.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Database {}

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Repos take either the root handle or an open transaction. */
export type DbOrTx = Db | Tx;

export type Engine = 'postgres' | 'pglite';

export interface DbHandle {
  db: Db;
  engine: Engine;
  /** Human description of where the data lives, for the start-up log. */
  location: string;
  /**
   * Calls `onMessage` for every NOTIFY on `channel`; resolves once listening. A lost LISTEN
   * connection is replaced: `onReset` is called when it is lost (what was sent meanwhile is
   * missed), `onListening` each time LISTEN is in place, the first time and after each loss.
   */
  listen(channel: string, onMessage: (payload: string) => void, onReset?: () => void, onListening?: () => void): Promise<void>;
  /**
   * About how many milliseconds a statement asked now would wait (0 when none waits): the larger
   * of a request for a database connection's wait and, on PostgreSQL, a read's on the pipelined
   * read connections (pipelined-reads.ts). How far behind its database the process is
   * (platform/http/overload.ts).
   */
  connectionWaitMs(): number;
  close(): Promise<void>;
  /** PGlite only: a snapshot of the whole data directory (tests start from a migrated one). */
  dumpDataDir?: () => Promise<Blob>;
}

const INT8_OID = 20;
/** Connections shared by the reads every request makes (pipelined-reads.ts), beside the pool. */
const PIPELINED_READ_CONNECTIONS = 2;

export interface OpenOptions {
  databaseUrl?: string;
  dataDir?: string;
  /** PGlite only: start from a dump of another instance's data directory (tests). */
  loadDataDir?: Blob;
  /** Postgres only: pool size. */
  poolSize?: number;
  /** Postgres only: schema to use as search_path (tests isolate themselves this way). */
  schema?: string;
  /** Postgres only: bounds on a database gone silent (silent-connections.ts); config.ts's defaults when unset. */
  connectTimeoutMs?: number;
  silenceMs?: number;
}

/**
 * Where a connection string points, without its credentials, parsed as pg parses it: a Unix
 * socket directory (`postgres://user@/db?host=/var/run/postgresql`, which a WHATWG URL refuses)
 * as well as a host and port.
 */
export function postgresLocation(databaseUrl: string): string {
  const { host, port, database } = parseConnectionString(databaseUrl);
  const where = host?.startsWith('/') ? `socket ${host}` : `${host || 'localhost'}:${port || 5432}`;
  return `PostgreSQL ${database ?? ''} on ${where}`;
}

/** How long the queue of requests for a connection must stay non-empty for its hand-outs to measure the database's pace. */
const PACE_WINDOW_MS = 250;
/** Weight of each new window in the pace (an exponentially weighted mean: a few windows make it). */
const PACE_WEIGHT = 0.3;

/**
 * The requests for a connection (a statement outside a transaction, a transaction) that wait for
 * one: every pooled connection, or PGlite's only one, taken. pg-pool and PGlite's driver serve
 * them first come, first served and neither bounds the wait, so under more work than the database
 * does the wait grows. How long a request arriving now would wait is the larger of the oldest
 * waiter's wait so far and the waiters ahead of it at the pace connections are handed out, that
 * pace measured only over windows in which the queue never emptied (then it is the most the
 * database does, not what was asked of it). The second sees a burst of arrivals at once, before
 * any of them has waited. The pipelined reads (pipelined-reads.ts) take no connection: they wait
 * in queues of their own, measured there (`PipelinedReads.waitMs`).
 */
class ConnectionQueue {
  private readonly waiting = new Waiting();
  /** Connections handed out per millisecond while the queue has not emptied since; 0 until measured. */
  private pace = 0;
  /** The current window: when it began (the queue non-empty since), and the hand-outs in it. */
  private windowStart = 0;
  private windowServed = 0;

  /** `dialect`, its driver's connection requests timed. */
  timed(dialect: Dialect): Dialect {
    const queue = this;
    return {
      createAdapter: () => dialect.createAdapter(),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
      createDriver() {
        const driver = dialect.createDriver();
        const acquire = driver.acquireConnection.bind(driver);
        driver.acquireConnection = async () => {
          const entry = queue.arrive();
          try {
            return await acquire();
          } finally {
            queue.leave(entry);
          }
        };
        return driver;
      },
    };
  }

  private arrive(): { since: number } {
    const entry = this.waiting.arrive();
    if (this.waiting.size === 1) {
      this.windowStart = entry.since;
      this.windowServed = 0;
    }
    return entry;
  }

  private leave(entry: { since: number }): void {
    this.waiting.leave(entry);
    // A window in which the queue emptied measured what was asked, not the pace: the next arrival
    // starts another. The pace is forgotten too: one measured across a stall (a lock wait holding
    // every connection for seconds) would otherwise make the next short queue look minutes long.
    if (this.waiting.size === 0) {
      this.pace = 0;
      return;
    }
    this.windowServed++;
    const now = performance.now();
    const elapsed = now - this.windowStart;
    if (elapsed < PACE_WINDOW_MS) return;
    const measured = this.windowServed / elapsed;
    this.pace = this.pace === 0 ? measured : this.pace + PACE_WEIGHT * (measured - this.pace);
    this.windowStart = now;
    this.windowServed = 0;
  }

  /** How long a request for a connection made now would wait, about. */
  waitMs(): number {
    const oldest = this.waiting.oldestMs();
    return this.pace === 0 ? oldest : Math.max(oldest, this.waiting.size / this.pace);
  }
}

export async function openDatabase(options: OpenOptions): Promise<DbHandle> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options) : openPglite(options);
}

/** A lost LISTEN connection is opened again after this pause, doubled on each failure up to the maximum. */
const LISTEN_RETRY_FIRST_MS = 500;
const LISTEN_RETRY_MAX_MS = 15_000;

/**
 * Lets a LISTEN connection go: nothing it reports reaches its listeners any more, and the
 * errors of its end (the rest of a loss reported twice, a FATAL message then the socket's
 * close) are swallowed, as an 'error' event without a listener would end the process.
 */
function forsake(client: pg.Client): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => {});
  return client.end().catch(() => {});
}

/**
 * Session settings every connection starts with, whatever the server, database or role sets by
 * default (postgresql.conf's `timezone` is the machine's own zone after initdb; a DBA may have run
 * `ALTER DATABASE … SET`): the driver reads timestamps only in ISO DateStyle (any other made every
 * instant an Invalid Date, a 500); in UTC an instant's text is printed without parsing it
 * (timestamps.ts); and the locking of money paths is designed for read committed, where under a
 * default of repeatable read or serializable every concurrent write to one balance would fail and
 * be retried.
 */
const PINNED_SESSION_OPTIONS = ['-c DateStyle=ISO', '-c TimeZone=UTC', '-c default_transaction_isolation=read\\ committed'];

/**
 * The connection settings pg reads from `databaseUrl`, with the URL's own `options` (or
 * PGOPTIONS) kept and Corridor's after them, so that its pins win: pg would let a URL's `options`
 * replace a configured one outright, so the URL is parsed here, as pg parses it, instead.
 */
function connectionSettings(databaseUrl: string, schema: string | undefined): pg.ClientConfig {
  const parsed = parseConnectionString(databaseUrl);
  const options = [parsed.options ?? process.env.PGOPTIONS, schema ? `-c search_path=${schema}` : undefined, ...PINNED_SESSION_OPTIONS];
  return { ...(parsed as pg.ClientConfig), options: options.filter(Boolean).join(' ') };
}

async function openPostgres(databaseUrl: string, options: OpenOptions): Promise<DbHandle> {
  const clientConfig: pg.ClientConfig = {
    ...connectionSettings(databaseUrl, options.schema),
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? (v: string) => BigInt(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  };
  const watch = new ConnectionWatch(clientConfig, {
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_DB_CONNECT_TIMEOUT_MS,
    silenceMs: options.silenceMs ?? DEFAULT_DB_SILENCE_MS,
  });
  // The connect timeout is the clients' (watch.Client), not the pool's: pg-pool would also apply
  // it to a wait for a free connection, and a busy pool is not a database that is gone.
  const pool = new pg.Pool({ ...clientConfig, max: options.poolSize ?? 10, Client: watch.Client });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it on next use.
  });
  // pg-pool listens for a client's errors only while it is idle, and named-statements.ts only once
  // it has the client, a microtask after the hand-over: a backend terminated right after its
  // start-up sends its FATAL in the chunk that ends the start-up, read in that gap, and an
  // 'error' event nobody hears ends the process (seen in CI under backend-kills). Every pooled
  // client keeps this listener; pg marks a lost client unqueryable, and the pool drops it.
  pool.on('connect', (client) => client.on('error', () => {}));
  const named = new NamedStatementPool(pool);
  const queue = new ConnectionQueue();
  const db = new Kysely<Database>({ dialect: queue.timed(new PostgresDialect({ pool: named })) });
  const reads = new PipelinedReads(clientConfig, named, PIPELINED_READ_CONNECTIONS, watch.Client);
  usePipelinedReads(db, reads);
  const listeners: pg.Client[] = [];
  let closed = false;
  return {
    db,
    engine: 'postgres',
    location: `${postgresLocation(databaseUrl)}${options.schema ? ` (schema ${options.schema})` : ''}`,
    async listen(channel, onMessage, onReset, onListening) {
      let delay = LISTEN_RETRY_FIRST_MS;
      const connect = async (): Promise<void> => {
        const listen = `LISTEN "${channel.replace(/"/g, '')}"`;
        const client = watch.listeningClient(clientConfig, listen);
        // A lost or failed connection is replaced once, after a growing pause: its error and
        // its end (or a failed connect and its error event) both report the same loss, and a
        // database that refuses every connection must not be asked more often each round.
        let lost = false;
        const reconnect = () => {
          if (lost || closed) return;
          lost = true;
          onReset?.();
          forsake(client);
          const at = listeners.indexOf(client);
          if (at >= 0) listeners.splice(at, 1);
          setTimeout(() => connect().catch(() => {}), delay).unref();
          delay = Math.min(delay * 2, LISTEN_RETRY_MAX_MS);
        };
        client.on('error', reconnect);
        client.on('end', reconnect);
        client.on('notification', (msg) => {
          if (msg.channel === channel) onMessage(msg.payload ?? '');
        });
        try {
          await client.connect();
          await client.query(listen);
        } catch (error) {
          reconnect();
          throw error;
        }
        // Closed while this connection was being made: it is not kept.
        if (closed) {
          await forsake(client);
          return;
        }
        listeners.push(client);
        delay = LISTEN_RETRY_FIRST_MS;
        onListening?.();
      };
      await connect();
    },
    // A request's reads wait on the pipelined connections while the pool may sit idle, and its
    // writes on the pool while the reads flow: either wait makes the process that far behind.
    connectionWaitMs: () => Math.max(queue.waitMs(), reads.waitMs()),
    async close() {
      closed = true;
      watch.close();
      await Promise.all(listeners.map(forsake));
      await reads.close();
      await db.destroy();
    },
  };
}

async function openPglite(options: OpenOptions): Promise<DbHandle> {
  let unlock = async () => {};
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    unlock = await lockDataDir(options.dataDir);
  }
  try {
    // PostgreSQL's own lock file is a remnant whenever this process holds the directory's lock,
    // and one left empty (a start killed between creating it and writing it) stops every later
    // start ("lock file postmaster.pid is empty") until someone removes it by hand. It guards
    // nothing here: PGlite's PostgreSQL always runs as pid 42, so it takes any it finds as its own.
    if (options.dataDir) rmSync(join(options.dataDir, 'postmaster.pid'), { force: true });
    return await startPglite(options, unlock);
  } catch (error) {
    await unlock();
    throw error;
  }
}

async function startPglite(options: OpenOptions, unlock: () => Promise<void>): Promise<DbHandle> {
  // Loaded only for the embedded engine: a process on PostgreSQL never pays for it.
  const { PGlite, types: pgliteTypes } = await import('@electric-sql/pglite');
  // Durability, as PGlite gives it on a directory (test/process/embedded-crash.test.ts): its
  // PostgreSQL commits with synchronous_commit on, so a commit's WAL is written to the files
  // (plain write(2), no cache in between) before its query resolves, and a killed process loses
  // nothing it acknowledged; the next start replays the WAL. Nothing is ever fsynced (PGlite runs
  // PostgreSQL with fsync off and its Node file system has no fsync): an OS crash or power cut
  // can lose recent commits or corrupt the directory. relaxedDurability is left alone: it only
  // defers the browser file systems' sync, and the Node one has none.
  const startup = new StartupLog();
  const pglite = new PGlite({
    onStderr: startup.onStderr,
    // PostgreSQL's default 128 MB buffer pool took 0.4–0.7 s of every start to set up inside
    // WebAssembly and about 200 MB of memory; 32 MB serves a laptop's or a test's database, and
    // pages beyond it are read from the operating system's cache.
    startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=32MB'],
    // A new in-memory database (a test's template, a throwaway) with 1 MB WAL segments instead of
    // 16: the dump each test file starts from is 10 MB smaller, 0.25 s less to unpack. A data
    // directory is created with PostgreSQL's default.
    ...(options.dataDir ? {} : { initDbStartParams: ['--wal-segsize=1'] }),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    parsers: {
      [pgliteTypes.INT8]: (v: string) => BigInt(v),
      // node-postgres's timestamptz parser, so both engines read the same instants: PGlite's own
      // reads years 1–99 as 1901–1999.
      [pgliteTypes.TIMESTAMPTZ]: pg.types.getTypeParser(pgliteTypes.TIMESTAMPTZ, 'text'),
    },
    serializers: { [pgliteTypes.INT8]: (v: unknown) => String(v) },
  });
  try {
    await pglite.waitReady;
  } catch (error) {
    throw startup.failure(options.dataDir ?? 'memory', error);
  } finally {
    startup.stop();
  }
  const queue = new ConnectionQueue();
  const db = new Kysely<Database>({ dialect: queue.timed(new PGliteDialect(pglite)) });
  return {
    db,
    engine: 'pglite',
    location: options.dataDir ? `PGlite in ${options.dataDir}` : 'PGlite in memory',
    async listen(channel, onMessage, _onReset, onListening) {
      // In the process itself: never lost.
      await pglite.listen(channel, onMessage);
      onListening?.();
    },
    connectionWaitMs: () => queue.waitMs(),
    async close() {
      try {
        await db.destroy();
        await pglite.close();
      } finally {
        await unlock();
      }
    },
    dumpDataDir: () => pglite.dumpDataDir('none'),
  };
}
