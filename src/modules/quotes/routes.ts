import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { platformEnvironment } from '../platforms/index.js';
import { sendOutcome, walletSignature } from '../wallet-auth/index.js';
import { createQuote } from './create.js';
import { prefetchNetworkFee } from './pricing.js';
import { checkQuoteRequest } from './resolve.js';
import { prefetchUmaQuote, type PricedUmaQuote } from './uma-quote.js';
import { executeLocked, executeQuote, loadQuote, prefetch, QUOTE_EXECUTE_OPERATION, readQuote, type QuoteDeps } from './execute.js';
import { ExecuteHeaders, ExecuteQuoteRequest, Quote, QuoteParams, QuoteRequest } from './schemas.js';

export const quoteRoutes: FastifyPluginAsyncTypebox<QuoteDeps> = async (app, deps) => {
  const tags = ['Cross-border Payments'];
  deps.signed.register(QUOTE_EXECUTE_OPERATION, {
    // The wallet's stamp was verified and the challenge claimed; the quote is executed once, in the settling transaction.
    execute: async (trx, request) => {
      const quoteUuid = parseId('Quote', request.target_id)!;
      const row = await loadQuote(trx, request.platform_id, quoteUuid, { forUpdate: true });
      // A settling job may run this without a request: the time is read through its transaction,
      // the environment is the platform's own (never a default that could be the other one's), and
      // the rates are the quote's stored window's (executeLocked), never the provider's.
      const [now, environment] = await Promise.all([deps.platformClock.now(request.platform_id, trx), platformEnvironment(trx, request.platform_id)]);
      return executeLocked(trx, deps, row, { now, environment }, { walletSigned: true });
    },
    // The challenge outlives the quote (issued after it was priced, for 5 minutes; a quote lives at
    // most 5): past the challenge's window an expired quote is still executed, so that its
    // transaction is recorded EXPIRED and the answer is the 409 QUOTE_EXPIRED of the unsigned path.
    targetExpired: async (db, request) => {
      const row = await loadQuote(db, request.platform_id, parseId('Quote', request.target_id)!);
      return row.expires_at <= (await deps.platformClock.now(request.platform_id, db));
    },
    // A refusal (balance, daily volume, the sender's review, the destination) rolled everything
    // back and leaves the quote PENDING: like an unsigned quote, it can run again once that is
    // fixed, with the same or a fresh stamp. The expiry is an outcome, not a refusal: it is final.
    retryableRefusals: true,
  });

  app.post('/quotes', {
    schema: {
      operationId: 'createQuote',
      tags,
      summary: 'Create a quote',
      description:
        'Prices a transfer from an account (internal, or an external account money can be pulled from) or from just-in-time funding (REALTIME_FUNDING: the quote carries paymentInstructions, and its payment opens now and waits for that money until expiresAt; it is never executed) to an account: ' +
        'the rate, every fee and both amounts are fixed now and never recomputed. Lock the SENDING side (what the sender pays, fees included) or the RECEIVING side (what arrives). ' +
        'Same-currency transfers work at rate 1. To a UMA address: `destination.destinationType: UMA_ADDRESS` with the `lookupId` of GET /receiver/uma/{receiverUmaAddress}; the receiver’s VASP is asked over UMA and its conversion priced (docs/uma.md). `immediatelyExecute: true` also executes it (not for EMBEDDED_WALLET sources; no difference for REALTIME_FUNDING). Send `Idempotency-Key` to make retries safe.',
      idempotencyKey: true,
      body: QuoteRequest,
      response: { 201: Quote, ...errorResponses(400, 401, 403, 404, 409, 410, 429, 500, 501, 503) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) => {
      // What the request alone refuses is 400 before anything is read, the rates included: whatever the deployment can price.
      checkQuoteRequest(request.body);
      const [config, prefetched] = await Promise.all([deps.configCache.get(request.principal.platformId), prefetch(deps, request.principal)]);
      // With an Idempotency-Key the quote is created inside the key's transaction: a payout onto a crypto network has its fee
      // asked of the withdrawal fee model before it opens (without one, createQuote asks before opening its own).
      const networkFee = request.headers['idempotency-key'] === undefined ? undefined : await prefetchNetworkFee(deps, request.principal, request.body, prefetched.snapshot);
      // Without an Idempotency-Key a quote that is only stored is one INSERT: createQuote opens a transaction only when it writes more.
      return sendWrite<PricedUmaQuote | undefined, 'when-needed'>(deps, request, reply, (db, uma) => createQuote(db, deps, request.principal, request.body, { ...prefetched, config, ...(uma ? { uma } : {}), ...(networkFee ? { networkFee } : {}) }), {
        idempotent: true,
        transaction: 'when-needed',
        // To a UMA address the pay request reaches the receiver's VASP: a retry the key answers must not send it again.
        // Only then: `prepare` commits the key's claim first, so a concurrent repeat is 409 instead of waiting for the
        // first request's transaction and replaying its answer, as every write that only touches the database does.
        ...(request.body.destination.destinationType === 'UMA_ADDRESS' ? { prepare: () => prefetchUmaQuote(deps, request.principal, request.body, prefetched.snapshot) } : {}),
      });
    },
  });

  app.get('/quotes/:quoteId', {
    schema: {
      operationId: 'getQuote',
      tags,
      summary: 'Get a quote',
      description: 'The quote as created, with its status: PENDING until executed or expired (REALTIME_FUNDING: until its money went to the rail), then its transaction’s (PROCESSING, COMPLETED, FAILED, EXPIRED).',
      params: QuoteParams,
      response: { 200: Quote, ...errorResponses(401, 404, 500) },
    },
    handler: async (request) => readQuote(deps, request.principal, parseId('Quote', request.params.quoteId)!),
  });

  app.post('/quotes/:quoteId/execute', {
    schema: {
      operationId: 'executeQuote',
      tags,
      summary: 'Execute a quote',
      description:
        'Starts the transfer at the quote’s fixed price, exactly once: a second execution is 409, an expired quote is 409 (`details.reason: QUOTE_EXPIRED`) and its transaction is recorded EXPIRED. ' +
        'Account sources only: a REALTIME_FUNDING quote is paid through its paymentInstructions, not executed (400, `details.reason: REALTIME_FUNDING_NOT_EXECUTABLE`). ' +
        'From an internal account the total is held at once (available balance drops). From an EMBEDDED_WALLET the request needs `Service-Wallet-Signature` (or `Grid-Wallet-Signature`): ' +
        'the stamp of an active session of the wallet over the quote’s `paymentInstructions[].accountOrWalletInfo.payloadToSign`. Once it executed (or was recorded EXPIRED) the challenge is used: re-sending the identical signed request answers the same outcome, another stamp is 401 (`details.reason: REQUEST_ID_USED`). ' +
        'A refusal that changed nothing (too little balance, the daily volume, the sender’s review, the destination) does not use it: once fixed, the same or a fresh stamp over the same payloadToSign executes the quote. ' +
        'Past the quote’s expiresAt a signed execution answers as an unsigned one (409 QUOTE_EXPIRED, transaction EXPIRED), however late. ' +
        'Send `Idempotency-Key` to make unsigned executions safe to retry; a signed one is retried by re-sending the identical signed request, and the key is not consulted.',
      idempotencyKey: true,
      headers: ExecuteHeaders,
      params: QuoteParams,
      body: ExecuteQuoteRequest,
      response: { 200: Quote, ...errorResponses(400, 401, 403, 404, 409, 410, 429, 500, 501, 503) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) => {
      const quoteUuid = parseId('Quote', request.params.quoteId)!;
      const stamp = walletSignature(request);
      if (stamp !== undefined) {
        const row = await loadQuote(deps.db, request.principal.platformId, quoteUuid);
        if (!row.signed_request_id) {
          throw new AppError('INVALID_INPUT', 'This quote’s source is not an embedded wallet: execute it without Service-Wallet-Signature.');
        }
        const outcome = await deps.signed.retry({
          platformId: request.principal.platformId,
          environment: request.principal.environment,
          operation: QUOTE_EXECUTE_OPERATION,
          targetId: formatId('Quote', quoteUuid),
          // The challenge was issued for an empty body: anything else is a body the stamp did not authorise.
          body: request.body ?? {},
          stamp,
          requestId: formatId('Request', row.signed_request_id),
        });
        return sendOutcome(reply, outcome);
      }
      // The quote's own rates are read in the transaction (executeQuote): no provider is asked, current window or not.
      const context = { now: await deps.platformClock.now(request.principal.platformId), environment: request.principal.environment };
      return sendWrite(deps, request, reply, (trx) => executeQuote(trx, deps, request.principal, quoteUuid, context), { idempotent: true });
    },
  });
};
