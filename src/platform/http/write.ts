import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db, DbOrTx, Tx } from '../db/database.js';
import { withTx } from '../db/tx.js';
import { checkIdempotencyKey, requestFingerprint, runIdempotent, storedResponse, type StoredResponse } from '../idempotency.js';

interface WriteOptions<Prepared> {
  idempotent?: boolean;
  /**
   * Turns the stored body into the one sent, on the first answer and on every replay: for a
   * response holding a secret the idempotency record must not keep (it stores what can
   * re-derive it instead).
   */
  present?: (body: unknown) => unknown;
  /**
   * Work outside the transaction whose result `work` takes (a call to another system). It is
   * skipped when a stored response already answers the request's key, so a retry does not
   * repeat it.
   */
  prepare?: () => Promise<Prepared>;
}

/**
 * One database transaction per writing request. With `idempotent`, an `Idempotency-Key`
 * header makes the write happen at most once: a replay returns the stored response with
 * `Idempotent-Replayed: true`, the same key with another body is 409.
 *
 * `transaction: 'when-needed'`: without an Idempotency-Key, `work` is handed the root handle
 * instead of a transaction (no BEGIN/COMMIT round trips for a request that writes one row):
 * it opens its own (`inTransaction`) wherever it writes more than once. With a key, the
 * idempotency record and the write still commit together in one transaction.
 */
export async function sendWrite<Prepared = undefined, Mode extends 'always' | 'when-needed' = 'always'>(
  deps: { db: Db; clock: Clock },
  request: FastifyRequest,
  reply: FastifyReply,
  work: (db: Mode extends 'when-needed' ? DbOrTx : Tx, prepared: Prepared) => Promise<StoredResponse>,
  options: WriteOptions<Prepared> & { transaction?: Mode } = {},
): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  const key = options.idempotent && typeof header === 'string' ? checkIdempotencyKey(header) : undefined;
  const scope = key ? { platformId: request.principal.platformId, key, fingerprint: requestFingerprint(request.method, request.url.split('?')[0]!, request.body) } : undefined;
  const answer = (result: StoredResponse & { replayed: boolean }) => {
    if (result.replayed) reply.header('idempotent-replayed', 'true');
    reply.code(result.statusCode);
    if (result.statusCode === 204) return reply.send();
    return reply.send(options.present ? options.present(result.body) : result.body);
  };
  let prepared = undefined as Prepared;
  if (options.prepare) {
    const stored = scope ? await storedResponse(deps.db, scope) : undefined;
    if (stored) return answer(stored);
    prepared = await options.prepare();
  }
  if (!scope && options.transaction === 'when-needed') {
    return answer({ ...(await (work as (db: DbOrTx, prepared: Prepared) => Promise<StoredResponse>)(deps.db, prepared)), replayed: false });
  }
  return answer(
    await withTx(deps.db, async (trx) => {
      const inTx = work as (trx: Tx, prepared: Prepared) => Promise<StoredResponse>;
      if (!scope) return { ...(await inTx(trx, prepared)), replayed: false };
      return runIdempotent(trx, deps.clock, scope, () => inTx(trx, prepared));
    }),
  );
}
