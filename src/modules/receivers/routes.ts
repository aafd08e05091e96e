import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import type { ModuleDeps } from '../../platform/module.js';
import type { ExchangeRates } from '../rates/index.js';
import { ReceiverExternalAccountLookupResponse, ReceiverExternalAccountParams, ReceiverLookupQuery } from './schemas.js';
import { lookupExternalAccount } from './service.js';

export const receiverRoutes: FastifyPluginAsyncTypebox<ModuleDeps & { rates: ExchangeRates }> = async (app, deps) => {
  app.get('/receiver/external-account/:accountId', {
    // It stores the lookup its answer names: a HEAD (monitors and proxies send them freely) would too, so it is GET only.
    exposeHeadRoute: false,
    schema: {
      operationId: 'lookupExternalAccount',
      tags: ['Cross-Currency Transfers'],
      summary: 'Look up an external account for payment',
      description:
        'What the sender (`customerId` or `senderUmaAddress`, one required) can pay the external account: its currency, the estimated rate from ' +
        'the sender\'s currency (the rate a quote made now would use, not locked), and the least and most it can receive (the platform\'s ' +
        'limits for the sending currency, converted). The answer carries a `lookupId`. Unknown account: 404 REFERENCE_NOT_FOUND; unknown ' +
        'sender: 404 USER_NOT_FOUND; an account of a deleted customer: 410 CUSTOMER_DELETED (a quote to it would be refused); malformed `senderUmaAddress`: 400 INVALID_UMA_ADDRESS; a currency Corridor has no rate for: 400 ' +
        'INVALID_CURRENCY.',
      params: ReceiverExternalAccountParams,
      querystring: ReceiverLookupQuery,
      response: { 200: ReceiverExternalAccountLookupResponse, ...errorResponses(400, 401, 404, 410, 500, 503) },
    },
    handler: async (request) =>
      lookupExternalAccount(deps.db, deps.rates, request.principal, request.params.accountId, request.query, deps.clock.now()),
  });
};
