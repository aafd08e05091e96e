import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import type { ModuleDeps } from '../../platform/module.js';
import { EstimateCryptoWithdrawalFeeRequest, EstimateCryptoWithdrawalFeeResponse } from './schemas.js';
import { estimateWithdrawalFee, type EstimateDeps } from './service.js';

export const withdrawalFeeRoutes: FastifyPluginAsyncTypebox<ModuleDeps & EstimateDeps> = async (app, deps) => {
  app.post('/crypto/estimate-withdrawal-fee', {
    schema: {
      operationId: 'estimateCryptoWithdrawalFee',
      tags: ['Cross-Currency Transfers'],
      summary: 'Estimate a crypto withdrawal fee',
      description:
        'The network and application fees of withdrawing `amount` from a crypto internal account to an address, to show before the customer ' +
        'withdraws: what a quote from the account to a wallet on the network, locking `amount` on the SENDING side, charges now (`totalFee` is its ' +
        '`feesIncluded`, `netAmount` what arrives). Sandbox platforms get the documented sandbox fee model (per network: a typical transfer at a typical ' +
        'gas price, valued at fixed sandbox prices); production platforms get the deployment\'s estimator and exchange rates (503 without either). ' +
        'Unknown account: 404 REFERENCE_NOT_FOUND. A network that does not carry the currency, another currency than the account\'s, or an address ' +
        'invalid for the network: 400 INVALID_INPUT naming each. An amount that does not cover the fee: 400 INVALID_AMOUNT. Nothing is reserved. ' +
        'A read: any token may call it (VIEW).',
      body: EstimateCryptoWithdrawalFeeRequest,
      response: { 200: EstimateCryptoWithdrawalFeeResponse, ...errorResponses(400, 401, 404, 500, 503) },
    },
    // A POST only because the estimate takes a body: it changes nothing, so it is a read.
    config: { permission: 'VIEW' },
    handler: async (request) => estimateWithdrawalFee(deps.db, deps, request.principal, request.body, deps.clock.now()),
  });
};
