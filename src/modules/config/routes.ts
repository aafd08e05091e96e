import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ModuleDeps } from '../../platform/module.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { PlatformConfig, PlatformConfigUpdate } from './schemas.js';
import { updatePlatformConfig, type PlatformConfigCache } from './service.js';

export const configRoutes: FastifyPluginAsyncTypebox<ModuleDeps & { configCache: PlatformConfigCache }> = async (app, deps) => {
  app.get('/config', {
    schema: {
      operationId: 'getPlatformConfig',
      tags: ['Platform Configuration'],
      summary: 'Read the platform configuration',
      response: { 200: PlatformConfig, ...errorResponses(401, 500) },
    },
    handler: async (request) => deps.configCache.get(request.principal.platformId),
  });

  app.patch('/config', {
    schema: {
      operationId: 'updatePlatformConfig',
      tags: ['Platform Configuration'],
      summary: 'Update the platform configuration',
      description:
        'Fields left out stay as they are. `webhookEndpoint` must be https for production platforms (http is allowed in sandbox), ' +
        'and a production endpoint or OIDC `jwksUri` may not be a loopback, private, link-local or metadata address (400; a host name that ' +
        'resolves to one is refused when it is called); setting a new endpoint sends it a TEST webhook. ' +
        'A production platform\'s `umaDomain` is its own: any other platform asking for it gets 409 CONFLICT (sandbox platforms may share the others). ' +
        '`embeddedWalletConfig` and `cardTokenization2faConfig` merge field by field. ' +
        '`feeConfigs` merge by `(feeType, sourceCurrency)`; a fee whose rate and fixed amount are both 0 is removed; a fixed fee may not exceed ' +
        'the source currency\'s `maxAmount`. Fee configs accept USD source currency only (501 NOT_IMPLEMENTED otherwise).',
      body: PlatformConfigUpdate,
      response: { 200: PlatformConfig, ...errorResponses(400, 401, 403, 409, 500, 501) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      await sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await updatePlatformConfig(trx, deps.clock, request.principal, request.body, { guardSandboxWebhooks: deps.config.webhooks.guardSandbox }),
      }));
      // Read-your-writes on this process; the NOTIFY reaches the others.
      deps.configCache.evict(request.principal.platformId);
      return reply;
    },
  });
};
