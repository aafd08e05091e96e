#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig, ConfigError } from './config.js';
import { createLogger } from './logger.js';
import { createPlatform, raiseIdentifierKeyVersion, type Environment } from './modules/platforms/index.js';
import { DirectoryFileError, loadDirectories, readDirectoryFile } from './modules/directories/index.js';
import { verifyLedger } from './modules/ledger/index.js';
import { decideManualReview } from './modules/verifications/index.js';
import { createToken } from './modules/tokens/index.js';
import { systemClock } from './platform/clock.js';
import { DataDirInUse } from './platform/db/data-dir-lock.js';
import { EmbeddedStartFailed } from './platform/db/embedded-start.js';
import { openDatabase, type DbHandle } from './platform/db/database.js';
import { migrationsAhead, migrationsCurrent } from './platform/db/migrate.js';
import { withTx } from './platform/db/tx.js';
import { PERMISSIONS, type Permission } from './platform/http/auth.js';
import { RESEAL_JOB } from './modules/customers/index.js';
import { newMasterKey } from './platform/crypto/master-key.js';
import { enqueueJob } from './platform/jobs/index.js';
import { AppError } from './platform/errors.js';
import { formatId, parseId } from './platform/ids.js';
import { openAndMigrate, startServer } from './server.js';

const USAGE = `Usage: corridor <command> [options]

Commands:
  serve                                   start the HTTP API (default)
  migrate                                 apply pending database migrations and exit
  master-key generate                     print a new CORRIDOR_MASTER_KEY (keep it in a secret manager)
  identifiers rotate-key --platform ID    seal the platform's tax identifiers under a new key version
  platforms create --environment sandbox|production [--name NAME] [--regulated] [--json]
                                          create a platform and its first API token (--regulated: a
                                          regulated financial institution, which may run its own KYC/KYB)
  tokens create [--platform ID] [--name NAME] [--permissions VIEW,TRANSACT,MANAGE] [--json]
                                          create an API token (the only platform if --platform is omitted)
  directories load <file> [--force]       replace the VASP, UMA provider and discovery directories with
                                          a directory file (docs/directories.md) if its version is higher
                                          (--force: if it differs)
  directories show                        print the loaded directory version
  verifications decide <Verification:id> --platform ID --status APPROVED|REJECTED [--reason TEXT]
                                          decide a verification waiting for manual review
                                          (PENDING_MANUAL_REVIEW); prints the verification as JSON
  ledger verify [--platform ID] [--batch-size N] [--json]
                                          check every ledger invariant (read-only, in batches);
                                          exit 1 if any is breached, 3 if the check could not finish,
                                          2 if the database is not Corridor's or not migrated

Environment: PORT, HOST, DATABASE_URL, CORRIDOR_MASTER_KEY, CORRIDOR_DATA_DIR, LOG_LEVEL (see README).`;

class UsageError extends Error {}

/**
 * A command line that is well formed but names what is not there (a platform, an embedded
 * database, a readable directory file): one line, exit 2, nothing done, and no usage, which would
 * only bury the line.
 */
class Refused extends Error {}

/**
 * The database the settings point at is not one this command can read: not Corridor's (no
 * tables of it: empty, or another application's), or behind this version's migrations. Like a
 * bad setting: one line, exit 2, nothing done to it.
 */
class WrongDatabase extends Error {}

/** Positionals each command takes, the command and its subcommand included: a stray one is a mistake, never ignored. */
const POSITIONALS: Record<string, number | Record<string, number>> = {
  serve: 1,
  migrate: 1,
  'master-key': { generate: 2 },
  identifiers: { 'rotate-key': 2 },
  platforms: { create: 2 },
  tokens: { create: 2 },
  directories: { load: 3, show: 2 },
  verifications: { decide: 3 },
  ledger: { verify: 2 },
};

