import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ModuleDeps } from '../../app.js';
import { withTx } from '../../platform/db/tx.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { CustomerAccountList, CustomerAccountsQuery, PlatformAccountList, PlatformAccountsQuery } from './schemas.js';
import { listCustomerInternalAccounts, listPlatformInternalAccounts } from './service.js';

export const internalAccountRoutes: FastifyPluginAsyncTypebox<ModuleDeps> = async (app, deps) => {
  const tags = ['Internal Accounts'];

  app.get('/customers/internal-accounts', {
    schema: {
      operationId: 'listCustomerInternalAccounts',
      tags,
      summary: "List customers' internal accounts",
      description: 'Accounts are opened when a customer passes KYC/KYB. Newest first.',
      querystring: CustomerAccountsQuery,
      response: { 200: CustomerAccountList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listCustomerInternalAccounts(deps.db, request.principal.platformId, request.query),
  });

  app.get('/platform/internal-accounts', {
    schema: {
      operationId: 'listPlatformInternalAccounts',
      tags,
      summary: "List the platform's own internal accounts",
      description: 'One INTERNAL_FIAT account per currency the platform supports.',
      querystring: PlatformAccountsQuery,
      response: { 200: PlatformAccountList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) =>
      withTx(deps.db, (trx) => listPlatformInternalAccounts(trx, deps.clock, request.principal.platformId, request.query)),
  });
};
