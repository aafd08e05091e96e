import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { AppError, shouldRetry, statusOf, type ErrorCode, invalidInput } from '../errors.js';
import type { KnownRoutes } from './known-routes.js';
import { notFoundFromParams } from './path-ids.js';
import { toFieldErrors } from './validation.js';

interface ErrorEnvelope {
  status: number;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  [extra: string]: unknown;
}

/** Longest request target (path and query) accepted; longer is 414 URI_TOO_LONG. */
export const MAX_URI_BYTES = 8192;

/** Seconds a client should wait after a 429 or 503 that did not say (a provider hiccup, a process shutting down). */
const DEFAULT_RETRY_AFTER_SECONDS = 1;

export function envelope(code: ErrorCode, message: string, details?: Record<string, unknown>, extra?: Record<string, unknown>): ErrorEnvelope {
  return { status: statusOf(code), code, message, ...(details ? { details } : {}), ...extra };
}

/**
 * The headers every error response carries besides its own: `x-should-retry` (see
 * `shouldRetry`), and `retry-after` on 429 and 503 when the error did not set one.
 */
export function retryHeaders(status: number, code: string | undefined, own: Record<string, unknown> = {}, retryable?: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  const hint = shouldRetry(status, code, retryable);
  if (hint !== undefined) headers['x-should-retry'] = String(hint);
  if ((status === 429 || status === 503) && own['retry-after'] === undefined) headers['retry-after'] = String(DEFAULT_RETRY_AFTER_SECONDS);
  return headers;
}

function sendError(reply: FastifyReply, body: ErrorEnvelope, options: { headers?: Record<string, string> | undefined; retryable?: boolean | undefined } = {}): FastifyReply {
  const own = options.headers ?? {};
  reply.headers({ ...own, ...retryHeaders(body.status, body.code, own, options.retryable) });
  return reply.code(body.status).type('application/json; charset=utf-8').send(body);
}

function sendAppError(reply: FastifyReply, error: AppError): FastifyReply {
  return sendError(reply, envelope(error.code, error.message, error.details, error.extra), { headers: error.headers, retryable: error.retryable });
}

const PART_NAMES: Record<string, string> = { querystring: 'query', params: 'path', headers: 'header' };

/** `idempotency-key` → `Idempotency-Key`: header fields are named as the header is written. */
function headerName(field: string): string {
  return field.replace(/(^|-)([a-z])/g, (_m, dash: string, letter: string) => dash + letter.toUpperCase());
}

/**
 * Whether the request's connection closed before the request had arrived whole, so that whatever
 * failed (Node's `aborted`, code ECONNRESET, on a JSON body; the multipart parser's "unexpected
 * end") failed for that reason, and no answer can be delivered: the client hung up midway
 * through its body, or the connection was closed after a malformed body was refused
 * (client-errors.ts). Never the database: its lost connections (also ECONNRESET) fail requests
 * that arrived whole.
 */
function clientClosed(request: FastifyRequest): boolean {
  return !request.raw.complete && request.raw.destroyed;
}

/** Fastify's own client errors, mapped into our envelope. */
function fromFastify(error: FastifyError, request: FastifyRequest): AppError | undefined {
  if (error.validation) {
    const part = error.validationContext ?? 'body';
    if (part === 'params') return notFoundFromParams(error, request);
    let errors = toFieldErrors(error.validation as Parameters<typeof toFieldErrors>[0]);
    if (part === 'headers') errors = errors.map((e) => ({ ...e, field: headerName(e.field) }));
    const where = part === 'body' ? 'The request body has invalid fields.' : `The request ${PART_NAMES[part] ?? part} parameters are invalid.`;
    return invalidInput(errors, where);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('INVALID_INPUT', 'The request body is larger than this endpoint accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('INVALID_INPUT', 'Unsupported Content-Type; send application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('INVALID_INPUT', 'Content-Length does not match the body.');
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new AppError('INVALID_INPUT', 'The request body is not valid JSON.');
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500 && error.code?.startsWith('FST_')) {
    return new AppError('INVALID_INPUT', error.message);
  }
  return undefined;
}

/**
 * Header fields a request may carry only once (RFC 9110 §5.3: only a field defined as a list may
 * be repeated; RFC 9112 §3.2: a request with two Host fields is 400). Node keeps the first of each
 * and drops the others unseen, so a second Authorization or Content-Type was silently ignored,
 * while a proxy or gateway in front that reads the last one acts on another value than Corridor.
 * Idempotency-Key, which Node joins into one value ("a, b"), would otherwise be refused as an
 * unreadable key rather than as two. Content-Length is the parser's (client-errors.ts).
 */
const SINGLETON_FIELDS: ReadonlySet<string> = new Set(['authorization', 'content-type', 'host', 'idempotency-key']);
const SINGLETON_LENGTHS: ReadonlySet<number> = new Set([...SINGLETON_FIELDS].map((name) => name.length));

/** The first field of SINGLETON_FIELDS that `rawHeaders` (Node's name, value, name, value, …) holds twice, lower-cased. */
function repeatedSingleton(rawHeaders: readonly string[]): string | undefined {
  let seen: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i]!;
    // Only names of these fields' lengths are lower-cased and looked up: this runs on every request.
    if (!SINGLETON_LENGTHS.has(raw.length)) continue;
    const name = raw.toLowerCase();
    if (!SINGLETON_FIELDS.has(name)) continue;
    if (seen?.includes(name)) return name;
    (seen ??= []).push(name);
  }
  return undefined;
}

