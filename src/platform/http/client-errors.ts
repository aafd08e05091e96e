import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { AppError } from '../errors.js';
import { uuidv7 } from '../ids.js';
import { envelope, MAX_URI_BYTES, retryHeaders, unroutable } from './error-handler.js';
import type { KnownRoutes } from './known-routes.js';

interface ParserError extends Error {
  code?: string;
  /** The bytes Node's parser was reading when it failed (Node sets it on HPE_* errors). */
  rawPacket?: Buffer;
}

/** `METHOD SP target` from the start of the bytes, when they hold a request line's beginning. */
function requestLine(raw: Buffer | undefined): { method: string; target: string; complete: boolean } | undefined {
  if (!raw) return undefined;
  const head = raw.toString('latin1', 0, Math.min(raw.length, MAX_URI_BYTES + 64));
  const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S*)/.exec(head);
  if (!match) return undefined;
  return { method: match[1]!, target: match[2]!, complete: head.includes('\r\n') };
}

/** What to answer for a request Node's HTTP parser refused. */
function refusalFor(error: ParserError, routes: KnownRoutes): AppError {
  const line = requestLine(error.rawPacket);
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('REQUEST_TIMEOUT', 'The request was not received in time.');
    case 'HPE_HEADER_OVERFLOW':
      // The head (request line and headers) outgrew Node's limit: the target's fault when the
      // request line alone is that long.
      if (line && (!line.complete || line.target.length > MAX_URI_BYTES)) {
        return new AppError('URI_TOO_LONG', `The request target is longer than ${MAX_URI_BYTES} bytes.`);
      }
      return new AppError('REQUEST_HEADER_FIELDS_TOO_LARGE', 'The request headers are larger than this API accepts.');
    case 'HPE_INVALID_METHOD':
      if (line) return unroutable(routes, line.method, line.target.split('?')[0]!);
  }
  return new AppError('INVALID_INPUT', 'The request is not well-formed HTTP/1.1.');
}

/**
 * Answers, in the error envelope, requests that Node's HTTP parser refuses before Fastify sees
 * them — an unknown method (FOO), a head over the size limit (431, or 414 when the target is
 * what is too long), malformed HTTP, a request that did not arrive in time — then closes the
 * connection, whose parser cannot continue.
 */
export function clientErrorHandler(routes: KnownRoutes): NonNullable<FastifyServerOptions['clientErrorHandler']> {
  return function onClientError(this: FastifyInstance, connectionError: Error, socket: Socket) {
    const error = connectionError as ParserError;
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const refusal = refusalFor(error, routes);
    const body = JSON.stringify(envelope(refusal.code, refusal.message, refusal.details));
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
      'x-request-id': uuidv7(),
      ...refusal.headers,
      ...retryHeaders(refusal.status, refusal.code, refusal.headers),
    };
    this.log.debug({ err: error, status: refusal.status }, 'client error');
    const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    if (socket.writable) socket.end(`HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n${head}\r\n${body}`);
    else socket.destroy(error);
  };
}
