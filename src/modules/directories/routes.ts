import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import type { ModuleDeps } from '../../platform/module.js';
import { DiscoveryListResponse, DiscoveryQuery, UmaProviderListQuery, UmaProviderListResponse, VaspListQuery, VaspListResponse } from './schemas.js';
import { listDiscoveries, listUmaProviders, listVasps } from './service.js';

const SOURCE_NOTE =
  'The directory is a versioned file shipped with Corridor (its sources are named in the file and in docs/directories.md); ' +
  'operators update it without a release with `corridor directories load <file>`.';

export const directoryRoutes: FastifyPluginAsyncTypebox<ModuleDeps> = async (app, deps) => {
  app.get('/vasps', {
    schema: {
      operationId: 'listVasps',
      tags: ['VASPs'],
      summary: 'List VASPs',
      description:
        'Exchanges and other custodial platforms recognised for counterparty declarations, by name. Pass `vaspName` as `vaspName` ' +
        `when declaring a VASP-hosted counterparty. ${SOURCE_NOTE}`,
      querystring: VaspListQuery,
      response: { 200: VaspListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listVasps(deps.db, request.query),
  });

  app.get('/uma-providers', {
    schema: {
      operationId: 'getAvailableUmaProviders',
      tags: ['Available UMA Providers'],
      summary: 'List available UMA providers',
      description: `UMA providers (VASPs whose customers have UMA addresses), by name; \`sortOrder\` defaults to desc as upstream. ${SOURCE_NOTE}`,
      querystring: UmaProviderListQuery,
      response: { 200: UmaProviderListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listUmaProviders(deps.db, request.query),
  });

  app.get('/discoveries', {
    schema: {
      operationId: 'getDiscoveries',
      tags: ['Discoveries'],
      summary: 'List receiving institutions for a corridor',
      description:
        'Banks and payment providers (e-money wallets, mobile money) that receive payouts in a country and currency. Without filters, ' +
        `every institution. \`bankName\` is the value to pass as \`bankName\` when creating an external account. ${SOURCE_NOTE}`,
      querystring: DiscoveryQuery,
      response: { 200: DiscoveryListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listDiscoveries(deps.db, request.query),
  });
};
