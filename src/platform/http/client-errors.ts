import { STATUS_CODES, type ServerResponse } from 'node:http';
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
  /** How far into rawPacket the parser got before failing (Node sets it with rawPacket). */
  bytesParsed?: number;
}

/** The response Node is writing on a connection (Node's own field; the later pipelined ones wait behind it). */
interface ConnectionSocket extends Socket {
  _httpMessage?: ServerResponse | null;
}

/**
 * The bytes of the request the parser failed on: rawPacket can begin with earlier requests
 * pipelined in the same packet, which the parser already handed on. The failing one starts on
 * the line the parser stopped in.
 */
function failedRequestBytes(error: ParserError): Buffer | undefined {
  const raw = error.rawPacket;
  if (!Buffer.isBuffer(raw) || error.bytesParsed === undefined) return raw;
  const stop = Math.min(error.bytesParsed, raw.length);
  return raw.subarray(raw.lastIndexOf(0x0a, stop - 1) + 1);
}

/**
 * Calls `then` once the connection has written every response to the requests before the one
 * that failed (pipelined on the same connection): an answer written at once would go out in
 * their place — a client reads it as the answer to its earlier request — and the connection,
 * closed under them, would drop their answers while their writes still commit. A response whose
 * request has not arrived whole is not waited for: the parser failed in that request's own body
 * (the client closed its side midway, a malformed chunk), which can never end now, so its
 * response would never come and the connection would be held until the request timeout. It is
 * answered at once; closing the connection then aborts it (error-handler.ts: `clientClosed`).
 */
function afterPendingResponses(socket: ConnectionSocket, then: () => void): void {
  const current = socket._httpMessage;
  if (!current || current.writableFinished || !current.req.complete) return then();
  // Node attaches the next pipelined response before 'finish' reaches this listener.
  const next = () => {
    current.off('finish', next).off('close', next);
    afterPendingResponses(socket, then);
  };
  current.once('finish', next).once('close', next);
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
  const line = requestLine(failedRequestBytes(error));
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
      break;
    case 'HPE_INVALID_EOF_STATE':
      return new AppError('INVALID_INPUT', 'The connection was closed before the request was complete.');
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
  // A connection answered (or to be answered once its pending responses are out) gets one answer,
  // whatever else its parser reports meanwhile.
  const refused = new WeakSet<Socket>();
  return function onClientError(this: FastifyInstance, connectionError: Error, socket: Socket) {
    const error = connectionError as ParserError;
    if (error.code === 'ECONNRESET' || socket.destroyed || refused.has(socket)) return;
    refused.add(socket);
    afterPendingResponses(socket, () => answer.call(this, error, socket));
  };

  function answer(this: FastifyInstance, error: ParserError, socket: Socket) {
    if (socket.destroyed) return;
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
    // The parser's code and reason only: the error's rawPacket holds the request's bytes, Authorization header included.
    this.log.debug({ code: error.code, reason: (error as { reason?: string }).reason, status: refusal.status }, 'client error');
    const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    if (socket.writable) socket.end(`HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n${head}\r\n${body}`);
    else socket.destroy(error);
  }
}
