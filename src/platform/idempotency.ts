import type { Clock } from './clock.js';
import { canonicalJson, sha256Hex } from './crypto/encoding.js';
import type { DbOrTx, Tx } from './db/database.js';
import { AppError, invalidInput } from './errors.js';

interface IdempotencyKeysTable {
  platform_id: string;
  key: string;
  request_hash: string;
  status_code: number | null;
  response_body: unknown;
  created_at: Date;
}

declare module './db/database.js' {
  interface Database {
    idempotency_keys: IdempotencyKeysTable;
  }
}

export interface StoredResponse {
  statusCode: number;
  body: unknown;
}

const KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$';
const KEY_RE = new RegExp(KEY_PATTERN);

/**
 * The `Idempotency-Key` request header, for the OpenAPI document of a route that accepts it
 * (`sendWrite(…, { idempotent: true })`). Checked by `checkIdempotencyKey`, whose error names it.
 */
export const IDEMPOTENCY_KEY_HEADER = {
  'idempotency-key': {
    type: 'string',
    pattern: KEY_PATTERN,
    minLength: 1,
    maxLength: 255,
    description:
      'Makes the request safe to retry (1–255 visible ASCII characters, per platform): repeating the same request with the same key answers the stored ' +
      'response with `Idempotent-Replayed: true`; the same key with a different request is 409 CONFLICT; while the first is still in progress, 409 with ' +
      '`x-should-retry: true`.',
  },
} as const;

export function checkIdempotencyKey(key: string): string {
  if (!KEY_RE.test(key)) {
    throw invalidInput([
      { field: 'Idempotency-Key', constraint: { minLength: 1, maxLength: 255 }, message: 'must be 1–255 visible ASCII characters' },
    ]);
  }
  return key;
}

/** Stable JSON (sorted keys) so the same body always hashes the same. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return sha256Hex(`${method} ${path}\n${canonicalJson(body)}`);
}

type Scope = { platformId: string; key: string; fingerprint: string };

/**
 * The response stored under the key, if there is one: 409 CONFLICT when the key was used with
 * another request, or (retryable) while the first request with it is still in progress.
 */
export async function storedResponse(db: DbOrTx, scope: Scope): Promise<(StoredResponse & { replayed: true }) | undefined> {
  const stored = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'status_code', 'response_body'])
    .where('platform_id', '=', scope.platformId)
    .where('key', '=', scope.key)
    .executeTakeFirst();
  if (!stored) return undefined;
  if (stored.request_hash !== scope.fingerprint) {
    throw new AppError('CONFLICT', 'This Idempotency-Key was already used with a different request.', {
      details: { idempotencyKey: scope.key },
    });
  }
  if (stored.status_code === null) {
    throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still in progress.', { details: { idempotencyKey: scope.key }, retryable: true });
  }
  return { statusCode: stored.status_code, body: stored.response_body, replayed: true };
}

/**
 * Runs `work` at most once per (platform, key), inside the caller's transaction: the key, the
 * request's fingerprint and the response commit together with the change, so a replay after
 * a crash either finds the whole result or nothing. A concurrent request with the same key
 * waits on the key's row and then replays what the first one committed.
 */
export async function runIdempotent(
  trx: Tx,
  clock: Clock,
  scope: Scope,
  work: () => Promise<StoredResponse>,
): Promise<StoredResponse & { replayed: boolean }> {
  const inserted = await trx
    .insertInto('idempotency_keys')
    .values({
      platform_id: scope.platformId,
      key: scope.key,
      request_hash: scope.fingerprint,
      status_code: null,
      response_body: null,
      created_at: clock.now(),
    })
    .onConflict((oc) => oc.columns(['platform_id', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  if (!inserted) {
    // The conflicting insert committed (it waited for it), so the row is there.
    const stored = await storedResponse(trx, scope);
    if (!stored) throw new Error(`idempotency key ${scope.key} conflicted but is not stored`);
    return stored;
  }
  const response = await work();
  await trx
    .updateTable('idempotency_keys')
    .set({ status_code: response.statusCode, response_body: JSON.stringify(response.body ?? null) })
    .where('platform_id', '=', scope.platformId)
    .where('key', '=', scope.key)
    .execute();
  return { ...response, replayed: false };
}
