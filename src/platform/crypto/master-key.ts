import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../config.js';
import type { Db } from '../db/database.js';
import { SecretBox, SecretBoxError } from './secret-box.js';

export const MASTER_KEY_BYTES = 32;

/** A fresh master key as 64 hex characters, for `corridor master-key generate`. */
export function newMasterKey(): string {
  return randomBytes(MASTER_KEY_BYTES).toString('hex');
}

/** Where the embedded database keeps its generated master key. */
export function masterKeyFile(dataDir: string): string {
  return join(dataDir, 'master.key');
}

/** What linkSync answers on a file system that has no hard links. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Puts a new key file at `path`, readable only by this user, unless one is there already (kept).
 * Written whole under another name, then linked into place: a first start killed mid-write
 * leaves a stray temporary file, not an empty key file that every later start would refuse. On a
 * file system without hard links (FAT, exFAT, some network shares) it is written in place.
 */
function placeKey(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  try {
    linkSync(temporary, path);
    return;
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'EEXIST') return;
    if (!NO_HARD_LINKS.has(code ?? '')) throw error;
  } finally {
    unlinkSync(temporary);
  }
  try {
    writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Group and other permission bits: any of them lets another local user read or replace the key. */
const SHARED_MODE_BITS = 0o077;

/**
 * The key file's text, refused (ConfigError) when the file is open to anyone but its owner: the
 * key opens every secret of the database beside it, so a copy readable by another local user is a
 * leak, and one they can write lets them choose the key. Checked on the open file, so the file
 * judged is the file read. Windows has no such mode bits (Node reports 0o666 for every file).
 */
function readOwnKeyFile(path: string): string {
  const descriptor = openSync(path, 'r');
  try {
    const mode = fstatSync(descriptor).mode & 0o777;
    if (process.platform !== 'win32' && (mode & SHARED_MODE_BITS) !== 0) {
      throw new ConfigError(
        `${path} is open to other users (mode ${mode.toString(8).padStart(4, '0')}): it holds the master key of the embedded database. ` +
          `Make it readable by its owner only (chmod 600 ${path}; on a file system without Unix permissions, mount it owner-only, e.g. umask=077) and start again.`,
      );
    }
    return readFileSync(descriptor, 'utf8').trim();
  } finally {
    closeSync(descriptor);
  }
}

/**
 * The configured master key, or for the embedded database the one kept in the data directory
 * (created on first start, readable only by this user, and refused when open to others) so the
 * default needs no setup. A shared
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
  const path = masterKeyFile(dataDir);
  let stored: string | undefined;
  try {
    stored = readOwnKeyFile(path);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const { code } = error as NodeJS.ErrnoException;
    if (code !== 'ENOENT') throw new ConfigError(`${path} cannot be read (${code}): it holds the master key of the embedded database`);
  }
  if (stored !== undefined) {
    if (!/^[0-9a-f]{64}$/i.test(stored)) throw new ConfigError(`${path} must hold the 32-byte master key as 64 hex characters`);
    return Buffer.from(stored, 'hex');
  }
  mkdirSync(dataDir, { recursive: true });
  // Read back what is in place: this start's key, or that of another first start that placed
  // its own first; and judged as every later start will judge it (a file system that cannot keep
  // it to its owner, FAT mounted open to all, is refused now rather than on the next start).
  placeKey(path, `${newMasterKey()}\n`);
  return loadMasterKey(configured, dataDir, sharedDatabase);
}

interface MasterKeyCheckTable {
  id: number;
  sealed: string;
}

declare module '../db/database.js' {
  interface Database {
    master_key_check: MasterKeyCheckTable;
  }
}

/** What the check seals: any constant will do, only whether it opens matters. */
const CHECK_PLAINTEXT = 'corridor master key check';
const CHECK_AAD = 'master_key_check/1';

/**
 * Stops a process whose master key is not the one the database's secrets are sealed with: it
 * would start, answer /readyz, and neither open what the others sealed nor seal what they can
 * open. The first start on a database (or after migration 0051) seals a constant; every start
 * then opens it. Of two first starts at once, one row is kept and both are checked against it.
 * `source` names where the key came from, for the message.
 */
export async function checkMasterKey(db: Db, key: Buffer, source: string): Promise<void> {
  const box = new SecretBox(key, 'master-key-check');
  await db
    .insertInto('master_key_check')
    .values({ id: 1, sealed: box.seal(Buffer.from(CHECK_PLAINTEXT), CHECK_AAD) })
    .onConflict((conflict) => conflict.column('id').doNothing())
    .execute();
  const { sealed } = await db.selectFrom('master_key_check').select('sealed').where('id', '=', 1).executeTakeFirstOrThrow();
  try {
    if (box.open(sealed, CHECK_AAD).toString() === CHECK_PLAINTEXT) return;
  } catch (error) {
    if (!(error instanceof SecretBoxError)) throw error;
  }
  throw new ConfigError(`${source} is not the key this database's secrets were sealed with (every process of a database needs the same key)`);
}
