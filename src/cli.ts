import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from './config.js';
import { createLogger } from './logger.js';
import { createPlatform, type Environment } from './modules/platforms/index.js';
import { createToken } from './modules/tokens/index.js';
import { systemClock } from './platform/clock.js';
import { withTx } from './platform/db/tx.js';
import { PERMISSIONS, type Permission } from './platform/http/auth.js';
import { formatId, parseId } from './platform/ids.js';
import { openAndMigrate, startServer } from './server.js';

const USAGE = `Usage: corridor <command> [options]

Commands:
  serve                                   start the HTTP API (default)
  migrate                                 apply pending database migrations and exit
  platforms create --environment sandbox|production [--name NAME] [--json]
                                          create a platform and its first API token
  tokens create [--platform ID] [--name NAME] [--permissions VIEW,TRANSACT,MANAGE] [--json]
                                          create an API token (the only platform if --platform is omitted)

Environment: PORT, HOST, DATABASE_URL, CORRIDOR_DATA_DIR, LOG_LEVEL (see README).`;

class UsageError extends Error {}

function fail(message: string): never {
  throw new UsageError(message);
}

async function withDatabase<T>(work: (handle: Awaited<ReturnType<typeof openAndMigrate>>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const handle = await openAndMigrate(config, createLogger(process.env.LOG_LEVEL || 'warn'));
  try {
    return await work(handle);
  } finally {
    await handle.close();
  }
}

function printCredentials(json: boolean, out: Record<string, string>): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  for (const [k, v] of Object.entries(out)) process.stdout.write(`${k.padEnd(14)}${v}\n`);
  process.stdout.write('\nThe secret is shown once; store it now.\n');
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      environment: { type: 'string' },
      name: { type: 'string' },
      platform: { type: 'string' },
      permissions: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command = 'serve', sub] = positionals;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }

  switch (command) {
    case 'serve': {
      const { stop } = await startServer(loadConfig());
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.once(signal, () => {
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
      await withDatabase(async () => {});
      process.stdout.write('migrations are up to date\n');
      return;
    }
    case 'platforms': {
      if (sub !== 'create') fail('expected: corridor platforms create --environment sandbox|production');
      const environment = values.environment as Environment | undefined;
      if (environment !== 'sandbox' && environment !== 'production') fail('--environment must be sandbox or production');
      const name = values.name ?? `${environment} platform`;
      if (name.length < 1 || name.length > 255) fail('--name must be 1–255 characters');
      const created = await withDatabase((h) => withTx(h.db, (trx) => createPlatform(trx, systemClock, { name, environment })));
      printCredentials(values.json, {
        platformId: created.platform.id,
        environment,
        tokenId: created.token.token.id,
        clientId: created.token.token.clientId,
        clientSecret: created.token.clientSecret,
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
          if (!found) fail(`no platform ${values.platform}`);
        } else {
          const all = await h.db.selectFrom('platforms').select('id').limit(2).execute();
          if (all.length !== 1) fail(all.length === 0 ? 'no platform exists yet; run corridor serve or platforms create' : 'several platforms exist; pass --platform');
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
        permissions: created.token.token.permissions.join(','),
      });
      return;
    }
    default:
      fail(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError) {
    process.stderr.write(`corridor: ${error.message}\n\n${error instanceof UsageError ? USAGE : ''}\n`);
    process.exit(2);
  }
  process.stderr.write(`corridor: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
