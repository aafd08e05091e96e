import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { buildApp, type App, type AppOptions } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { loadShippedDirectories } from '../../src/modules/directories/index.js';
import { createAccountsLedger } from '../../src/modules/internal-accounts/index.js';
import type { Ledger } from '../../src/modules/ledger/index.js';
import { createPlatform, type Environment } from '../../src/modules/platforms/service.js';
import { createToken } from '../../src/modules/tokens/service.js';
import { ManualClock } from '../../src/platform/clock.js';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { withTx } from '../../src/platform/db/tx.js';
import type { Permission } from '../../src/platform/http/auth.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { upstreamConformance } from './upstream-conformance.js';

export const BASE = '/2025-10-13';
export const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

export function basic(user: string, secret: string): string {
  return `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;
}

export interface TestPlatform {
  id: string;
  uuid: string;
  auth: string;
  tokenId: string;
  clientId: string;
  secret: string;
}

type TestDatabase = { handle: DbHandle; schema?: string; drop: () => Promise<void> };

/** On PostgreSQL (TEST_DATABASE_URL): a fresh, empty schema of its own, dropped by `drop`. */
async function freshSchema(url: string, poolSize: number): Promise<TestDatabase> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = await openDatabase({ databaseUrl: url, poolSize: 1 });
  await admin.db.schema.createSchema(schema).execute();
  await admin.close();
  const handle = await openDatabase({ databaseUrl: url, schema, poolSize });
  return {
    handle,
    schema,
    drop: async () => {
      await handle.close();
      const cleanup = await openDatabase({ databaseUrl: url, poolSize: 1 });
      await cleanup.db.schema.dropSchema(schema).cascade().execute();
      await cleanup.close();
    },
  };
}

/**
 * The migrated template as PGlite reads it, by `arrayBuffer()` alone: a Blob built from the bytes
 * hands them back through 64 KiB chunks joined together, about 0.2 s for this one at each start.
 */
class TemplateDump extends Blob {
  constructor(private readonly contents: Uint8Array) {
    super();
  }

  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.contents.slice().buffer);
  }
}

/** The template, read once per worker: test files share a worker's modules (vitest.config.ts, isolate: false). */
let templateDump: Promise<Blob> | undefined;

/**
 * A private database for one test file: a fresh PGlite from the migrated template, or on
 * PostgreSQL (TEST_DATABASE_URL) a fresh schema that is dropped afterwards.
 */
export async function openTestDatabase(): Promise<TestDatabase> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const database = await freshSchema(url, 10);
    await migrate(database.handle.db);
    return database;
  }
  templateDump ??= readFile(inject('pgliteTemplate')).then((bytes) => new TemplateDump(bytes));
  const handle = await openDatabase({ loadDataDir: await templateDump });
  return { handle, drop: () => handle.close() };
}

/** A private database migrated up to migration `version`, not including it: for a test of that migration on rows written before it. */
export async function openDatabaseBefore(version: number): Promise<TestDatabase> {
  const url = process.env.TEST_DATABASE_URL;
  const database = url ? await freshSchema(url, 2) : await openDatabase({}).then((handle) => ({ handle, drop: () => handle.close() }));
  await migrate(
    database.handle.db,
    listMigrations().filter((m) => m.version < version),
  );
  return database;
}

export interface TestContext {
  app: App;
  handle: DbHandle;
  clock: ManualClock;
  config: Config;
  jobs: JobWorker;
  /** The ledger wired as the app wires it (balance events included), for direct money movements. */
  ledger: Ledger;
  platform: TestPlatform;
  /** `regulated`: a regulated financial institution, as `corridor platforms create --regulated` makes one. */
  newPlatform(environment?: Environment, options?: { regulated?: boolean }): Promise<TestPlatform>;
  newToken(platform: TestPlatform, permissions: Permission[]): Promise<TestPlatform>;
  /**
   * Builds a second app on the same database: another Corridor process, as far as tests can tell,
   * started with the context's options (settings, app options, `beforeReady`), each of which
   * `options` may replace; settings (`env`) are laid over the context's, the master key kept.
   */
  secondApp(options?: TestAppOptions): Promise<App>;
  close(): Promise<void>;
}

/** How a test's app is built: its settings, its app options, and what is done to it before it is ready. */
export type TestAppOptions = {
  env?: Record<string, string>;
  beforeReady?: (app: App) => void | Promise<void>;
  /** Collects every log line the app writes, at every level (for tests about what is logged). */
  logLines?: string[];
} & AppOptions;

export async function createTestContext(options: TestAppOptions = {}): Promise<TestContext> {
  const { handle, schema, drop } = await openTestDatabase();
  const clock = new ManualClock(new Date());
  // What a Corridor start does after migrating (server.ts): the shipped directories.
  await loadShippedDirectories(handle.db, clock);
  const settings = {
    CORRIDOR_JOBS: 'false',
    CORRIDOR_MASTER_KEY: randomBytes(32).toString('hex'),
    // Tests move a manual clock: a long real-time wait for settling would only slow them down.
    CORRIDOR_WALLET_SETTLE_WAIT_MS: '20',
    // Load shedding at its widest: test files share two cores and the embedded database's one
    // connection, and a loaded machine must not turn a test's request into 503 OVERLOADED
    // (test/http/overload-shedding.test.ts sets its own bound).
    CORRIDOR_OVERLOAD_WAIT_MS: '600000',
    ...options.env,
  };
  const config = loadConfig(settings);
  const conformance = upstreamConformance(BASE);

  /** An app on `db` as `appOptions` ask, with the context's checks of every answer. */
  const build = async (db: DbHandle, appConfig: Config, { env: _env, beforeReady, logLines, ...appOptions }: TestAppOptions) => {
    // The service's own logger (its error serializer and redaction), so tests see the lines an operator would.
    const logger = logLines
      ? createLogger('trace', (line) => logLines.push(line))
      : createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', (line) => process.stdout.write(line));
    const jobs = new JobWorker(db.db, clock, logger);
    const built = await buildApp({ db: db.db, handle: db, clock, config: appConfig, jobs, logger }, appOptions);
    await beforeReady?.(built);
    if (conformance) {
      built.addHook('onSend', async (request, reply, payload) => {
        if (request.routeOptions.url) {
          const text = typeof payload === 'string' ? payload : undefined;
          conformance.check(request.method, request.routeOptions.url, reply.statusCode, String(reply.getHeader('content-type') ?? ''), text);
        }
        return payload;
      });
    }
    await built.ready();
    return { app: built, jobs };
  };
  const { app, jobs } = await build(handle, config, options);
  const extraApps: Array<{ app: App; handle: DbHandle }> = [];

  const newPlatform = async (environment: Environment = 'sandbox', options: { regulated?: boolean } = {}): Promise<TestPlatform> => {
    const created = await withTx(handle.db, (trx) => createPlatform(trx, clock, { name: 'Test platform', environment, ...options }));
    const { token, clientSecret } = created.token;
    return {
      id: created.platform.id,
      uuid: created.platformUuid,
      auth: basic(token.clientId, clientSecret),
      tokenId: token.id,
      clientId: token.clientId,
      secret: clientSecret,
    };
  };

  const newToken = async (platform: TestPlatform, permissions: Permission[]): Promise<TestPlatform> => {
    const { token, clientSecret } = await withTx(handle.db, (trx) => createToken(trx, clock, platform.uuid, { name: 'extra', permissions }));
    return { ...platform, auth: basic(token.clientId, clientSecret), tokenId: token.id, clientId: token.clientId, secret: clientSecret };
  };

  return {
    app,
    handle,
    clock,
    config,
    jobs,
    ledger: createAccountsLedger(clock),
    platform: await newPlatform(),
    newPlatform,
    newToken,
    async secondApp(overrides = {}) {
      if (!process.env.TEST_DATABASE_URL) throw new Error('a second process needs PostgreSQL');
      const other = await openDatabase({ databaseUrl: process.env.TEST_DATABASE_URL, schema, poolSize: 4 });
      try {
        const otherConfig = overrides.env ? loadConfig({ ...settings, ...overrides.env }) : config;
        const { app: otherApp } = await build(other, otherConfig, { ...options, ...overrides });
        extraApps.push({ app: otherApp, handle: other });
        return otherApp;
      } catch (error) {
        await other.close();
        throw error;
      }
    },
    async close() {
      for (const extra of extraApps) {
        await extra.app.close();
        await extra.handle.close();
      }
      await app.close();
      await drop();
      const breaches = conformance?.breaches() ?? [];
      if (breaches.length > 0) throw new Error(`answers outside the upstream's schema (helpers/upstream-conformance.ts):\n${breaches.join('\n')}`);
    },
  };
}

/** Asserts the spec's error envelope and returns it. */
export function expectEnvelope(response: { statusCode: number; json(): unknown }, status: number, code: string) {
  const body = response.json() as { status: number; code: string; message: string; details?: Record<string, unknown> };
  if (response.statusCode !== status || body.status !== status || body.code !== code || typeof body.message !== 'string') {
    throw new Error(`expected ${status} ${code}, got ${response.statusCode} ${JSON.stringify(body)}`);
  }
  return body;
}