/** 404 for a path nothing serves, 405 with `Allow` for a known path asked with another method. */
export function unroutable(routes: KnownRoutes, method: string, path: string): AppError {
  const allowed = routes.allowed(path);
  if (allowed.length > 0) {
    return new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; use ${allowed.join(', ')}.`, {
      details: { allowed },
      headers: { allow: allowed.join(', ') },
    });
  }
  return new AppError('REFERENCE_NOT_FOUND', `The endpoint ${method} ${path} does not exist.`);
}

/** Out of caches unless the route says otherwise, and never content-sniffed (the `onSend` hook's headers). */
function keptPrivate(reply: FastifyReply): void {
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
  reply.header('x-content-type-options', 'nosniff');
}

/**
 * Errors Fastify's router raises before any route or hook runs (`frameworkErrors`): a path that
 * is not valid percent-encoding, a path segment longer than the router keeps. No hook runs for
 * them, so what the hooks give every answer is given here: the request id and the headers of
 * `onSend`, and `answered` (the request's log line and count in the metrics) once it is sent.
 */
export function frameworkErrors(answered: (request: FastifyRequest, reply: FastifyReply) => void): NonNullable<FastifyServerOptions['frameworkErrors']> {
  return (error, request, reply) => {
    const appError =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new AppError('URI_TOO_LONG', 'The request path is longer than this API accepts.')
        : error.code === 'FST_ERR_BAD_URL'
          ? new AppError('INVALID_INPUT', 'The request path is not valid percent-encoded UTF-8.')
          : new AppError('INTERNAL_ERROR', 'The request could not be routed.');
    keptPrivate(reply.header('x-request-id', request.id));
    void sendAppError(reply, appError);
    answered(request, reply);
  };
}

/**
 * Every error leaves as the spec's envelope `{status, code, message, details?}` with `status`
 * equal to the HTTP status, whoever raised it, with `x-should-retry` (and `Retry-After` on 429
 * and 503). The database unreachable or refusing work for now (platform/db/unavailable.ts) is a
 * 503 a client retries; other unknown failures become a generic 500 that quotes the request id;
 * the stack goes to the log only. Requests that reach no route are answered 404, or 405 with
 * `Allow`, before their body is read; requests that arrive while the process shuts down are 503.
 */
export function registerErrorHandling(app: FastifyInstance, routes: KnownRoutes): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  // Synchronous hooks (done callbacks): they run on every request, and an async hook costs a promise per request.
  // The request id first: the refusals below (shutdown, 414, repeated headers, no such route) are answers too.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      reply.header('connection', 'close');
      // The shutdown is logged once (server.ts); each request refused while draining is in the request log.
      return done(new AppError('SERVICE_UNAVAILABLE', 'This Corridor process is shutting down; retry the request.', { log: 'none' }));
    }
    if (request.url.length > MAX_URI_BYTES) {
      return done(new AppError('URI_TOO_LONG', `The request target is longer than ${MAX_URI_BYTES} bytes.`));
    }
    const repeated = repeatedSingleton(request.raw.rawHeaders);
    if (repeated) {
      return done(invalidInput([{ field: headerName(repeated), message: 'must be sent at most once' }], 'The request header parameters are invalid.'));
    }
    if (request.is404) return done(unroutable(routes, request.method, request.url.split('?')[0]!));
    done();
  });

  // Responses that did not pass through the error handler (a stored outcome replayed, a plugin's
  // own error) still get the retry hint. Every response is kept out of caches unless its route
  // says otherwise (answers carry customers' personal data, a new token's secret, a wallet
  // export), and is never content-sniffed into another type than it declares.
  app.addHook('onSend', (_request, reply, payload, done) => {
    keptPrivate(reply);
    const status = reply.statusCode;
    if (status >= 400 && !reply.hasHeader('x-should-retry')) {
      reply.headers(retryHeaders(status, undefined, reply.getHeaders() as Record<string, unknown>));
    }
    done(null, payload);
  });

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (clientClosed(request)) {
      // Its connection is gone, so no answer is written and no request line follows: this is its one line. The route, not
      // the URL, which may hold a hosted page's token.
      const { method, routeOptions } = request;
      request.log.info({ method, route: routeOptions.url, ms: Math.round(reply.elapsedTime * 10) / 10, reason: error.message }, 'request abandoned: its connection closed before all of it arrived');
      return sendAppError(reply, new AppError('INVALID_INPUT', 'The connection was closed before the request was complete.'));
    }
    const known = error instanceof AppError ? error : fromFastify(error, request);
    if (known) {
      if (known.log === 'warn') request.log.warn({ err: error }, 'request refused');
      else if (known.log !== 'none' && known.status >= 500) request.log.error({ err: error }, 'request failed');
      return sendAppError(reply, known);
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      return sendAppError(reply, new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable right now; retry the request (with the same Idempotency-Key for a write).'));
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(
      reply,
      envelope('INTERNAL_ERROR', `An internal error occurred. Quote request id ${request.id} when reporting it.`, { requestId: request.id }),
    );
  });

  app.setNotFoundHandler((request: FastifyRequest) => {
    throw unroutable(routes, request.method, request.url.split('?')[0]!);
  });
}
