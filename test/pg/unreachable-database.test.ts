import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createPlatform } from '../../src/modules/platforms/service.js';
import { systemClock } from '../../src/platform/clock.js';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { withTx } from '../../src/platform/db/tx.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { waitUntil } from '../helpers/process.js';

/**
 * A TCP proxy to PostgreSQL that can be made a black hole: it stops forwarding and stops reading
 * without closing a socket, and new connections are accepted and left unanswered. That is what a
 * failover whose old primary vanished, a partition or a firewall dropping packets looks like to
 * the process: no error, no reset, only silence. Restored, it forwards again.
 */
class BlackholeProxy {
  private readonly server = net.createServer((socket) => this.accept(socket));
  private readonly pairs = new Set<{ client: net.Socket; server: net.Socket | undefined }>();
  /** Connections left silent for good by `strand`: never forwarded again, closed with the proxy. */
  private readonly stranded: net.Socket[] = [];
  private silent = false;

  constructor(
    private readonly upstreamHost: string,
    private readonly upstreamPort: number,
  ) {}

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  private accept(client: net.Socket): void {
    const pair = { client, server: undefined as net.Socket | undefined };
    this.pairs.add(pair);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      pair.server?.destroy();
    };
    client.on('error', end).on('close', end);
    if (this.silent) client.pause();
    else this.forward(pair, end);
  }

  private forward(pair: { client: net.Socket; server: net.Socket | undefined }, end: () => void): void {
    const server = net.connect(this.upstreamPort, this.upstreamHost);
    server.on('error', end).on('close', end);
    pair.server = server;
    pair.client.pipe(server);
    server.pipe(pair.client);
  }

  blackhole(): void {
    this.silent = true;
    for (const { client, server } of this.pairs) {
      client.unpipe();
      server?.unpipe();
      client.pause();
      server?.pause();
    }
  }

  /**
   * A failover to a new primary at the same address: the connections open now go silent for
   * good (the old primary vanished with them), new ones are forwarded.
   */
  strand(): void {
    this.blackhole();
    for (const pair of this.pairs) this.stranded.push(pair.client, ...(pair.server ? [pair.server] : []));
    this.pairs.clear();
    this.silent = false;
  }

  restore(): void {
    this.silent = false;
    for (const pair of this.pairs) {
      if (!pair.server) {
        this.forward(pair, () => {
          this.pairs.delete(pair);
          pair.client.destroy();
          pair.server?.destroy();
        });
        continue;
      }
      pair.client.pipe(pair.server);
      pair.server.pipe(pair.client);
    }
  }

  async close(): Promise<void> {
    for (const socket of this.stranded) socket.destroy();
    for (const { client, server } of this.pairs) {
      client.destroy();
      server?.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Resolves with `work`'s outcome, or fails the test if it takes longer than `ms` (a bound, not a timing assertion). */
async function within<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Settings small enough for a test: the defaults are 5 s each. */
const BOUNDS = { connectTimeoutMs: 1_000, silenceMs: 1_000 };
/** What a request may take on a silent database with these bounds: detection (≤ 2 × silence), the check, a new connection's timeout; with room to spare. */
const ANSWER_WITHIN_MS = 15_000;

describe.runIf(onPostgres)('PostgreSQL gone silent (no error, no reset)', () => {
  // Collected on PGlite too (runIf skips the tests, not this body): nothing here may need the URL.
  const directUrl = process.env.TEST_DATABASE_URL!;
  let proxy: BlackholeProxy;
  const schema = `t_blackhole_${randomBytes(4).toString('hex')}`;
  /** The application name of the proxied handle's connections, to find their backends. */
  const applicationName = `corridor_${schema}`;
  let handle: DbHandle;
  let app: App;
  let auth: string;

  beforeAll(async () => {
    const upstream = new URL(directUrl);
    proxy = new BlackholeProxy(upstream.hostname || '127.0.0.1', Number(upstream.port || 5432));
    const direct = await openDatabase({ databaseUrl: directUrl, poolSize: 1 });
    await direct.db.schema.createSchema(schema).execute();
    await direct.close();
    const setup = await openDatabase({ databaseUrl: directUrl, schema, poolSize: 2 });
    try {
      await migrate(setup.db);
      const { token, clientSecret } = (await withTx(setup.db, (trx) => createPlatform(trx, systemClock, { name: 'Blackhole', environment: 'sandbox' }))).token;
      auth = basic(token.clientId, clientSecret);
    } finally {
      await setup.close();
    }
    const proxied = new URL(directUrl);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(await proxy.listen());
    proxied.searchParams.set('application_name', applicationName);
    handle = await openDatabase({ databaseUrl: proxied.toString(), schema, poolSize: 4, ...BOUNDS });
    // No cache: every request below reaches the database.
    const config = loadConfig({ CORRIDOR_JOBS: 'false', CORRIDOR_MASTER_KEY: randomBytes(32).toString('hex'), CORRIDOR_CACHE_TTL_MS: '0' });
    const logger = pino({ level: 'silent' });
    app = await buildApp({ db: handle.db, handle, clock: systemClock, config, jobs: new JobWorker(handle.db, systemClock, logger), logger });
    await app.ready();
  });

  afterAll(async () => {
    // A test that failed while the database was silent would leave every close below waiting.
    proxy?.restore();
    await app?.close();
    await handle?.close();
    await proxy?.close();
    const cleanup = await openDatabase({ databaseUrl: directUrl, poolSize: 1 });
    await cleanup.db.schema.dropSchema(schema).ifExists().cascade().execute();
    await cleanup.close();
  });

  const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: auth } });
  const customerBody = (n: number) => ({ customerType: 'INDIVIDUAL', platformCustomerId: `blackhole-${n}`, fullName: 'Silent Test' });
  const post = (n: number) => app.inject({ method: 'POST', url: `${BASE}/customers`, headers: { authorization: auth }, payload: customerBody(n) });

  it('a statement longer than the silence bound is not cut while its backend lives', async () => {
    const { rows } = await within('pg_sleep', ANSWER_WITHIN_MS, sql<{ slept: string }>`select 'done' as slept from pg_sleep(3)`.execute(handle.db));
    expect(rows).toEqual([{ slept: 'done' }]);
  });

  it('answers 503 with a retry hint within the bound, then serves again once the database is back, without a restart', async () => {
    // Every kind of connection in use before the silence: pooled (a write), pipelined (reads), LISTEN.
    let resets = 0;
    let listening = 0;
    const notified: string[] = [];
    const channel = `blackhole_${randomBytes(4).toString('hex')}`;
    await handle.listen(channel, (payload) => notified.push(payload), () => resets++, () => listening++);
    expect((await post(1)).statusCode).toBe(201);
    expect((await get(`${BASE}/customers`)).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    proxy.blackhole();
    const [read, write, ready] = await within(
      'requests on a silent database',
      ANSWER_WITHIN_MS,
      Promise.all([get(`${BASE}/customers`), post(2), app.inject({ method: 'GET', url: '/readyz' })]),
    );
    for (const response of [read, write]) {
      expect(response.statusCode, response.body).toBe(503);
      expect(response.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
      expect(response.headers['x-should-retry']).toBe('true');
    }
    expect(ready.statusCode, ready.body).toBe(503);
    // Requests that start once the silent connections are gone answer 503 too: a new connection's timeout.
    for (const later of await within('later requests', ANSWER_WITHIN_MS, Promise.all([get(`${BASE}/customers`), post(3)]))) {
      expect(later.statusCode, later.body).toBe(503);
      expect(later.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    }
    // The LISTEN connection was found dead too (its heartbeat went unanswered) and is being replaced.
    await waitUntil('the LISTEN connection is given up', () => resets > 0, ANSWER_WITHIN_MS, 50);

    proxy.restore();
    await waitUntil('requests succeed again', async () => (await get(`${BASE}/customers`)).statusCode === 200, ANSWER_WITHIN_MS, 200);
    expect((await post(4)).statusCode).toBe(201);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    // LISTEN is in place again: a NOTIFY sent now arrives.
    await waitUntil('LISTEN is in place again', () => listening > 1, ANSWER_WITHIN_MS, 50);
    await sql`select pg_notify(${channel}, 'back')`.execute(handle.db);
    await waitUntil('the notification arrives', () => notified.includes('back'), ANSWER_WITHIN_MS, 50);
  });

  it('after a failover whose old primary vanished with its connections, serves again on new connections within the bound', async () => {
    let listening = 0;
    const notified: string[] = [];
    const channel = `failover_${randomBytes(4).toString('hex')}`;
    await handle.listen(channel, (payload) => notified.push(payload), undefined, () => listening++);
    expect((await post(10)).statusCode).toBe(201);
    expect((await get(`${BASE}/customers`)).statusCode).toBe(200);

    proxy.strand();
    // The old primary's backends are gone (here the same server ends them; their goodbye never
    // reaches the process): a new connection reaches a database where they do not exist.
    const admin = new pg.Client({ connectionString: directUrl });
    await admin.connect();
    try {
      const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [applicationName]);
      expect(rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    const [read, write] = await within('requests after the failover', ANSWER_WITHIN_MS, Promise.all([get(`${BASE}/customers`), post(11)]));
    // A read is sent again on a new connection; a write is not (it may have committed): 503, retry.
    expect([200, 503], read.body).toContain(read.statusCode);
    expect([201, 503], write.body).toContain(write.statusCode);
    await waitUntil('requests succeed again', async () => (await get(`${BASE}/customers`)).statusCode === 200, ANSWER_WITHIN_MS, 200);
    expect((await post(12)).statusCode).toBe(201);
    await waitUntil('LISTEN is in place again', () => listening > 1, ANSWER_WITHIN_MS, 50);
    await sql`select pg_notify(${channel}, 'after failover')`.execute(handle.db);
    await waitUntil('the notification arrives', () => notified.includes('after failover'), ANSWER_WITHIN_MS, 50);
  });
});
