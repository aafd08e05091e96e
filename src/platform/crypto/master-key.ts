import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../config.js';

export const MASTER_KEY_BYTES = 32;

/** A fresh master key as 64 hex characters, for `corridor master-key generate`. */
export function newMasterKey(): string {
  return randomBytes(MASTER_KEY_BYTES).toString('hex');
}

/**
 * The configured master key, or for the embedded database the one kept in the data directory
 * (created on first start, readable only by this user) so the default needs no setup. A shared
 * PostgreSQL database needs it configured: processes on other hosts must use the same key, and
 * a key kept beside the data it protects would protect nothing.
 */
export function loadMasterKey(configured: Buffer | undefined, dataDir: string, sharedDatabase: boolean): Buffer {
  if (configured) return configured;
  if (sharedDatabase) {
    throw new ConfigError(
      'CORRIDOR_MASTER_KEY must be set when DATABASE_URL is: every process sharing the database needs the same key. ' +
        'Create one with `corridor master-key generate` (npm run --silent corridor -- master-key generate) and keep it in your secret manager, never in the database.',
    );
  }
  const path = join(dataDir, 'master.key');
  let stored: string | undefined;
  try {
    stored = readFileSync(path, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (stored !== undefined) {
    if (!/^[0-9a-f]{64}$/i.test(stored)) throw new ConfigError(`${path} must hold the 32-byte master key as 64 hex characters`);
    return Buffer.from(stored, 'hex');
  }
  mkdirSync(dataDir, { recursive: true });
  const key = newMasterKey();
  writeFileSync(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
  return Buffer.from(key, 'hex');
}
