import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { compileBodySchema, toFieldErrors } from '../../platform/http/validation.js';
import { claimVersion, loadedVersion, replaceDirectories, type DiscoveryRow, type UmaProviderRow, type VaspRow } from './repo.js';
import { DirectoryFile, MAX_FILE_BYTES } from './schemas.js';

/** The directory file shipped with Corridor (package root, beside migrations/). */
export const SHIPPED_DIRECTORY_FILE = fileURLToPath(new URL('../../../reference-data/directories.json', import.meta.url));

export class DirectoryFileError extends Error {}

const validateFile = compileBodySchema(DirectoryFile);

/** Lower-cased, so keys sort and compare the same way on both engines and names differing only in case collide. */
const keyOf = (name: string) => name.toLowerCase();

function duplicates<T>(items: T[], key: (item: T) => string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const item of items) {
    const k = key(item);
    if (seen.has(k)) repeated.add(k);
    seen.add(k);
  }
  return [...repeated];
}

/**
 * Reads and checks a directory file: at most MAX_FILE_BYTES, JSON, the schema (every country and
 * currency code known), and no entry named twice. Every problem is reported at once.
 */
export function parseDirectoryFile(text: string): DirectoryFile {
  if (Buffer.byteLength(text, 'utf8') > MAX_FILE_BYTES) throw new DirectoryFileError(`the file is larger than ${MAX_FILE_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new DirectoryFileError(`the file is not JSON (${(error as Error).message})`);
  }
  if (!validateFile(parsed)) {
    const problems = toFieldErrors(validateFile.errors ?? []).map((e) => `${e.field || '(file)'} ${e.message ?? 'is invalid'}`);
    throw new DirectoryFileError(problems.slice(0, 20).join('; '));
  }
  const file = parsed as DirectoryFile;
  const problems = [
    ...duplicates(file.vasps, (v) => keyOf(v.vaspName)).map((k) => `vaspName "${k}" appears twice`),
    ...duplicates(file.umaProviders, (p) => keyOf(p.name)).map((k) => `umaProviders name "${k}" appears twice`),
    ...duplicates(file.umaProviders, (p) => p.domain.toLowerCase()).map((k) => `umaProviders domain "${k}" appears twice`),
    ...duplicates(file.discoveries, (d) => `${d.country} ${d.currency} ${d.bankName}`).map((k) => `discovery "${k}" appears twice`),
  ];
  if (problems.length > 0) throw new DirectoryFileError(problems.slice(0, 20).join('; '));
  return file;
}

export async function readDirectoryFile(path: string): Promise<DirectoryFile> {
  let text: string;
  try {
    // Checked before reading, so a huge file is never read into memory.
    if ((await stat(path)).size > MAX_FILE_BYTES) throw new DirectoryFileError(`the file is larger than ${MAX_FILE_BYTES} bytes`);
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof DirectoryFileError) throw error;
    throw new DirectoryFileError(`cannot read ${path}: ${(error as Error).message}`);
  }
  return parseDirectoryFile(text);
}

export interface LoadResult {
  loaded: boolean;
  /** The version in the database after the call. */
  version: number;
  previousVersion: number;
}

/**
 * Replaces the directories with `file` in one transaction, if its version is higher than the
 * loaded one (`force`: if it differs). Readers see the old directory or the new one, never a mix.
 */
export async function loadDirectories(db: Db, clock: Clock, file: DirectoryFile, origin: string, options: { force?: boolean } = {}): Promise<LoadResult> {
  return withTx(db, async (trx) => {
    const previous = await loadedVersion(trx);
    const claimed = await claimVersion(trx, { version: file.version, publishedOn: file.publishedOn, origin, at: clock.now() }, options.force ?? false);
    if (!claimed) return { loaded: false, version: (await loadedVersion(trx)).version, previousVersion: previous.version };
    const vasps: VaspRow[] = file.vasps.map((v) => ({ sort_key: keyOf(v.vaspName), vasp_name: v.vaspName, url: v.url ?? null }));
    const providers: UmaProviderRow[] = file.umaProviders.map((p) => ({
      sort_key: keyOf(p.name),
      name: p.name,
      domain: p.domain.toLowerCase(),
      logo_url: p.logoUrl ?? null,
      lei: p.lei ?? null,
      supported_regions: p.supportedRegions,
      supported_currencies: p.supportedCurrencies,
    }));
    const discoveries: DiscoveryRow[] = file.discoveries.map((d) => ({ country: d.country, currency: d.currency, bank_name: d.bankName, display_name: d.displayName }));
    await replaceDirectories(trx, { vasps, providers, discoveries });
    return { loaded: true, version: file.version, previousVersion: previous.version };
  });
}

/**
 * At start: loads the shipped file when it is newer than what the database holds. A file an
 * operator loaded with a higher version stays; the next release that ships a higher one
 * replaces it.
 */
export async function loadShippedDirectories(db: Db, clock: Clock): Promise<LoadResult> {
  const [text, current] = await Promise.all([readFile(SHIPPED_DIRECTORY_FILE, 'utf8'), loadedVersion(db)]);
  // The whole file is checked only when it is to be loaded: on every other start its version is all that is read.
  const shippedVersion = (JSON.parse(text) as { version?: unknown }).version;
  if (typeof shippedVersion === 'number' && current.version >= shippedVersion) return { loaded: false, version: current.version, previousVersion: current.version };
  return loadDirectories(db, clock, parseDirectoryFile(text), 'shipped');
}
