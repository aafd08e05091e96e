import pg from 'pg';

/** Defaults of CORRIDOR_DB_CONNECT_TIMEOUT_MS and CORRIDOR_DB_SILENCE_MS (config.ts). */
export const DEFAULT_DB_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_DB_SILENCE_MS = 5_000;

export interface ConnectionBounds {
  /** Longest a new connection may take to be ready (TCP, TLS, start-up, authentication). */
  connectTimeoutMs: number;
  /** How long a connection with a statement under way may hear nothing before it is checked. */
  silenceMs: number;
}

interface Watched {
  /** The socket pg reads (replaced by a TLS socket once TLS is negotiated). */
  stream: NodeJS.EventEmitter | undefined;
  /** Bytes arrived since the last check. */
  heard: boolean;
  /** A statement was under way at the last check. */
  wasBusy: boolean;
  /** LISTEN connections: the statement sent when silent, so that a dead one is noticed too. */
  heartbeat: string | undefined;
}

/** pg's own view of a connection (private fields: pg has no public equivalent). */
interface ClientInternals {
  /** null until the server has sent it (pg sets it so in its constructor). */
  processID?: number | null;
  _ending?: boolean;
  _ended?: boolean;
  _activeQuery?: unknown;
  _sentQueryQueue?: unknown[];
  connection: { stream: NodeJS.EventEmitter & { destroy(): void; destroyed?: boolean } };
}

const internals = (client: pg.Client) => client as unknown as ClientInternals;
/** A statement sent and not yet answered (a queued one waits for the active one, not the server). */
const busy = (client: pg.Client) => internals(client)._activeQuery != null || (internals(client)._sentQueryQueue?.length ?? 0) > 0;
const gone = (client: pg.Client) => {
  const state = internals(client);
  return state._ended === true || state._ending === true || state.connection.stream.destroyed === true;
};

/**
 * Bounds on a PostgreSQL that goes silent without resetting the connection (a failover whose old
 * primary vanished, a network partition, a firewall dropping packets): TCP reports nothing for
 * many minutes, so a statement would wait that long and the process would keep dead sockets.
 *
 * - A new connection must be ready within `connectTimeoutMs` (pg's client `connectionTimeoutMillis`;
 *   not the pool's, which would also bound the wait for a free connection under load).
 * - Every connection has TCP keepalive, after `silenceMs` of quiet: the kernel ends an idle one
 *   whose peer is gone.
 * - Every `silenceMs`, a connection that had a statement under way at the previous check and has
 *   received nothing since is a suspect. A statement's time alone proves nothing (`corridor ledger
 *   verify`, a migration, an import batch or a lock wait can run for minutes without a byte), so
 *   the database is asked on a new connection, bounded by `connectTimeoutMs`, which of this
 *   handle's backends still exist. One that does not (the server restarted or failed over) is
 *   let go; if the database cannot be reached at all, every connection is let go, idle ones too
 *   (each would hang the next statement sent on it), except those that received bytes meanwhile.
 *   Letting go destroys the socket: pg fails the statements on it ("Connection terminated
 *   unexpectedly", answered 503) and its owner replaces it. A long statement whose backend is
 *   alive is left alone. Behind a connection pooler (PgBouncer) backend ids are not the server's:
 *   only the database's reachability is judged there.
 * - A LISTEN connection never has a statement under way: when silent it is sent its LISTEN
 *   again, so a dead one becomes a suspect like any other and is replaced (database.ts).
 *
 * A suspect is found between one and two `silenceMs` after its last byte, and judged within
 * `connectTimeoutMs` more.
 */
