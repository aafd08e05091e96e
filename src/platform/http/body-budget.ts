/**
 * A per-process budget of request-body bytes held in memory. Fastify reads a JSON body whole
 * before parsing it, and a route may read a multipart file into memory (the customer CSV
 * import): each costs a few times its size while its request runs (buffer, text, parsed value),
 * so without a bound the memory a process holds for bodies grows with concurrency alone. Each
 * request with such a body reserves what it may hold before any of it is read, and gives it back
 * when its response is done or its connection closes; a request that finds no room is refused
 * with 503 SERVICE_UNAVAILABLE and a retry hint, before its body is read.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route reads a multipart/form-data body into memory rather than spooling it to disk, up
     * to this many bytes: it reserves them from the body budget. Unset: multipart bodies are
     * streamed to disk and reserve nothing.
     */
    multipartInMemoryBytes?: number;
  }
  interface FastifyInstance {
    /** The process's budget of request-body bytes held in memory (`registerBodyBudget`). */
    bodyBudget: BodyBudget;
  }
}

/** Seconds a refused caller is told to wait: bodies in flight are received and answered in about that. */
const RETRY_AFTER_SECONDS = 1;

/** A count of bytes reserved out of a fixed capacity; what does not fit is not reserved. */
export class BodyBudget {
  private reserved = 0;

  constructor(readonly capacityBytes: number) {
    if (!Number.isSafeInteger(capacityBytes) || capacityBytes < 1) throw new RangeError('the body budget must be a positive whole number of bytes');
  }

  /** Bytes reserved by requests in flight. */
  get heldBytes(): number {
    return this.reserved;
  }

  /** Reserves `bytes` if they fit beside what is held; false, and nothing reserved, if not. */
  tryReserve(bytes: number): boolean {
    if (this.reserved + bytes > this.capacityBytes) return false;
    this.reserved += bytes;
    return true;
  }

  release(bytes: number): void {
    this.reserved -= bytes;
  }
}

/**
 * The most of `request`'s body the process may hold in memory while it runs, 0 for none: its
 * declared length, or for a chunked body the route's limit. A JSON (or any non-multipart) body
 * is read whole up to the route's `bodyLimit`; a multipart one only on a route that says it
 * reads it into memory (`multipartInMemoryBytes`), the others spool files to disk.
 */
function bytesToHold(request: FastifyRequest): number {
  // Fastify never reads a body of these methods.
  if (request.method === 'GET' || request.method === 'HEAD') return 0;
  const { headers } = request;
  const declared = headers['content-length'];
  const chunked = declared === undefined && headers['transfer-encoding'] !== undefined;
  if (!chunked && (declared === undefined || declared === '0')) return 0;
  // request.routeOptions builds a new object on every read: only for requests with a body, once.
  const route = request.routeOptions;
  const multipart = /^\s*multipart\//i.test(headers['content-type'] ?? '');
  if (multipart) {
    // The parser reads a part up to the route's limit before it refuses a longer one.
    const limit = route.config.multipartInMemoryBytes ?? 0;
    return chunked ? limit : Math.min(Number(declared), limit);
  }
  // A declared length over the limit is refused before any of it is read (the limit's 400).
  // Node's parser has refused a Content-Length that is not a number before any route runs.
  if (chunked) return route.bodyLimit;
  return Number(declared) > route.bodyLimit ? 0 : Number(declared);
}

/** The refusal of a body that could not fit even alone: the body limit's answer (error-handler.ts), not a 503 a retry cannot fix. */
function tooLarge(): AppError {
  return new AppError('INVALID_INPUT', 'The request body is larger than this endpoint accepts.');
}

/** The refusal of a body for which the budget has no room now: 503, retryable, nothing read or done. */
function bodiesBusy(): AppError {
  return new AppError('SERVICE_UNAVAILABLE', 'This Corridor process is receiving as many request bodies as it may hold at once. Nothing was done; retry the request.', {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    details: { reason: 'BODY_MEMORY_FULL' },
    // Backpressure the service chose, not a fault (as the document screening gate's refusals).
    log: 'warn',
  });
}

/**
 * Puts every route of `app` under `budget`. The reservation is made in preParsing: after every
 * onRequest hook, so a request refused for its credentials, its path or its method reserves
 * nothing, and before the body is read. It is given back when the response's 'close' fires,
 * which Node emits exactly once per response, whether it was sent whole or its connection closed
 * first (a client gone mid-body, a handler still running): a `once` listener, so exactly once.
 * A refused body is never read: once the answer is sent, Node discards it as it arrives.
 */
export function registerBodyBudget(app: FastifyInstance, budget: BodyBudget): void {
  app.decorate('bodyBudget', budget);
  app.addHook('preParsing', (request, reply, payload, done) => {
    const bytes = bytesToHold(request);
    // A connection that closed while an earlier hook ran (authentication) has emitted its 'close'
    // already: a reservation made now would never be given back. Its body will never be read.
    if (bytes === 0 || reply.raw.destroyed) return done(null, payload);
    if (bytes > budget.capacityBytes) return done(tooLarge(), payload);
    if (!budget.tryReserve(bytes)) return done(bodiesBusy(), payload);
    reply.raw.once('close', () => budget.release(bytes));
    done(null, payload);
  });
}
