import type { TenantSecretBox } from '../../platform/crypto/secret-box.js';
import type { Db, DbOrTx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { identifierKeyVersion } from '../platforms/index.js';
import { withoutTaxId } from './reads.js';
import { customersToReseal, updateCustomer } from './repo.js';

// Tax identifiers at rest (SSN/ITIN of individuals and owners, a business's taxId): sealed
// under the platform's current identifier key, bound to their row, never stored in clear.

export interface SealedIdentifier {
  identifier_sealed: string;
  identifier_key_version: number;
}

export async function sealIdentifier(db: DbOrTx, box: TenantSecretBox, platformId: string, rowId: string, value: string): Promise<SealedIdentifier> {
  const version = await identifierKeyVersion(db, platformId);
  return { identifier_sealed: box.seal(platformId, version, value, rowId), identifier_key_version: version };
}

export function openIdentifier(box: TenantSecretBox, platformId: string, rowId: string, sealed: SealedIdentifier): string {
  return box.open(platformId, sealed.identifier_key_version, sealed.identifier_sealed, rowId);
}

/**
 * The last four characters only, the rest `*` (as long as the value): enough to tell identifiers
 * apart, not to use one. Never more than half of it, so a short identifier (a foreign tax id may
 * be four characters) is not answered whole.
 */
export function maskIdentifier(value: string): string {
  const shown = Math.min(4, Math.floor(value.length / 2));
  return `${'*'.repeat(value.length - shown)}${value.slice(value.length - shown)}`;
}

/** Jobs that (re)seal stored identifiers: the migration's one for legacy plaintext, and one per key rotation. */
export const SEAL_PLAINTEXT_JOB = 'identifiers.seal-plaintext';
export const RESEAL_JOB = 'identifiers.reseal';
export const RESEAL_BATCH = 200;

export interface ResealCandidate {
  id: string;
  platform_id: string;
  identifier: string | null;
  identifier_sealed: string | null;
  identifier_key_version: number | null;
  current_version: number;
}

/** The clear value of a row to (re)seal: legacy plaintext first, else its sealed value under its old key. */
export function clearValue(box: TenantSecretBox, row: Omit<ResealCandidate, 'current_version'>, legacy?: string): string | undefined {
  if (row.identifier !== null) return row.identifier;
  if (legacy !== undefined) return legacy;
  if (row.identifier_sealed && row.identifier_key_version) {
    return openIdentifier(box, row.platform_id, row.id, { identifier_sealed: row.identifier_sealed, identifier_key_version: row.identifier_key_version });
  }
  return undefined;
}

/**
 * Seals every customer identifier not yet sealed under its platform's current key (of one
 * platform, or all), RESEAL_BATCH rows per transaction, each batch after the last row of the one
 * before. A sealed row no longer matches, so a crash simply resumes with the rows left; running
 * it twice does nothing the second time.
 */
export async function resealCustomerIdentifiers(db: Db, box: TenantSecretBox, platformId: string | undefined): Promise<number> {
  let done = 0;
  let after: string | undefined;
  for (;;) {
    const batch = await withTx(db, async (trx) => {
      const rows = await customersToReseal(trx, platformId, RESEAL_BATCH, after);
      for (const row of rows) {
        const profile = row.profile as Record<string, unknown>;
        const taxId = (profile.businessInfo as Record<string, unknown> | undefined)?.taxId;
        const value = clearValue(box, row, typeof taxId === 'string' ? taxId : undefined);
        await updateCustomer(trx, row.platform_id, row.id, {
          identifier: null,
          profile: withoutTaxId(profile),
          ...(value ? { identifier_sealed: box.seal(row.platform_id, row.current_version, value, row.id), identifier_key_version: row.current_version } : {}),
        });
      }
      return { count: rows.length, last: rows.at(-1)?.id };
    });
    // Taken once the batch has committed: a retried transaction starts where this one did.
    after = batch.last;
    done += batch.count;
    if (batch.count < RESEAL_BATCH) return done;
  }
}
