import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../platform/errors.js';
import { errorResponses, PathParam } from '../../platform/http/schemas.js';
import type { PlatformClock } from '../../platform/clock.js';
import type { ModuleDeps } from '../../platform/module.js';
import type { ExchangeRates } from '../rates/index.js';
import type { IncomingPayments } from '../transactions/index.js';
import type { Resolver } from '../../platform/address-guard.js';
import { expireUnpaidInvoice, INVOICE_EXPIRY_JOB, receivePostTransactionCallback, settleInvoice } from './lightning.js';
import type { LightningNode } from './invoices.js';
import type { VaspKeySource } from './keys.js';
import { lookupReceiver } from './lookup.js';
import { answerLnurlp, answerPayRequest, failUnansweredPayRequest, UNANSWERED_PAY_REQUEST_JOB } from './receiving.js';
import { LookupParams, LookupQuery, ReceiverUmaLookupResponse } from './schemas.js';
import type { VaspTransport } from './transport.js';

export interface UmaRouteDeps extends ModuleDeps {
  keys: VaspKeySource;
  node: LightningNode;
  resolver: Resolver;
  vasps: VaspTransport;
  incomingPayments: IncomingPayments;
  rates: ExchangeRates;
  platformClock: PlatformClock;
}

const PayInvoiceBody = Type.Object({ invoice: Type.String({ minLength: 1, maxLength: 4096 }) });
const PaymentParams = Type.Object({ paymentId: PathParam(Type.String({ format: 'uuid' }), 'REFERENCE_NOT_FOUND', 'payment') });

const UserParams = Type.Object({ user: PathParam(Type.String({ minLength: 1, maxLength: 70 }), 'UMA_NOT_FOUND', 'receiver') });

/**
 * The VASP's own endpoints, at the root of the host its UMA domain points to (not under the API
 * base path, and without API credentials: other VASPs call them, and their messages carry their
 * own signatures). Hidden from the OpenAPI document, like /readyz: they follow UMA, not this API.
 */
export function registerUmaWellKnownRoutes(app: FastifyInstance, deps: UmaRouteDeps): void {
  const hidden = { hide: true } as const;
  deps.jobs.register(INVOICE_EXPIRY_JOB, (job) => expireUnpaidInvoice(deps, job));
  deps.jobs.register(UNANSWERED_PAY_REQUEST_JOB, (job) => failUnansweredPayRequest(deps, job));

  app.get('/.well-known/lnurlpubkey', { schema: hidden, config: { auth: false } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=3600');
    return (await deps.keys()).published;
  });

  app.get('/.well-known/lnurlp/:user', { schema: { ...hidden, params: UserParams }, config: { auth: false } }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    let url: URL;
    try {
      url = new URL(request.url, `http://${request.host}`);
    } catch {
      throw new AppError('UMA_NOT_FOUND', 'No receiver at this host.');
    }
    return answerLnurlp(deps, url);
  });

  app.post('/uma/payreq/:user', { schema: { ...hidden, params: UserParams }, config: { auth: false } }, async (request, reply) => {
    const { user } = request.params as { user: string };
    reply.header('cache-control', 'no-store');
    return answerPayRequest(deps, request.host, user, request.body);
  });

  // The simulated Lightning node (invoices.ts, lightning.ts): another Corridor pays an invoice here and gets its preimage.
  app.post('/uma/lightning/pay', { schema: { ...hidden, body: PayInvoiceBody }, config: { auth: false } }, async (request) =>
    settleInvoice(deps, (request.body as { invoice: string }).invoice),
  );

  app.post('/uma/utxo-callback/:paymentId', { schema: { ...hidden, params: PaymentParams }, config: { auth: false } }, async (request) =>
    receivePostTransactionCallback(deps, (request.params as { paymentId: string }).paymentId, request.body),
  );
}

export const umaRoutes: FastifyPluginAsyncTypebox<UmaRouteDeps> = async (app, deps) => {
  app.get('/receiver/uma/:receiverUmaAddress', {
    // It asks the receiver's VASP and stores the lookup: a HEAD would too, so it is GET only.
    exposeHeadRoute: false,
    schema: {
      operationId: 'lookupUma',
      tags: ['Cross-Currency Transfers'],
      summary: 'Look up an UMA address for payment',
      description:
        "Asks the receiver's VASP over UMA (a signed lnurlp request; its signed answer, nonce, timestamp and certificate chain are checked) " +
        'which currencies it takes, between which amounts, and what it needs to know about the payer. The `lookupId` names this answer in ' +
        'the quote that follows and expires (15 minutes by default). Malformed address 400 INVALID_UMA_ADDRESS; no such receiver 404 UMA_NOT_FOUND; ' +
        "the counterparty's certificates 400 CERT_CHAIN_INVALID / CERT_CHAIN_EXPIRED / INVALID_PUBKEY_FORMAT; its signature 401 INVALID_SIGNATURE; " +
        'a replayed or stale answer 400 INVALID_NONCE / INVALID_TIMESTAMP; no usable answer 400 LOOKUP_REQUEST_FAILED or PARSE_LNURLP_RESPONSE_ERROR.',
      params: LookupParams,
      querystring: LookupQuery,
      response: { 200: ReceiverUmaLookupResponse, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => lookupReceiver(deps, request.principal, request.params.receiverUmaAddress, request.query),
  });
};
