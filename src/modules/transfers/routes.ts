import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BASE_PATH } from '../../config.js';
import type { Tx } from '../../platform/db/database.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { prefetch, prefetchNetworkFee } from '../quotes/index.js';
import { Transaction } from '../transactions/index.js';
import { TransferInRequest, TransferOutRequest } from './schemas.js';
import { requiredAmount, transfer, transferOutQuote, type TransferDeps, type TransferRequest } from './transfer.js';

/**
 * When these operations were deprecated (RFC 9745 `Deprecation`, a structured-field date): the
 * date of the API version that replaced them with POST /quotes and `immediatelyExecute`, 2025-10-13.
 */
const DEPRECATED_AT = Date.UTC(2025, 9, 13) / 1000;

export const transferRoutes: FastifyPluginAsyncTypebox<TransferDeps> = async (app, deps) => {
  const tags = ['Cross-border Payments'];
  const successor = `<${deps.config.publicUrl}${BASE_PATH}/quotes>; rel="successor-version"`;
  // On every answer, refusals included: a client learns of the deprecation whatever it sent.
  const announce = async (_request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    reply.header('deprecation', `@${DEPRECATED_AT}`);
    reply.header('link', successor);
    return payload;
  };
  const notice =
    'Deprecated (response headers `Deprecation` and `Link: <…/quotes>; rel="successor-version"`): use POST /quotes with `lockedCurrencySide: SENDING`, ' +
    '`lockedCurrencyAmount` = amount and `immediatelyExecute: true`, which this operation does for you — every refusal is that of POST /quotes. ' +
    'Both accounts must hold the same currency. Send `Idempotency-Key` to make retries safe.';
  // Read before the transaction opens, as POST /quotes does; so is a transfer-out's network fee
  // (a payout onto a crypto network), which a deployment's fee model may ask a gas oracle for.
  const prefetched = async (request: FastifyRequest, transferRequest: TransferRequest) => {
    const [config, read] = await Promise.all([deps.configCache.get(request.principal.platformId), prefetch(deps, request.principal)]);
    const networkFee = transferRequest.direction === 'OUT' ? await prefetchNetworkFee(deps, request.principal, transferOutQuote(transferRequest.body), read.snapshot) : undefined;
    return { ...read, config, ...(networkFee ? { networkFee } : {}) };
  };
  const send = async (request: FastifyRequest, reply: FastifyReply, transferRequest: TransferRequest) => {
    requiredAmount(transferRequest.body);
    const read = await prefetched(request, transferRequest);
    return sendWrite(deps, request, reply, (trx: Tx) => transfer(trx, deps, request.principal, transferRequest, read), { idempotent: true });
  };

  app.post('/transfer-in', {
    schema: {
      operationId: 'createTransferIn',
      tags,
      summary: 'Pull from an external account into an internal account (deprecated)',
      description: `Pulls \`amount\` from a first-party external bank account (ACH debit, SEPA Direct Debit) into an internal account, for the account’s owner; answers the transaction. ${notice}`,
      deprecated: true,
      idempotencyKey: true,
      body: TransferInRequest,
      response: { 201: Transaction, ...errorResponses(400, 401, 403, 404, 409, 410, 429, 500, 501, 503) },
    },
    config: { permission: 'TRANSACT' },
    onSend: announce,
    handler: async (request, reply) => send(request, reply, { direction: 'IN', body: request.body }),
  });

  app.post('/transfer-out', {
    schema: {
      operationId: 'createTransferOut',
      tags,
      summary: 'Pay from an internal account to an external account (deprecated)',
      description: `Pays from an internal account to an external account on \`destination.paymentRail\` (default: the account’s first); the amount is held at once and settled by the rail; answers the transaction. ${notice}`,
      deprecated: true,
      idempotencyKey: true,
      body: TransferOutRequest,
      response: { 201: Transaction, ...errorResponses(400, 401, 403, 404, 409, 410, 429, 500, 501, 503) },
    },
    config: { permission: 'TRANSACT' },
    onSend: announce,
    handler: async (request, reply) => send(request, reply, { direction: 'OUT', body: request.body }),
  });
};
