import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { AppError, statusOf, type ErrorCode, type FieldError } from '../errors.js';
import { toFieldErrors } from './validation.js';

export interface ErrorEnvelope {
  status: number;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  [extra: string]: unknown;
}

function envelope(code: ErrorCode, message: string, details?: Record<string, unknown>, extra?: Record<string, unknown>): ErrorEnvelope {
  return { status: statusOf(code), code, message, ...(details ? { details } : {}), ...extra };
}

function sendError(reply: FastifyReply, body: ErrorEnvelope, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  return reply.code(body.status).type('application/json; charset=utf-8').send(body);
}

const PART_NAMES: Record<string, string> = { querystring: 'query', params: 'path', headers: 'header' };

/** Fastify's own client errors, mapped into our envelope. */
function fromFastify(error: FastifyError): ErrorEnvelope | undefined {
  if (error.validation) {
    const part = error.validationContext ?? 'body';
    const errors: FieldError[] = toFieldErrors(error.validation as Parameters<typeof toFieldErrors>[0]);
    const where = part === 'body' ? 'The request body has invalid fields.' : `The request ${PART_NAMES[part] ?? part} parameters are invalid.`;
    return envelope('INVALID_INPUT', where, { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return envelope('INVALID_INPUT', 'The request body is larger than this endpoint accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return envelope('INVALID_INPUT', 'Unsupported Content-Type; send application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return envelope('INVALID_INPUT', 'Content-Length does not match the body.');
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return envelope('INVALID_INPUT', 'The request body is not valid JSON.');
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500 && error.code?.startsWith('FST_')) {
    return envelope('INVALID_INPUT', error.message);
  }
  return undefined;
}

/**
 * Every error leaves as the spec's envelope `{status, code, message, details?}` with `status`
 * equal to the HTTP status, whoever raised it. Unknown failures become a generic 500 that
 * quotes the request id; the stack goes to the log only.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  // A second router that knows every path with all of its methods: tells 404 from 405.
  const known = FindMyWay({ ignoreTrailingSlash: false });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      try {
        known.on(method as 'GET', route.url, () => {});
      } catch {
        // the same route registered twice (e.g. by a plugin); the first is enough
      }
    }
  });

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) {
      if (error.status >= 500) request.log.error({ err: error }, 'request failed');
      return sendError(reply, envelope(error.code, error.message, error.details, error.extra), error.headers);
    }
    const mapped = fromFastify(error);
    if (mapped) return sendError(reply, mapped);
    request.log.error({ err: error }, 'unhandled error');
    return sendError(
      reply,
      envelope('INTERNAL_ERROR', `An internal error occurred. Quote request id ${request.id} when reporting it.`, { requestId: request.id }),
    );
  });

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => known.find(m as 'GET', path));
    if (allowed.length > 0) {
      return sendError(
        reply,
        envelope('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`, { allowed }),
        { allow: allowed.join(', ') },
      );
    }
    return sendError(reply, envelope('REFERENCE_NOT_FOUND', `No endpoint at ${request.method} ${path}.`));
  });
}
