import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { buildApp, type App } from './app.js';
import { BASE_PATH, defaultPublicUrl, type Config } from './config.js';
import { createLogger } from './logger.js';
import { loadShippedDirectories } from './modules/directories/index.js';
import { bootstrapFirstPlatform } from './modules/platforms/index.js';
import { systemClock } from './platform/clock.js';
import { checkMasterKey, loadMasterKey, masterKeyFile } from './platform/crypto/master-key.js';
import { openDatabase, type DbHandle } from './platform/db/database.js';
import { migrate, migrationsAhead } from './platform/db/migrate.js';
import { withTx } from './platform/db/tx.js';
import { Startup } from './platform/http/ops.js';
import { JobWorker } from './platform/jobs/index.js';

/**
 * Milliseconds since the process started at the end of each start-up phase, logged with the
 * "listening" line: where a slow start goes, without a profiler.
 */
export class StartupPhases {
  private readonly marks: Record<string, number> = {};

  mark(phase: string): void {
    this.marks[phase] = Math.round(performance.now());
  }

  elapsed(): Record<string, number> {
    return { ...this.marks };
  }
}

/** The database, migrated; `applied`: the migrations this call applied. */
export async function openAndMigrate(config: Config, logger: Logger, phases: StartupPhases = new StartupPhases()): Promise<{ handle: DbHandle; applied: string[] }> {
  if (!config.databaseUrl) {
    logger.info({ dataDir: config.dataDir }, 'opening the embedded database (PGlite); the first open of a new data directory takes several seconds');
  }
  const handle = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.dbPoolSize, connectTimeoutMs: config.dbConnectTimeoutMs, silenceMs: config.dbSilenceMs });
  phases.mark('database opened');
  const applied = await migrate(handle.db);
  phases.mark('migrations checked');
  if (applied.length) logger.info({ applied }, 'migrations applied');
  const ahead = await migrationsAhead(handle.db);
  // A newer release migrated this database: this one runs (a rolling deploy restarts processes of both), but may call what those migrations changed (README, Upgrades).
  if (ahead.length) logger.warn({ ahead }, 'the database holds migrations of a newer release; replace this process with that release');
  // The shipped directory file, when newer than the database's: idempotent, one loader wins across processes.
  const directories = await loadShippedDirectories(handle.db, systemClock);
  phases.mark('directories checked');
  if (directories.loaded) logger.info({ version: directories.version, previous: directories.previousVersion }, 'directories loaded');
  return { handle, applied };
}

function firstRunBanner(publicUrl: string, clientId: string, secret: string, platformId: string): string {
  const base = `${publicUrl}${BASE_PATH}`;
  return [
    '',
    '  Corridor created a sandbox platform and its first API token.',
    '  The secret is shown now and never again: store it.',
    '',
    `    platform      ${platformId}`,
    `    client id     ${clientId}`,
    `    secret        ${secret}`,
    '',
    '  Try it:',
    `    curl -u ${clientId}:${secret} ${base}/config`,
    '',
  ].join('\n');
}

/** How long each last step of a shutdown may take (releasing unfinished jobs, closing the database connections). */
const CLOSE_MS = 5_000;

/** How often a draining server closes the keep-alive connections that have just finished their request. */
const IDLE_SWEEP_MS = 100;

/** Whether `work` (which never rejects) ends within `ms`. */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts Corridor: settings that need more than parsing (the master key), database,
 * migrations, HTTP, first-run bootstrap, job worker. Everything that can refuse to start does
 * so before the first write that matters: a start that fails never leaves a platform behind
 * whose secret was printed by a process that then exited.
 */
export async function startServer(loaded: Config): Promise<{ app: App; stop: () => Promise<void> }> {
  const phases = new StartupPhases();
  phases.mark('modules loaded');
  const masterKey = loadMasterKey(loaded.masterKey, loaded.dataDir, loaded.databaseUrl !== undefined);
  const config: Config = { ...loaded, masterKey };
  const logger = createLogger(config.logLevel);
  const { handle } = await openAndMigrate(config, logger, phases);
  const clock = systemClock;

  const jobs = new JobWorker(handle.db, clock, logger, { concurrency: config.jobs.concurrency, leaseMs: config.jobs.leaseMs });
  const startup = new Startup();
  let app: App;
  try {
    await checkMasterKey(handle.db, masterKey, loaded.masterKey ? 'CORRIDOR_MASTER_KEY' : masterKeyFile(loaded.dataDir));
    app = await buildApp({ db: handle.db, handle, clock, config, jobs, logger, startup });
    phases.mark('app built');
    await app.listen({ port: config.port, host: config.host });
    phases.mark('listening');
  } catch (error) {
    await handle.close();
    throw error;
  }

  // PORT=0: the port the system chose, not ":0", in the default public URL the banner and the log print.
  const publicUrl = config.publicUrl === defaultPublicUrl(0) ? defaultPublicUrl((app.server.address() as AddressInfo).port) : config.publicUrl;
  const created = await withTx(handle.db, (trx) => bootstrapFirstPlatform(trx, clock));
  if (created) {
    process.stdout.write(`${firstRunBanner(publicUrl, created.token.token.clientId, created.token.clientSecret, created.platform.id)}\n`);
  }
  phases.mark('first platform checked');
  if (config.jobs.enabled) await jobs.start(config.jobs.pollMs, (channel, onMessage, onReset, onListening) => handle.listen(channel, onMessage, onReset, onListening));
  phases.mark('job worker started');
  startup.complete();

  logger.info(
    { engine: handle.engine, data: handle.location, startupMs: phases.elapsed(), baseUrl: `${publicUrl}${BASE_PATH}`, docs: `${publicUrl}/docs` },
    `Corridor listening on ${publicUrl}${BASE_PATH} (${handle.location})`,
  );

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('shutting down: no new connections or jobs, draining in-flight requests and jobs');
      // Both at once: the worker claims nothing from now on while requests drain.
      const drained = Promise.all([app.close(), jobs.stop()]).catch((error: unknown) => logger.error({ err: error }, 'draining failed'));
      // A keep-alive connection whose request was in flight stays open once answered (Fastify closes
      // the idle ones only when the drain starts, and marks only later requests Connection: close),
      // so a client holding it (a load balancer's pool) would make every stop last the whole grace
      // period: each connection is closed as soon as it has nothing in flight.
      const closeIdle = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
      const drainedInTime = await settlesWithin(drained, config.shutdownGraceMs);
      clearInterval(closeIdle);
      if (!drainedInTime) {
        logger.error('in-flight requests or jobs did not finish within the grace period; closing anyway');
        app.server.closeAllConnections();
        // Another process takes the unfinished jobs at once, not when their leases run out.
        const released = jobs.releaseClaims().then(
          (count) => count > 0 && logger.warn({ released: count }, 'unfinished jobs released to other processes'),
          (error: unknown) => logger.error({ err: error }, 'could not release the claims of unfinished jobs; they run again when their leases end'),
        );
        if (!(await settlesWithin(released, CLOSE_MS))) logger.error('releasing the unfinished jobs took too long; they run again when their leases end');
      }
      // Work still holding a connection after the grace period is abandoned, not waited for: its transactions roll back.
      const closed = handle.close().catch((error: unknown) => logger.error({ err: error }, 'closing the database failed'));
      if (!(await settlesWithin(closed, CLOSE_MS))) logger.error('database connections did not close in time; exiting anyway');
      logger.info('stopped');
      await new Promise<void>((resolve) => logger.flush(() => resolve()));
    })());
  return { app, stop };
}
