import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { NOT_FOUND_KEYWORD, type NotFoundAnnotation } from './schemas.js';

function clip(value: string, max = 100): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}

/** The 404 for a path parameter that failed its IdParam schema. */
export function notFoundFromParams(error: FastifyError, request: FastifyRequest): AppError {
  const failures = (error.validation ?? []) as ErrorObject[];
  const failed = failures.find((e) => (e.parentSchema as Record<string, unknown> | undefined)?.[NOT_FOUND_KEYWORD]);
  const params = (request.params ?? {}) as Record<string, unknown>;
  const path = request.url.split('?')[0]!;
  if (!failed) return new AppError('REFERENCE_NOT_FOUND', `The endpoint ${request.method} ${path} does not exist.`);
  const { code, type, noun } = (failed.parentSchema as Record<string, NotFoundAnnotation>)[NOT_FOUND_KEYWORD]!;
  const value = String(params[failed.instancePath.slice(1)] ?? '');
  const message = type && value.startsWith(`${type}:`)
    ? `${noun[0]!.toUpperCase()}${noun.slice(1)} ${clip(value)} was not found.`
    : `The endpoint ${request.method} ${clip(path, 300)} does not exist, and no ${noun} has the id ${clip(value)}.`;
  return new AppError(code, message);
}

/**
 * Makes path ids uniform for every route, present and future: a route whose path has a
 * parameter not declared with `IdParam` (or `PathParam`) fails at start-up; a route that collects its
 * validation errors (`attachValidation`) still answers a bad path id with the 404 before its
 * handler runs.
 */
export function registerPathIds(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const names = [...route.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
    const declared = (route.schema?.params as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties ?? {};
    const missing = names.filter((name) => !declared[name]?.[NOT_FOUND_KEYWORD]);
    if (missing.length > 0) {
      throw new Error(`${String(route.method)} ${route.url}: declare path parameter ${missing.join(', ')} with IdParam() or PathParam() in schema.params`);
    }
  });
  app.addHook('preHandler', (request, _reply, done) => {
    const attached = request.validationError as FastifyError | undefined;
    done(attached?.validationContext === 'params' ? attached : undefined);
  });
}
