import { createHmac, hkdfSync } from 'node:crypto';
import type { QueryCreator } from 'kysely';
import type { Clock } from './clock.js';
import { canonicalJson, sha256Hex } from './crypto/encoding.js';
import type { Db, DbOrTx, Tx } from './db/database.js';
import { deferUpdate } from './db/tx.js';
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
      'response with `Idempotent-Replayed: true`; the same key with a different request is 409 CONFLICT. While the first request with the key is still in ' +
      'progress, a repeat waits for it and answers its response; on an operation that calls another system before it writes (a receiving VASP, a ' +
      'name-check provider) the repeat is 409 CONFLICT with `x-should-retry: true` instead: retry it. A request refused without a change stored nothing: its key may be used again; ' +
      'a refusal that changed something (an expired quote’s execution, recorded EXPIRED) is stored and replayed like any answer.',
  },
} as const;

export function checkIdempotencyKey(key: string): string {
  if (!KEY_RE.test(key)) {
    throw invalidInput([
      { field: 'Idempotency-Key', constraint: { pattern: KEY_PATTERN, minLength: 1, maxLength: 255 }, message: 'must be 1–255 visible ASCII characters' },
    ]);
  }
  return key;
}

/**
 * The fingerprint a key is stored with: an HMAC of the request (method, routed path, the body as
 * stable JSON: sorted keys, so the same body always gives the same) under a key derived from the
 * master key. Not a plain hash: keys are kept for ever, and everything in a body but a secret
 * field (a customer's tax identifier) can be rebuilt from the stored response, so a plain SHA-256
 * let anyone holding a copy of the database guess the secret offline (10^9 SSNs at ~7 µs each).
 */
export class RequestFingerprints {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'corridor/idempotency-fingerprint', 32));
  }

  of(method: string, path: string, body: unknown): Pick<IdempotencyScope, 'fingerprint' | 'unkeyedFingerprint'> {
    const request = `${method} ${path}\n${canonicalJson(body)}`;
    return { fingerprint: createHmac('sha256', this.key).update(request).digest('hex'), unkeyedFingerprint: () => sha256Hex(request) };
  }
}

/**
 * An Idempotency-Key as stored: per platform, with the fingerprint of the request it was sent
 * with. `unkeyedFingerprint`: the plain SHA-256 keys stored before fingerprints were keyed carry,
 * compared only when the keyed one differs, so a request retried across the upgrade still
 * replays instead of reading as another request (whose client might then send it again under a
 * new key: a second payment).
 */
export type IdempotencyScope = { platformId: string; key: string; fingerprint: string; unkeyedFingerprint?: () => string };

/**
 * How long a claim on a key may stand unanswered before a request with the same key and body
 * takes it over: the request that claimed it is taken to have died with its process. Several
 * times the longest a request works outside its transaction (each provider call it makes is
 * bounded by a timeout of at most 60 s).
 */
export const CLAIM_ABANDONED_AFTER_MS = 5 * 60_000;

/** How often a claim is attempted again when the row it conflicted with was gone when read. */
const CLAIM_ATTEMPTS = 3;

/** The key held by this request: `since` it claimed it, which tells its claim from a later takeover's. */
export type HeldKey = { claimed: true; since: Date };

/** The key held by this request, or the answer stored under it. */
export type KeyClaim = HeldKey | { claimed: false; stored: StoredResponse };

function inProgress(scope: IdempotencyScope): AppError {
  return new AppError('CONFLICT', 'A request with this Idempotency-Key is still in progress.', { details: { idempotencyKey: scope.key }, retryable: true });
}

/**
 * Claims (platform, key) for this request. On the root handle the claim commits at once, before
 * work outside the transaction (`sendWrite`'s `prepare`), so a concurrent request with the key
 * sees it; in a transaction it commits with the change, and a concurrent request's claim waits
 * on the row until then. A key already claimed is 409 CONFLICT when claimed for another request;
 * answers its stored response when it has one; is 409 CONFLICT, retryable, while its request is
 * in progress — unless that claim is older than `CLAIM_ABANDONED_AFTER_MS`, when this request
 * takes it over.
 */
