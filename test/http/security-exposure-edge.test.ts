import { connect, type AddressInfo } from 'node:net';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, type DatabaseConnection, type Driver } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createPlatform } from '../../src/modules/platforms/service.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { Db } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { registerErrorHandling } from '../../src/platform/http/error-handler.js';
import { KnownRoutes } from '../../src/platform/http/known-routes.js';
import { HttpMetrics } from '../../src/platform/http/metrics.js';
import { registerOpsRoutes } from '../../src/platform/http/ops.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { BASE, basic, openTestDatabase } from '../helpers/context.js';

/**
 * The HTTP edge and the log, as a Corridor process runs them (the production logger, not the
 * tests' own): what a caller's data and credentials never reach, how a request that never
 * arrives whole ends, repeated singleton header fields, and the headers every answer carries.
 */
const EMAIL = 'alice.exposure@example.com';
const logLines: string[] = [];
let app: App;
let port: number;
let auth: string;
let secret: string;
let drop: () => Promise<void>;

beforeAll(async () => {
  const database = await openTestDatabase();
  drop = database.drop;
  const clock = new ManualClock(new Date());
  const config = loadConfig({ CORRIDOR_JOBS: 'false', CORRIDOR_MASTER_KEY: 'ab'.repeat(32) });
  const logger = createLogger('debug', (line) => logLines.push(line));
  app = await buildApp({ db: database.handle.db, handle: database.handle, clock, config, jobs: new JobWorker(database.handle.db, clock, logger), logger });
  // Statements that fail with a caller's value in the error: PGlite keeps the bound parameters, PostgreSQL a detail.
  app.get(`${BASE}/test/failing-statement`, async () => sql`select ${EMAIL}::text as email, 1 / 0 as never`.execute(database.handle.db));
  app.get(`${BASE}/test/failing-row`, async () =>
    sql.raw(`do $$ begin raise exception 'check failed' using detail = 'Failing row contains (${EMAIL})'; end $$`).execute(database.handle.db),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
  const created = await withTx(database.handle.db, (trx) => createPlatform(trx, clock, { name: 'Exposure', environment: 'sandbox' }));
  secret = created.token.clientSecret;
  auth = basic(created.token.token.clientId, secret);
});

// Short: a connection left waiting on a request that can never arrive used to hold the close for the whole request timeout.
afterAll(async () => {
  await app.close();
  await drop();
}, 10_000);

interface Exchange {
  /** What the server wrote, as text. */
  answer: string;
  /** Milliseconds from the client's last act (its close, or its last bytes) to the connection's end. */
  closedAfterMs: number;
}

/** Writes `request` on a new connection, then ends it (FIN), resets it (RST) or keeps it open, and reads until it closes. */
function exchange(request: string, then: 'end' | 'reset' | 'wait'): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let since = Date.now();
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (then !== 'reset') reject(error);
    });
    socket.setTimeout(5_000, () => {
      socket.destroy();
      reject(new Error('the connection stayed open'));
    });
    socket.on('close', () => resolve({ answer: Buffer.concat(chunks).toString('utf8'), closedAfterMs: Date.now() - since }));
    socket.on('connect', () => {
      socket.write(request);
      // Long enough for the request to be routed, authenticated and waiting for the rest of its body.
      setTimeout(() => {
        since = Date.now();
        if (then === 'end') socket.end();
        if (then === 'reset') socket.resetAndDestroy();
      }, 300);
    });
  });
}

function statusOf(answer: string): number {
  return Number(answer.split(' ')[1]);
}

function bodyOf(answer: string): { status: number; code: string; message: string; details?: { errors?: Array<{ field: string }> } } {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as never;
}

/** Log lines written since `from`, parsed. */
function linesSince(from: number): Array<Record<string, unknown>> {
  return logLines.slice(from).map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function settled(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 100));
}

