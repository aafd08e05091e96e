import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../platform/errors.js';
import { PathParam } from '../../platform/http/schemas.js';
import { UNBUILT_OPERATIONS, UNBUILT_SDK_OPERATIONS, type UnbuiltOperation } from './operations.js';

/**
 * 501 NOT_IMPLEMENTED naming the operation and its group. Not logged as a failure: the request
 * line (route, status) records the call, and nothing failed.
 */
export function notBuilt({ method, path, operationId, group }: UnbuiltOperation): AppError {
  return new AppError('NOT_IMPLEMENTED', `${operationId} (${method} ${path}) is one of the upstream's ${group} operations, which Corridor does not implement yet.`, {
    details: { operation: operationId, group },
    log: 'none',
  });
}

/**
 * One route per unbuilt operation, so that an upstream SDK pointed at Corridor hears "not
 * implemented" rather than a 404 it reads as a wrong path or a missing resource. Hidden from the
 * OpenAPI document, which describes what Corridor serves. Behind authentication like every API
 * route; any token may hear the answer (VIEW), since nothing is read or changed.
 */
export const unbuiltRoutes: FastifyPluginAsync = async (app) => {
  for (const operation of [...UNBUILT_OPERATIONS, ...UNBUILT_SDK_OPERATIONS]) {
    const names = [...operation.path.matchAll(/\{([A-Za-z_]+)\}/g)].map((match) => match[1]!);
    // Any non-empty segment: the answer is the same whatever the id.
    const params = Type.Object(Object.fromEntries(names.map((name) => [name, PathParam(Type.String({ minLength: 1 }), 'REFERENCE_NOT_FOUND', name)])));
    app.route({
      method: operation.method,
      url: operation.path.replace(/\{([A-Za-z_]+)\}/g, ':$1'),
      schema: { hide: true, ...(names.length > 0 ? { params } : {}) },
      config: { permission: 'VIEW' },
      handler: async () => {
        throw notBuilt(operation);
      },
    });
  }
};