/** USAGE's lines for one command (`corridor ledger --help`), or all of it for a command it does not know. */
function usageOf(command: string | undefined): string {
  const lines = USAGE.split('\n');
  const own: string[] = [];
  lines.forEach((line, at) => {
    if (command === undefined || !line.startsWith(`  ${command} `)) return;
    own.push(line);
    for (let next = at + 1; next < lines.length && lines[next]!.startsWith('    '); next++) own.push(lines[next]!);
  });
  return own.length ? ['Usage: corridor <command> [options]', '', ...own, '', lines.at(-1)!].join('\n') : USAGE;
}

/**
 * A refusal by the machine or the database rather than a fault in Corridor (the port taken, a host
 * unknown, the database down, its login refused): one line naming the settings to check, not a
 * stack trace pointing into Corridor's code. Neither pg's nor Node's messages quote DATABASE_URL.
 */
function environmentFailure(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  // An embedded data directory PostgreSQL would not start on: its own reason, not PGlite's stack.
  if (error instanceof EmbeddedStartFailed) return error.message;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  if (typeof code !== 'string') return undefined;
  // Node's AggregateError (every address of a host refused) carries its reasons inside, its own message empty.
  const message = error.message || (error instanceof AggregateError ? String((error.errors[0] as Error | undefined)?.message ?? code) : code);
  if (syscall === 'listen') return `cannot listen: ${message} (check PORT and HOST)`;
  // Reaching the database (a file error, say, is not this: its stack is kept).
  if (/^E[A-Z]+$/.test(code) && (syscall === undefined || syscall === 'connect' || syscall === 'getaddrinfo')) return `${message} (check DATABASE_URL, HOST and PORT)`;
  // SQLSTATE classes 08 (connection), 28 (authorization), 3D000 (no such database), 57P0x (shutting down, starting up).
  if (/^(08|28|3D|57P0)/.test(code)) return `the database refused: ${message} (check DATABASE_URL)`;
  return undefined;
}

/**
 * DATABASE_URL asks for TLS the server cannot give: it offers none, or its certificate does not
 * verify (against sslrootcert's roots, or for the host named). A setting to correct, not a refusal
 * that waiting cures: one line, exit 2. pg's message quotes no part of DATABASE_URL.
 */
function databaseTlsFailure(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  if (error.message === 'The server does not support SSL connections') {
    return 'the database server does not accept TLS connections, and DATABASE_URL asks for TLS (sslmode): enable TLS on the server, or change sslmode';
  }
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' && /^(ERR_TLS_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|CERT_)/.test(code)) {
    return `the database's TLS certificate was refused: ${error.message} (${code}; check sslmode and sslrootcert in DATABASE_URL)`;
  }
  return undefined;
}

/**
 * What a command refuses in one line with exit 2, nothing done: a usage mistake, a bad setting,
 * a database it will not touch (not Corridor's, behind on migrations, another process's data
 * directory), TLS it cannot have. undefined for anything else.
 */
function settingRefusal(error: unknown): string | undefined {
  if (error instanceof UsageError || error instanceof Refused || error instanceof ConfigError || error instanceof WrongDatabase || error instanceof DataDirInUse) return error.message;
  return databaseTlsFailure(error);
}

function fail(message: string): never {
  throw new UsageError(message);
}

function refuse(message: string): never {
  throw new Refused(message);
}

async function withDatabase<T>(work: (handle: DbHandle, applied: string[]) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { handle, applied } = await openAndMigrate(config, createLogger(process.env.LOG_LEVEL || 'warn'));
  try {
    return await work(handle, applied);
  } finally {
    await handle.close();
  }
}

/** A new token's credentials: `--json` as the API gives them (permissions an array), else one line each. */
function printCredentials(json: boolean, out: Record<string, string | string[]>): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  for (const [k, v] of Object.entries(out)) process.stdout.write(`${k.padEnd(14)}${Array.isArray(v) ? v.join(',') : v}\n`);
  process.stdout.write('\nThe secret is shown once; store it now.\n');
}

