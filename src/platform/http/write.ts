import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db, DbOrTx, Tx } from '../db/database.js';
import { withTx } from '../db/tx.js';
import { checkIdempotencyKey, requestFingerprint, runIdempotent, type StoredResponse } from '../idempotency.js';

interface WriteOptions {
  idempotent?: boolean;
  /**
   * Turns the stored body into the one sent, on the first answer and on every replay: for a
   * response holding a secret the idempotency record must not keep (it stores what can
   * re-derive it instead).
   */
  present?: (body: unknown) => unknown;
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
export async function sendWrite(
  deps: { db: Db; clock: Clock },
  request: FastifyRequest,
  reply: FastifyReply,
  work: (trx: Tx) => Promise<StoredResponse>,
  options?: WriteOptions & { transaction?: 'always' },
): Promise<FastifyReply>;
export async function sendWrite(
  deps: { db: Db; clock: Clock },
  request: FastifyRequest,
  reply: FastifyReply,
  work: (db: DbOrTx) => Promise<StoredResponse>,
  options: WriteOptions & { transaction: 'when-needed' },
): Promise<FastifyReply>;
export async function sendWrite(
  deps: { db: Db; clock: Clock },
  request: FastifyRequest,
  reply: FastifyReply,
  work: (db: Tx) => Promise<StoredResponse>,
  options: WriteOptions & { transaction?: 'always' | 'when-needed' } = {},
): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  const key = options.idempotent && typeof header === 'string' ? checkIdempotencyKey(header) : undefined;
  const result =
    !key && options.transaction === 'when-needed'
      ? { ...(await (work as (db: DbOrTx) => Promise<StoredResponse>)(deps.db)), replayed: false }
      : await withTx(deps.db, async (trx) => {
          if (!key) return { ...(await work(trx)), replayed: false };
          const fingerprint = requestFingerprint(request.method, request.url.split('?')[0]!, request.body);
          return runIdempotent(trx, deps.clock, { platformId: request.principal.platformId, key, fingerprint }, () => work(trx));
        });
  if (result.replayed) reply.header('idempotent-replayed', 'true');
  reply.code(result.statusCode);
  if (result.statusCode === 204) return reply.send();
  return reply.send(options.present ? options.present(result.body) : result.body);
}