export async function claimKey(db: DbOrTx, clock: Clock, scope: IdempotencyScope): Promise<KeyClaim> {
  for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
    const now = clock.now();
    const inserted = await db
      .insertInto('idempotency_keys')
      .values({
        platform_id: scope.platformId,
        key: scope.key,
        request_hash: scope.fingerprint,
        status_code: null,
        response_body: null,
        created_at: now,
      })
      .onConflict((oc) => oc.columns(['platform_id', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    if (inserted) return { claimed: true, since: now };
    const held = await db
      .selectFrom('idempotency_keys')
      .select(['request_hash', 'status_code', 'response_body', 'created_at'])
      .where('platform_id', '=', scope.platformId)
      .where('key', '=', scope.key)
      .executeTakeFirst();
    // Its claim was given up between the two statements (its request failed): claim it again.
    if (!held) continue;
    if (held.request_hash !== scope.fingerprint && held.request_hash !== scope.unkeyedFingerprint?.()) {
      throw new AppError('CONFLICT', 'This Idempotency-Key was already used with a different request.', {
        details: { idempotencyKey: scope.key },
      });
    }
    if (held.status_code !== null) return { claimed: false, stored: { statusCode: held.status_code, body: held.response_body } };
    if (now.getTime() - held.created_at.getTime() < CLAIM_ABANDONED_AFTER_MS) throw inProgress(scope);
    const taken = await db
      .updateTable('idempotency_keys')
      .set({ created_at: now })
      .where('platform_id', '=', scope.platformId)
      .where('key', '=', scope.key)
      .where('status_code', 'is', null)
      .where('created_at', '=', held.created_at)
      .returning('key')
      .executeTakeFirst();
    if (taken) return { claimed: true, since: now };
    // Another request took it over or answered it first: read what it left.
  }
  throw inProgress(scope);
}

/** The claim's row answered: built from values (or stand-ins for them), so it compiles once. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const answerUpdate = (db: QueryCreator<any>, [statusCode, body, platformId, key, since]: readonly unknown[]) =>
  db
    .updateTable('idempotency_keys')
    .set({ status_code: statusCode, response_body: body })
    .where('platform_id', '=', platformId)
    .where('key', '=', key)
    .where('created_at', '=', since)
    .where('status_code', 'is', null);

/**
 * Stores `response` under the claimed key in the transaction of the change it reports (in the
 * statement that commits it, `deferUpdate`), so a replay after a crash finds the whole result or
 * nothing. A claim that was taken over (this request outlived `CLAIM_ABANDONED_AFTER_MS`) fails
 * the transaction: its change is rolled back, and the request is 409, retryable, which a retry
 * answers with what the request that took over stored.
 */
export async function storeAnswer(trx: Tx, scope: IdempotencyScope, claim: HeldKey, response: StoredResponse): Promise<void> {
  const values = [response.statusCode, JSON.stringify(response.body ?? null), scope.platformId, scope.key, claim.since];
  const notOne = () => inProgress(scope);
  if (!deferUpdate(trx, { shape: 'idempotency answer', values, build: answerUpdate, notOne }) && (await answerUpdate(trx, values).executeTakeFirst()).numUpdatedRows !== 1n) {
    throw notOne();
  }
}

/**
 * Gives up a claim committed before the request's transaction when the request failed before
 * storing an answer, so that a retry with the key runs again. Leaves a taken-over or answered
 * claim alone.
 */
export async function releaseKey(db: Db, scope: IdempotencyScope, claim: HeldKey): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('platform_id', '=', scope.platformId)
    .where('key', '=', scope.key)
    .where('created_at', '=', claim.since)
    .where('status_code', 'is', null)
    .execute();
}