export class ConnectionWatch {
  private readonly watched = new Map<pg.Client, Watched>();
  private readonly timer: NodeJS.Timeout;
  private checking = false;
  /** A watched client: pg.Pool makes its clients with `new options.Client(options)`. */
  readonly Client: typeof pg.Client;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly bounds: ConnectionBounds,
  ) {
    this.timer = setInterval(() => void this.check(), bounds.silenceMs);
    this.timer.unref();
    const watch = this;
    this.Client = class WatchedClient extends pg.Client {
      constructor(config?: string | pg.ClientConfig) {
        super({ ...(typeof config === 'string' ? { connectionString: config } : config), ...watch.clientSettings });
        watch.add(this, undefined);
      }
    };
  }

  /** The settings every connection of the handle is made with. */
  get clientSettings(): pg.ClientConfig {
    return { connectionTimeoutMillis: this.bounds.connectTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: this.bounds.silenceMs };
  }

  /**
   * A watched LISTEN client: sent its own `listen` statement again when silent, a no-op for the
   * server that needs an answer (and leaves the connection shown as listening in pg_stat_activity).
   */
  listeningClient(config: pg.ClientConfig, listen: string): pg.Client {
    const client = new pg.Client({ ...config, ...this.clientSettings });
    this.add(client, listen);
    return client;
  }

  private add(client: pg.Client, heartbeat: string | undefined): void {
    const entry: Watched = { stream: undefined, heard: true, wasBusy: false, heartbeat };
    this.watched.set(client, entry);
    this.follow(client, entry);
    client.once('end', () => this.watched.delete(client));
  }

  /** Notes the bytes of the socket pg reads now. */
  private follow(client: pg.Client, entry: Watched): void {
    const { stream } = internals(client).connection;
    if (entry.stream === stream) return;
    entry.stream = stream;
    entry.heard = true;
    stream.on('data', () => {
      entry.heard = true;
    });
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    const suspects: pg.Client[] = [];
    for (const [client, entry] of this.watched) {
      // A client let go without its 'end' listener (LISTEN's forsake removes every listener).
      if (gone(client)) {
        this.watched.delete(client);
        continue;
      }
      this.follow(client, entry);
      const isBusy = busy(client);
      if (isBusy && entry.wasBusy && !entry.heard) suspects.push(client);
      else if (!isBusy && !entry.heard && entry.heartbeat !== undefined && internals(client).processID != null) client.query(entry.heartbeat).catch(() => {});
      entry.wasBusy = isBusy;
      entry.heard = false;
    }
    if (suspects.length === 0) return;
    this.checking = true;
    try {
      await this.judge();
    } finally {
      this.checking = false;
    }
  }

  /** Asks the database, on a new connection, which backends still exist, and lets the others go. */
  private async judge(): Promise<void> {
    const connected = [...this.watched.keys()].filter((client) => internals(client).processID != null && !gone(client));
    const probe = new pg.Client({ ...this.config, connectionTimeoutMillis: this.bounds.connectTimeoutMs });
    probe.on('error', () => {});
    // The connect timeout bounds the start-up only: the question must not wait for ever either.
    const deadline = setTimeout(() => internals(probe).connection.stream.destroy(), this.bounds.connectTimeoutMs);
    let alive: (client: pg.Client) => boolean;
    try {
      await probe.connect();
      const pids = connected.map((client) => internals(client).processID!);
      const { rows } = await probe.query<{ self: number; present: number[] }>(
        'select pg_backend_pid() as self, array(select pid from pg_stat_activity where pid = any($1::int[])) as present',
        [pids],
      );
      const { self, present } = rows[0]!;
      // Behind a pooler the id pg was given is not the server's process: backends cannot be told apart.
      if (self !== internals(probe).processID) return;
      const existing = new Set(present);
      alive = (client) => existing.has(internals(client).processID!);
    } catch (error) {
      // The server answered with an error of its own (too many connections, starting up): it is there.
      if (error instanceof pg.DatabaseError) return;
      alive = () => false;
    } finally {
      clearTimeout(deadline);
      probe.end().catch(() => {});
    }
    for (const client of connected) {
      // Bytes that arrived while the question was out prove the connection alive whatever the
      // answer (a database too busy to open a connection in time, not one that is gone).
      if (alive(client) || this.watched.get(client)?.heard) continue;
      this.watched.delete(client);
      internals(client).connection.stream.destroy();
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.watched.clear();
  }
}
