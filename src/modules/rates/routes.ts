import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import type { PlatformConfigCache } from '../config/index.js';
import { listExchangeRates } from './listing.js';
import { ExchangeRateList, ExchangeRatesQuery } from './schemas.js';
import type { ExchangeRates } from './service.js';

export const rateRoutes: FastifyPluginAsyncTypebox<{ rates: ExchangeRates; configCache: PlatformConfigCache }> = async (app, deps) => {
  app.get('/exchange-rates', {
    schema: {
      operationId: 'listExchangeRates',
      tags: ['Exchange Rates'],
      summary: 'List exchange rates',
      description:
        'What `sendingAmount` (default 10000, fees included) buys now from each currency the platform sends to each currency Corridor pays out, per payment rail: ' +
        'the rate (spread included), the fees (Corridor’s per-rail service fee and the platform’s own fee) and the platform’s minimum and maximum. ' +
        'Rates are cached for 5 minutes: every caller sees the same rate inside one window, and a quote made in it is priced the same.',
      querystring: ExchangeRatesQuery,
      response: { 200: ExchangeRateList, ...errorResponses(400, 401, 500, 503) },
    },
    handler: async (request) => {
      const { platformId, environment } = request.principal;
      const [snapshot, config] = await Promise.all([deps.rates.snapshot(environment), deps.configCache.get(platformId)]);
      return { data: listExchangeRates(snapshot, config, request.query) };
    },
  });
};
