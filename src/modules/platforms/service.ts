import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import { createDefaultConfig } from '../config/index.js';
import { provisionPlatformAccounts } from '../internal-accounts/index.js';
import { type CreatedToken, createToken } from '../tokens/index.js';
import { countPlatforms, findPlatform, insertPlatform, lockBootstrap, type PlatformRow } from './repo.js';
export { identifierKeyVersion, raiseIdentifierKeyVersion } from './repo.js';

export type Environment = PlatformRow['environment'];

export interface Platform {
  id: string;
  name: string;
  environment: Environment;
  createdAt: Date;
}

function toPlatform(row: PlatformRow): Platform {
  return { id: formatId('Platform', row.id), name: row.name, environment: row.environment, createdAt: row.created_at };
}

/** A platform with its default configuration, its own internal accounts, and one token holding every permission. */
export async function createPlatform(
  trx: Tx,
  clock: Clock,
  input: { name: string; environment: Environment; regulated?: boolean },
): Promise<{ platform: Platform; platformUuid: string; token: CreatedToken }> {
  const now = clock.now();
  const row: PlatformRow = { id: uuidv7(now.getTime()), name: input.name, environment: input.environment, identifier_key_version: 1, created_at: now, updated_at: now };
  await insertPlatform(trx, row);
  await createDefaultConfig(trx, clock, row.id, row.environment, input.regulated ?? false);
  await provisionPlatformAccounts(trx, clock, row.id);
  const token = await createToken(trx, clock, row.id, { name: 'Initial token', permissions: ['VIEW', 'TRANSACT', 'MANAGE'] });
  return { platform: toPlatform(row), platformUuid: row.id, token };
}

/** A platform's environment is fixed at creation, so every process may remember it. */
const environments = new Map<string, Environment>();

/** Sandbox or production, for work that runs outside a request (no token to say it). */
export async function platformEnvironment(db: DbOrTx, platformUuid: string): Promise<Environment> {
  let environment = environments.get(platformUuid);
  if (!environment) {
    const row = await findPlatform(db, platformUuid);
    if (!row) throw new Error(`platform ${platformUuid} does not exist`);
    environment = row.environment;
    if (environments.size >= 100_000) environments.clear();
    environments.set(platformUuid, environment);
  }
  return environment;
}

/**
 * First start on an empty database: one sandbox platform and its token, returned exactly once
 * (the caller prints the secret). Any later start, in any process, gets undefined.
 */
export async function bootstrapFirstPlatform(trx: Tx, clock: Clock) {
  await lockBootstrap(trx);
  if ((await countPlatforms(trx)) > 0) return undefined;
  return createPlatform(trx, clock, { name: 'Sandbox platform', environment: 'sandbox' });
}
