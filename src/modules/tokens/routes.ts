import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ModuleDeps } from '../../platform/module.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { ApiToken, ApiTokenCreateRequest, TokenListQuery, TokenListResponse, TokenParams } from './schemas.js';
import { createToken, deleteToken, getToken, listTokens, type TokenAuthenticator } from './service.js';

export const tokenRoutes: FastifyPluginAsyncTypebox<ModuleDeps & { authenticator: TokenAuthenticator }> = async (app, deps) => {
  const tags = ['API Tokens'];

  app.post('/tokens', {
    schema: {
      operationId: 'createToken',
      tags,
      summary: 'Create an API token',
      description:
        'The response carries `clientSecret`, the only time it is ever shown. Needs the MANAGE permission, and the new token may hold only ' +
        'permissions the calling token holds (every token holds VIEW): 403 FORBIDDEN otherwise.',
      body: ApiTokenCreateRequest,
      response: { 201: ApiToken, ...errorResponses(400, 401, 403, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 201,
        body: (await createToken(trx, deps.clock, request.principal.platformId, request.body, request.principal)).token,
      })),
  });

  app.get('/tokens', {
    schema: {
      operationId: 'listTokens',
      tags,
      summary: 'List API tokens',
      description: 'Newest first. Deleted tokens are not listed. Secrets are never returned.',
      querystring: TokenListQuery,
      response: { 200: TokenListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listTokens(deps.db, request.principal.platformId, request.query),
  });

  app.get('/tokens/:tokenId', {
    schema: {
      operationId: 'getToken',
      tags,
      summary: 'Read an API token',
      params: TokenParams,
      response: { 200: ApiToken, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => getToken(deps.db, request.principal.platformId, request.params.tokenId),
  });

  app.delete('/tokens/:tokenId', {
    schema: {
      operationId: 'deleteToken',
      tags,
      summary: 'Delete an API token',
      description:
        'The token stops authenticating on the very next request, in every Corridor process. A token may delete itself; ' +
        'the platform’s last token holding MANAGE cannot be deleted (400 INVALID_INPUT, `details.reason` LAST_MANAGE_TOKEN).',
      params: TokenParams,
      response: { 204: { type: 'null', description: 'Deleted.' }, ...errorResponses(400, 401, 403, 404, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      let deletedUuid = '';
      await sendWrite(deps, request, reply, async (trx) => {
        deletedUuid = await deleteToken(trx, deps.clock, request.principal.platformId, request.params.tokenId, request.principal);
        return { statusCode: 204, body: undefined };
      });
      deps.authenticator.evict(deletedUuid);
      return reply;
    },
  });
};