const truncatedJson = () =>
  `POST ${BASE}/customers HTTP/1.1\r\nHost: corridor\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"customerType":`;

describe('a request whose body never arrives whole', () => {
  it('is answered 400 at once when the client closes its side midway, and logged as abandoned, not as the database', async () => {
    const from = logLines.length;
    const { answer, closedAfterMs } = await exchange(truncatedJson(), 'end');
    expect(statusOf(answer)).toBe(400);
    expect(bodyOf(answer)).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    // Was held until the request timeout (300 s by default), and the app's close with it.
    expect(closedAfterMs).toBeLessThan(2_000);
    await settled();
    const lines = linesSince(from);
    expect(lines.map((l) => l.msg)).not.toContain('database unavailable');
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect(lines.find((l) => String(l.msg).startsWith('request abandoned'))).toMatchObject({ method: 'POST', route: `${BASE}/customers` });
  });

  it('is logged as abandoned, not as the database being unavailable, when the client resets the connection', async () => {
    const from = logLines.length;
    await exchange(truncatedJson(), 'reset');
    await settled();
    const lines = linesSince(from);
    expect(lines.map((l) => l.msg)).not.toContain('database unavailable');
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect(lines.some((l) => String(l.msg).startsWith('request abandoned'))).toBe(true);
  });

  it('is answered 400 at once when a chunk of its body is malformed (it waited for the request timeout)', async () => {
    const request = `POST ${BASE}/customers HTTP/1.1\r\nHost: corridor\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{"\r\nZZ\r\n`;
    const { answer } = await exchange(request, 'wait');
    expect(statusOf(answer)).toBe(400);
    expect(bodyOf(answer)).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
  });
});

describe('a header field that may be sent once, sent twice', () => {
  const get = (headers: string) => `GET ${BASE}/config HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`;

  it('is 400 INVALID_INPUT naming it, whichever value comes first (Node kept the first and served it)', async () => {
    const wrong = basic('someone', 'else');
    for (const headers of [
      `Host: corridor\r\nAuthorization: ${auth}\r\nAuthorization: ${wrong}\r\n`,
      `Host: corridor\r\nauthorization: ${wrong}\r\nAUTHORIZATION: ${auth}\r\n`,
      `Host: corridor\r\nHost: elsewhere\r\nAuthorization: ${auth}\r\n`,
    ]) {
      const { answer } = await exchange(get(headers), 'wait');
      expect(statusOf(answer), headers).toBe(400);
      const body = bodyOf(answer);
      expect(body).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
      expect(body.details?.errors?.map((e) => e.field)).toEqual([headers.includes('elsewhere') ? 'Host' : 'Authorization']);
    }
    const once = await exchange(get(`Host: corridor\r\nAuthorization: ${auth}\r\n`), 'wait');
    expect(statusOf(once.answer)).toBe(200);
  });

  it('is refused before the body is read or anything is created, for Content-Type', async () => {
    const body = JSON.stringify({ customerType: 'INDIVIDUAL', platformCustomerId: 'twice', umaAddress: '$twice@corridor.test' });
    const request =
      `POST ${BASE}/customers HTTP/1.1\r\nHost: corridor\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    const { answer } = await exchange(request, 'wait');
    expect(statusOf(answer)).toBe(400);
    expect(bodyOf(answer).details?.errors?.map((e) => e.field)).toEqual(['Content-Type']);
    const list = await app.inject({ url: `${BASE}/customers?platformCustomerId=twice`, headers: { authorization: auth } });
    expect((list.json() as { data: unknown[] }).data).toEqual([]);
  });

  it('is refused as sent twice, not as one unreadable key, for Idempotency-Key; nothing is created', async () => {
    const body = JSON.stringify({ customerType: 'INDIVIDUAL', platformCustomerId: 'two-keys', umaAddress: '$twokeys@corridor.test' });
    const request =
      `POST ${BASE}/customers HTTP/1.1\r\nHost: corridor\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nIdempotency-Key: first\r\n` +
      `idempotency-key: second\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    const { answer } = await exchange(request, 'wait');
    expect(statusOf(answer)).toBe(400);
    expect(bodyOf(answer).details?.errors).toEqual([expect.objectContaining({ field: 'Idempotency-Key', message: 'must be sent at most once' })]);
    const list = await app.inject({ url: `${BASE}/customers?platformCustomerId=two-keys`, headers: { authorization: auth } });
    expect((list.json() as { data: unknown[] }).data).toEqual([]);
  });
});

