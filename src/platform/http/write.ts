import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db, DbOrTx, Tx } from '../db/database.js';
import { withTx } from '../db/tx.js';
import { checkIdempotencyKey, claimKey, releaseKey, storeAnswer, type HeldKey, type IdempotencyScope, type RequestFingerprints, type StoredResponse } from '../idempotency.js';

interface WriteOptions<Prepared> {
  idempotent?: boolean;
  /**
   * Turns the stored body into the one sent, on the first answer and on every replay: for a
   * response holding a secret the idempotency record must not keep (it stores what can
   * re-derive it instead).
   */
  present?: (body: unknown) => unknown;
  /**
   * Work outside the transaction whose result `work` takes (a call to another system). With an
   * Idempotency-Key it runs once per key: the key is claimed, and the claim committed, before
   * it runs, so a request with the key finds the stored response (a retry does not repeat it)
   * or, while this one is in progress, is refused (409, retryable) instead of running it too.
   * It is handed the key's scope (undefined without a key), for work that must also be found
   * again under the key should the request fail after it (sandbox UMA receive).
   */
  prepare?: (scope: IdempotencyScope | undefined) => Promise<Prepared>;
  /**
   * What stands for the body in the key's fingerprint where Fastify parsed none (a multipart
   * upload: a digest of its file), so the same key with another file is 409, not a replay.
   */
  fingerprintBody?: unknown;
}

/**
 * The request's path as routed, with its parameters as decoded: `Quote%3A…` (SDKs percent-encode
 * path parameters) and `Quote:…` are one request, not another request under the key. For a path
 * without escapes it is the path as sent, so keys stored before keep their fingerprints.
 */
function routedPath(request: FastifyRequest): string {
  const params = request.params as Record<string, string>;
  return request.routeOptions.url!.replace(/:(\w+)/g, (parameter, name: string) => params[name] ?? parameter);
}

/**
 * One database transaction per writing request. With `idempotent`, an `Idempotency-Key`
 * header makes the write happen at most once: a replay returns the stored response with
 * `Idempotent-Replayed: true`, the same key with another body is 409. A concurrent request with
 * the key waits for the first one's transaction and replays its response; with `prepare`, whose
 * work outside the transaction takes longer and must not run twice, it is refused while the
 * first one is in progress (409, retryable).
 *
 * `transaction: 'when-needed'`: without an Idempotency-Key, `work` is handed the root handle
 * instead of a transaction (no BEGIN/COMMIT round trips for a request that writes one row):
 * it opens its own (`inTransaction`) wherever it writes more than once. With a key, the
 * idempotency record and the write still commit together in one transaction.
 */
export async function sendWrite<Prepared = undefined, Mode extends 'always' | 'when-needed' = 'always'>(
  deps: { db: Db; clock: Clock; fingerprints: RequestFingerprints },
  request: FastifyRequest,
  reply: FastifyReply,
  work: (db: Mode extends 'when-needed' ? DbOrTx : Tx, prepared: Prepared) => Promise<StoredResponse>,
  options: WriteOptions<Prepared> & { transaction?: Mode } = {},
): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  const key = options.idempotent && typeof header === 'string' ? checkIdempotencyKey(header) : undefined;
  const scope = key ? { platformId: request.principal.platformId, key, ...deps.fingerprints.of(request.method, routedPath(request), options.fingerprintBody ?? request.body) } : undefined;
  const answer = (result: StoredResponse & { replayed: boolean }) => {
    if (result.replayed) reply.header('idempotent-replayed', 'true');
    reply.code(result.statusCode);
    if (result.statusCode === 204) return reply.send();
    return reply.send(options.present ? options.present(result.body) : result.body);
  };
  let claim: HeldKey | undefined;
  try {
    let prepared = undefined as Prepared;
    if (options.prepare) {
      if (scope) {
        const claimed = await claimKey(deps.db, deps.clock, scope);
        if (!claimed.claimed) return answer({ ...claimed.stored, replayed: true });
        claim = claimed;
      }
      prepared = await options.prepare(scope);
    }
    if (!scope && options.transaction === 'when-needed') {
      return answer({ ...(await (work as (db: DbOrTx, prepared: Prepared) => Promise<StoredResponse>)(deps.db, prepared)), replayed: false });
    }
    return answer(
      await withTx(deps.db, async (trx) => {
        const inTx = work as (trx: Tx, prepared: Prepared) => Promise<StoredResponse>;
        if (!scope) return { ...(await inTx(trx, prepared)), replayed: false };
        const held = claim ?? (await claimKey(trx, deps.clock, scope));
        if (!held.claimed) return { ...held.stored, replayed: true };
        const response = await inTx(trx, prepared);
        await storeAnswer(trx, scope, held, response);
        return { ...response, replayed: false };
      }),
    );
  } catch (error) {
    // The claim committed before `prepare` holds no answer: give it up, so a retry runs again
    // (should that fail too, a retry takes it over once abandoned: CLAIM_ABANDONED_AFTER_MS).
    if (claim && scope) await releaseKey(deps.db, scope, claim).catch((releaseError: unknown) => request.log.warn({ err: releaseError }, 'could not release an Idempotency-Key claim'));
    throw error;
  }
}