function parseCommandLine(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      environment: { type: 'string' },
      name: { type: 'string' },
      platform: { type: 'string' },
      permissions: { type: 'string' },
      json: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      regulated: { type: 'boolean', default: false },
      'batch-size': { type: 'string' },
      status: { type: 'string' },
      reason: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    // An unknown option, or one without its value: Node's message, as a usage error.
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_')) fail((error as Error).message);
    throw error;
  }
  const { positionals, values } = parsed;
  const [command = 'serve', sub] = positionals;
  if (values.help) {
    process.stdout.write(`${usageOf(positionals[0])}\n`);
    return;
  }
  const expected = POSITIONALS[command];
  const count = typeof expected === 'object' ? (sub === undefined ? undefined : expected[sub]) : expected;
  if (count !== undefined && positionals.length > count) fail(`unexpected argument "${positionals[count]}"`);

  switch (command) {
    case 'serve': {
      const { stop } = await startServer(loadConfig());
      let stopping = false;
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.on(signal, () => {
          // A second signal (Ctrl-C twice) ends the process now: unfinished jobs return when their leases run out.
          if (stopping) {
            process.stderr.write(`corridor: ${signal} during shutdown: exiting without waiting for in-flight work\n`);
            process.exit(1);
          }
          stopping = true;
          stop().then(
            () => process.exit(0),
            (error: unknown) => {
              process.stderr.write(`shutdown failed: ${String(error)}\n`);
              process.exit(1);
            },
          );
        });
      }
      return;
    }
    case 'migrate': {
      const applied = await withDatabase(async (_handle, applied) => applied);
      if (applied.length) process.stdout.write(`applied ${applied.length} migration${applied.length === 1 ? '' : 's'} (${applied.length === 1 ? applied[0] : `${applied[0]} … ${applied.at(-1)}`})\n`);
      process.stdout.write('migrations are up to date\n');
      return;
    }
    case 'master-key': {
      if (sub !== 'generate') fail('expected: corridor master-key generate');
      // The key alone on stdout, so `export CORRIDOR_MASTER_KEY=$(corridor master-key generate)` works.
      process.stdout.write(`${newMasterKey()}\n`);
      process.stderr.write(
        'corridor: this is a new CORRIDOR_MASTER_KEY. Store it in your secret manager and give the same key to every\n' +
          'Corridor process of this database. Never store it in the database: losing it loses every wallet and\n' +
          'every secret sealed under it.\n',
      );
      return;
    }
    case 'identifiers': {
      if (sub !== 'rotate-key' || !values.platform) fail('expected: corridor identifiers rotate-key --platform Platform:<uuid>');
      const platformUuid = parseId('Platform', values.platform);
      if (!platformUuid) fail('--platform must be a Platform:<uuid> id');
      const version = await withDatabase((h) =>
        withTx(h.db, async (trx) => {
          const next = await raiseIdentifierKeyVersion(trx, platformUuid, systemClock.now());
          if (next === undefined) refuse(`no platform ${values.platform}`);
          // The running servers' job workers re-seal every identifier under the new version, batch by batch.
          await enqueueJob(trx, systemClock, { kind: RESEAL_JOB, platformId: platformUuid, payload: {} });
          return next;
        }),
      );
      process.stdout.write(`identifiers of ${values.platform} are being re-sealed under key version ${version}\n`);
      return;
    }
    case 'platforms': {
      if (sub !== 'create') fail('expected: corridor platforms create --environment sandbox|production');
      const environment = values.environment as Environment | undefined;
      if (environment !== 'sandbox' && environment !== 'production') fail('--environment must be sandbox or production');
      const name = values.name ?? `${environment} platform`;
      if (name.length < 1 || name.length > 255) fail('--name must be 1–255 characters');
      const created = await withDatabase((h) => withTx(h.db, (trx) => createPlatform(trx, systemClock, { name, environment, regulated: values.regulated })));
      printCredentials(values.json, {
        platformId: created.platform.id,
        environment,
        tokenId: created.token.token.id,
        clientId: created.token.token.clientId,
        clientSecret: created.token.clientSecret,
        permissions: created.token.token.permissions,
      });
      return;
    }
    case 'tokens': {
      if (sub !== 'create') fail('expected: corridor tokens create [--platform ID]');
      const permissions = (values.permissions ?? 'VIEW,TRANSACT,MANAGE').split(',').map((p) => p.trim().toUpperCase());
      const unknown = permissions.filter((p) => !(PERMISSIONS as readonly string[]).includes(p));
      if (unknown.length || permissions.length === 0) fail(`--permissions takes a comma list of ${PERMISSIONS.join(', ')}`);
      const name = values.name ?? 'CLI token';
      const created = await withDatabase(async (h) => {
        let platformUuid: string | undefined;
        if (values.platform) {
          platformUuid = parseId('Platform', values.platform);
          if (!platformUuid) fail('--platform must be a Platform:<uuid> id');
          const found = await h.db.selectFrom('platforms').select('id').where('id', '=', platformUuid).executeTakeFirst();
          if (!found) refuse(`no platform ${values.platform}`);
        } else {
          const all = await h.db.selectFrom('platforms').select('id').limit(2).execute();
          if (all.length !== 1) refuse(all.length === 0 ? 'no platform exists yet; run corridor serve or platforms create' : 'several platforms exist; pass --platform');
          platformUuid = all[0]!.id;
        }
        const pid = platformUuid;
        const token = await withTx(h.db, (trx) => createToken(trx, systemClock, pid, { name, permissions: permissions as Permission[] }));
        return { token, platformId: formatId('Platform', pid) };
      });
      printCredentials(values.json, {
        platformId: created.platformId,
        tokenId: created.token.token.id,
        clientId: created.token.token.clientId,
        clientSecret: created.token.clientSecret,
        permissions: created.token.token.permissions,
      });
      return;
    }
    case 'directories': {
      if (sub === 'show') {
        const version = await withDatabase((h) => h.db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow());
        process.stdout.write(`directories version ${version.version} (published ${version.published_on}), from ${version.origin}, loaded ${version.loaded_at.toISOString()}\n`);
        return;
      }
      const path = positionals[2];
      if (sub !== 'load' || !path) fail('expected: corridor directories load <file> [--force]');
      let file;
      try {
        file = await readDirectoryFile(path);
      } catch (error) {
        if (error instanceof DirectoryFileError) refuse(`${path}: ${error.message}`);
        throw error;
      }
      const result = await withDatabase((h) => loadDirectories(h.db, systemClock, file, path, { force: values.force }));
      const refusal =
        result.version === file.version
          ? `directories already at version ${result.version}, the version of ${path}: nothing loaded (raise its version)`
          : `directories already at version ${result.version}; ${path} has version ${file.version}: nothing loaded (--force replaces it anyway)`;
      process.stdout.write(result.loaded ? `directories version ${result.version} loaded (was ${result.previousVersion})\n` : `${refusal}\n`);
      return;
    }
    case 'verifications': {
      const verificationId = positionals[2];
      const expected = 'expected: corridor verifications decide <Verification:id> --platform Platform:<uuid> --status APPROVED|REJECTED [--reason TEXT]';
      if (sub !== 'decide' || !verificationId || !values.platform) fail(expected);
      const platformUuid = parseId('Platform', values.platform);
      if (!platformUuid) fail('--platform must be a Platform:<uuid> id');
      if (!parseId('Verification', verificationId)) fail('the verification must be a Verification:<uuid> id');
      const verificationStatus = values.status;
      if (verificationStatus !== 'APPROVED' && verificationStatus !== 'REJECTED') fail('--status must be APPROVED or REJECTED');
      const reason = values.reason;
      if (reason !== undefined && (reason.length < 1 || reason.length > 500)) fail('--reason must be 1–500 characters');
      try {
        const decided = await withDatabase((h) =>
          withTx(h.db, (trx) => decideManualReview(trx, systemClock, platformUuid, verificationId, { verificationStatus, ...(reason ? { reason } : {}) })),
        );
        process.stdout.write(`${JSON.stringify(decided)}\n`);
      } catch (error) {
        // Not found, or not waiting for a decision: the API's message, without a stack.
        if (!(error instanceof AppError)) throw error;
        process.stderr.write(`corridor: ${error.code}: ${error.message}\n`);
        process.exitCode = 1;
      }
      return;
    }
    case 'ledger': {
      if (sub !== 'verify') fail('expected: corridor ledger verify [--platform ID]');
      const platformId = values.platform === undefined ? undefined : parseId('Platform', values.platform);
      if (values.platform !== undefined && !platformId) fail('--platform must be a Platform:<uuid> id');
      const batchSize = values['batch-size'] === undefined ? 1000 : Number(values['batch-size']);
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) fail('--batch-size must be an integer in 1..100000');
      // Read-only: it never migrates, so it can point at a production database as it is.
      const config = loadConfig();
      // Never made: a mistyped CORRIDOR_DATA_DIR would otherwise become a new, empty database.
      if (!config.databaseUrl && !existsSync(join(config.dataDir, 'PG_VERSION'))) refuse(`no embedded database in ${config.dataDir} (set CORRIDOR_DATA_DIR, or DATABASE_URL)`);
      let handle: DbHandle | undefined;
      try {
        let report: Awaited<ReturnType<typeof verifyLedger>>;
        try {
          // Inside: a data directory PGlite cannot open (damaged) is a check that could not finish, not a breach.
          handle = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1, connectTimeoutMs: config.dbConnectTimeoutMs, silenceMs: config.dbSilenceMs });
          // Asked first: on a database without these tables (empty, or another application's, which may
          // have a schema_migrations of its own) the queries below fail as if the check itself broke (exit 3).
          const { rows } = await sql<{ corridor: boolean }>`
            select to_regclass('schema_migrations') is not null and to_regclass('ledger_transactions') is not null as corridor`.execute(handle.db);
          if (!rows[0]?.corridor) throw new WrongDatabase(`${handle.location} is not a Corridor database: it has no Corridor tables (check DATABASE_URL or CORRIDOR_DATA_DIR)`);
          if (!(await migrationsCurrent(handle.db))) throw new WrongDatabase('the database is not migrated to this version of Corridor (run corridor migrate)');
          // A newer release's rules may hold more than this release checks: said, not refused (an old verify still judges what it knows).
          const ahead = await migrationsAhead(handle.db);
          if (ahead.length) {
            process.stderr.write(`corridor: the database holds migrations of a newer release (${ahead.join(', ')}); this release's rules are checked: run that release's ledger verify\n`);
          }
          // A mistyped id would otherwise judge nothing and say OK.
          if (platformId && !(await sql`select 1 from platforms where id = ${platformId}`.execute(handle.db)).rows.length) {
            throw new WrongDatabase(`${handle.location} has no platform ${values.platform}`);
          }
          report = await verifyLedger(handle.db, { batchSize, ...(platformId ? { platformId } : {}) });
        } catch (error) {
          if (settingRefusal(error) !== undefined) throw error;
          // Not a verdict on the books: a monitor paging on breaches (exit 1) must tell this apart.
          process.stderr.write(`corridor: ledger verify could not finish, nothing was judged: ${error instanceof Error ? error.message : String(error)}\n`);
          process.exitCode = 3;
          return;
        }
        if (values.json) {
          process.stdout.write(`${JSON.stringify(report)}\n`);
        } else {
          const { open, posted, voided } = report.holds;
          process.stdout.write(`checked ${report.transactions} transactions and ${report.balanceRows} balance rows; holds: ${open} open, ${posted} posted, ${voided} voided\n`);
          for (const b of report.breaches) process.stdout.write(`BREACH ${b.check} ${b.subject}: ${b.detail}\n`);
          const more = report.breachCount - report.breaches.length;
          process.stdout.write(report.ok ? 'ledger verify: OK, no breach\n' : `ledger verify: ${report.breachCount} breach(es)${more > 0 ? ` (${more} not listed)` : ''}\n`);
        }
        if (!report.ok) process.exitCode = 1;
      } finally {
        await handle?.close();
      }
      return;
    }
    default:
      fail(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const setting = settingRefusal(error);
  if (setting !== undefined) {
    process.stderr.write(`corridor: ${setting}\n${error instanceof UsageError ? `\n${usageOf(process.argv[2])}\n` : ''}`);
    process.exit(2);
  }
  const refusal = environmentFailure(error);
  if (refusal) {
    process.stderr.write(`corridor: ${refusal}\n`);
    process.exit(1);
  }
  process.stderr.write(`corridor: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