describe('the log', () => {
  it('records a failed statement without the values it was given', async () => {
    for (const path of ['failing-statement', 'failing-row']) {
      const from = logLines.length;
      const answer = await app.inject({ url: `${BASE}/test/${path}` });
      expect(answer.statusCode).toBe(500);
      await settled();
      const failure = linesSince(from).find((l) => l.msg === 'unhandled error');
      // Still says what failed and where.
      expect(failure?.err).toMatchObject({ message: expect.any(String), stack: expect.any(String), code: expect.any(String) });
      expect(logLines.slice(from).join('\n')).not.toContain(EMAIL);
    }
  });

  it('records a request Node refuses without its bytes, which hold the credentials', async () => {
    const from = logLines.length;
    const { answer } = await exchange(`GET ${BASE}/config HTTP/1.1\r\nHost: corridor\r\nAuthorization: ${auth}\r\nNot A Header\r\n\r\n`, 'wait');
    expect(statusOf(answer)).toBe(400);
    await settled();
    const written = logLines.slice(from).join('\n');
    expect(written).toContain('client error');
    expect(written).not.toContain('rawPacket');
    expect(written).not.toContain(auth.slice('Basic '.length));
    expect(written).not.toContain(secret);
  });
});

describe('every answer', () => {
  it('is kept out of caches and never sniffed: a new token’s secret, an error, a probe', async () => {
    const created = await app.inject({ method: 'POST', url: `${BASE}/tokens`, headers: { authorization: auth }, payload: { name: 'cached?', permissions: ['VIEW'] } });
    expect(created.statusCode).toBe(201);
    const refused = await app.inject({ url: `${BASE}/customers` });
    const probe = await app.inject({ url: '/healthz' });
    for (const answer of [created, refused, probe]) {
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('keeps a caching policy its route sets itself (the UMA public key)', async () => {
    const key = await app.inject({ url: '/.well-known/lnurlpubkey' });
    expect(key.statusCode).toBe(200);
    expect(key.headers['cache-control']).toBe('public, max-age=3600');
  });
});

describe('GET /readyz', () => {
  it('does not tell an unauthenticated caller the database driver’s error (hosts, addresses, users)', async () => {
    const driverError = 'connect ECONNREFUSED 10.20.30.40:5432 as corridor_prod';
    const failing: Driver = {
      init: async () => {},
      acquireConnection: async (): Promise<DatabaseConnection> => {
        throw new Error(driverError);
      },
      beginTransaction: async () => {},
      commitTransaction: async () => {},
      rollbackTransaction: async () => {},
      releaseConnection: async () => {},
      destroy: async () => {},
    };
    const db = new Kysely({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => failing,
        createIntrospector: (k) => new PostgresIntrospector(k),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
    }) as unknown as Db;
    const lines: string[] = [];
    const probe = Fastify({ loggerInstance: createLogger('info', (line) => lines.push(line)) as FastifyBaseLogger });
    registerErrorHandling(probe, new KnownRoutes());
    registerOpsRoutes(probe, { db, metrics: new HttpMetrics() });
    const answer = await probe.inject({ url: '/readyz' });
    await probe.close();
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(answer.body).not.toContain('10.20.30.40');
    expect(answer.body).not.toContain('corridor_prod');
    // The operator still learns why.
    expect(lines.join('\n')).toContain(driverError);
  });
});
