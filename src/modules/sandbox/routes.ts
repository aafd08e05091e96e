import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import type { IdempotencyScope } from '../../platform/idempotency.js';
import type { ModuleDeps } from '../../platform/module.js';
import type { OffsetPlatformClock } from '../../platform/platform-clock.js';
import { parseId } from '../../platform/ids.js';
import { loadQuote } from '../quotes/index.js';
import { IncomingTransaction, SandboxSendRequest, Transaction, type FundingDeposits, type IncomingPayments, type Payments } from '../transactions/index.js';
import { simulateDeposit } from './deposit.js';
import { ClockAdvanceRequest, SandboxClock, SandboxDepositRequest, SandboxRefundParams, SandboxUmaReceiveRequest } from './schemas.js';
import { simulateUmaReceive } from './uma-receive.js';

export type SandboxRouteDeps = ModuleDeps & { payments: Payments; incomingPayments: IncomingPayments; deposits: FundingDeposits; platformClock: OffsetPlatformClock };


/** Sandbox simulations that sit above the money modules: paying a quote in, and the platform's test clock. */
export const sandboxRoutes: FastifyPluginAsyncTypebox<SandboxRouteDeps> = async (app, deps) => {
  const tags = ['Sandbox'];

  app.post('/sandbox/send', {
    schema: {
      operationId: 'sandboxSend',
      tags,
      summary: 'Pay a REALTIME_FUNDING quote’s instructions (sandbox)',
      description:
        'Simulates the platform paying in the money of a REALTIME_FUNDING quote, whose payment waits from the quote’s creation until its `expiresAt` (the platform’s clock; later, or a quote of another source, is 409). The quote’s total sending amount (the default) funds the payment, which then goes to its rail; ' +
        'any other amount fails it with FUNDING_AMOUNT_MISMATCH and the money is returned (`refund`). Answers the transaction. Sandbox platforms only (403 otherwise).',
      body: SandboxSendRequest,
      idempotencyKey: true,
      response: { 200: Transaction, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'TRANSACT', sandboxOnly: { what: 'Sandbox send' } },
    handler: async (request, reply) => {
      const { quoteId, currencyCode, currencyAmount } = request.body;
      return sendWrite(
        deps,
        request,
        reply,
        async (trx) => {
          const { platformId } = request.principal;
          try {
            return { statusCode: 200, body: await deps.payments.fundFromSandbox(trx, platformId, quoteId, currencyCode, currencyAmount === undefined ? undefined : BigInt(currencyAmount)) };
          } catch (error) {
            if (!(error instanceof AppError && error.code === 'QUOTE_NOT_FOUND')) throw error;
            // No payment waits: a quote that exists is an account-funded one never executed (a REALTIME_FUNDING quote's payment opens at creation); loadQuote answers 404 for one that does not.
            await loadQuote(trx, platformId, parseId('Quote', quoteId)!);
            throw new AppError('CONFLICT', `Quote ${quoteId} is not funded in real time and no payment of it waits for funds: an account-funded quote is paid by executing it.`);
          }
        },
        { idempotent: true },
      );
    },
  });

  app.post('/sandbox/uma/receive', {
    schema: {
      operationId: 'sandboxReceive',
      tags,
      summary: 'Simulate a UMA payment to a customer (sandbox)',
      description:
        'A sender at an outside VASP (`senderUmaAddress`) pays the customer named by `receiverUmaAddress` or `customerId` `receivingCurrencyAmount` of `receivingCurrencyCode`. ' +
        'An INCOMING transaction is opened PENDING and the platform is asked through the approval webhook (INCOMING_PAYMENT.PENDING: 200 approve, 403 reject, 422 more information, ' +
        '202 then `POST /transactions/{id}/approve|reject` within 5 s). Approved, the amount is credited to the customer’s account in that currency (COMPLETED); otherwise the transaction ends ' +
        'REJECTED or FAILED with its reason. Answers the transaction once decided. A customer whose review was REJECTED is refused 403 USER_NOT_READY, as a real pay request is. Sandbox platforms only (403 otherwise).',
      body: SandboxUmaReceiveRequest,
      idempotencyKey: true,
      response: { 200: IncomingTransaction, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'TRANSACT', sandboxOnly: { what: 'Sandbox UMA receive' } },
    handler: async (request, reply) => {
      // The payment and its approval round trip commit transactions of their own: `prepare` claims
      // the key first, so a repeat while this one runs is 409 and one after it replays its answer;
      // the payment is opened under the key too, so a retry after this one failed (its claim given
      // up, or taken over) finds that payment instead of opening and crediting a second one.
      return sendWrite(deps, request, reply, async (_trx, received) => ({ statusCode: 200, body: received }), {
        idempotent: true,
        prepare: (scope: IdempotencyScope | undefined) => simulateUmaReceive(deps.db, deps.incomingPayments, request.principal.platformId, request.body, scope),
      });
    },
  });

  app.post('/sandbox/deposits', {
    schema: {
      operationId: 'sandboxDeposit',
      tags,
      summary: 'Simulate a deposit to an account’s funding instructions (sandbox)',
      description:
        'A bank (or wallet) pays `amount` to the funding instructions whose `reference` (or deposit address) is given. As in production, an INCOMING transaction is opened and the account credited at once ' +
        '(a deposit is informational: no approval round trip), with INCOMING_PAYMENT.PENDING, INCOMING_PAYMENT.COMPLETED and INTERNAL_ACCOUNT.BALANCE_UPDATED. Answers the transaction. ' +
        'The same `depositId` again answers the same transaction and credits nothing more (409 if its reference, amount or currency differ). No instructions with that reference: 404 REFERENCE_NOT_FOUND; ' +
        'another currency than the account’s: 400 INVALID_CURRENCY; account not ACTIVE: 409. Sandbox platforms only (403 otherwise).',
      body: SandboxDepositRequest,
      idempotencyKey: true,
      response: { 200: IncomingTransaction, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'TRANSACT', sandboxOnly: { what: 'Sandbox deposits' } },
    handler: async (request, reply) => {
      return sendWrite(deps, request, reply, async (trx) => ({ statusCode: 200, body: await simulateDeposit(trx, deps.deposits, request.principal.platformId, request.body) }), { idempotent: true });
    },
  });

  app.post('/sandbox/transactions/:transactionId/refund', {
    schema: {
      operationId: 'sandboxRefundIncomingPayment',
      tags,
      summary: 'Return a completed incoming payment to its sender (sandbox)',
      description:
        'Simulates the return of a COMPLETED incoming payment (a compliance return by the operator): INCOMING_PAYMENT.REFUND_PENDING now, then the credit is reversed — the transaction ends REFUNDED ' +
        'with INCOMING_PAYMENT.REFUND_COMPLETED — or, when the customer’s available balance no longer covers it, nothing moves and INCOMING_PAYMENT.REFUND_FAILED is sent. ' +
        'Any other transaction, or one whose refund is under way: 409 CONFLICT. Sandbox platforms only (403 otherwise).',
      params: SandboxRefundParams,
      response: { 200: IncomingTransaction, ...errorResponses(401, 403, 404, 409, 500) },
    },
    config: { permission: 'TRANSACT', sandboxOnly: { what: 'Sandbox refund' } },
    handler: async (request, reply) => {
      return sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await deps.incomingPayments.startRefund(trx, request.principal.platformId, request.params.transactionId),
      }));
    },
  });

  app.get('/sandbox/clock', {
    schema: {
      operationId: 'getSandboxClock',
      tags,
      summary: 'Read the platform’s test clock (sandbox)',
      response: { 200: SandboxClock, ...errorResponses(401, 403, 500) },
    },
    config: { sandboxOnly: { what: 'The test clock' } },
    handler: async (request) => {
      const offsetMs = await deps.platformClock.offsetMs(deps.db, request.principal.platformId);
      return { now: new Date(deps.clock.now().getTime() + offsetMs).toISOString(), offsetSeconds: Math.floor(offsetMs / 1000) };
    },
  });

  app.post('/sandbox/clock/advance', {
    schema: {
      operationId: 'advanceSandboxClock',
      tags,
      summary: 'Move the platform’s time forward (sandbox)',
      description:
        'Moves this platform’s time forward by `seconds`: quotes expire, payments settle, webhook retries and approval windows act as if the time had passed — ' +
        'what became due runs now. Records keep real time in `createdAt`/`updatedAt`, and the windows of embedded-wallet sessions, one-time codes and signed retries, ownership challenges, KYC links and invitations run on real time too. ' +
        'No other platform’s time changes; time never moves back. Sandbox platforms only (403 otherwise).',
      body: ClockAdvanceRequest,
      response: { 200: SandboxClock, ...errorResponses(400, 401, 403, 500) },
    },
    config: { permission: 'TRANSACT', sandboxOnly: { what: 'The test clock' } },
    handler: async (request) => {
      const moved = await withTx(deps.db, (trx) => deps.platformClock.advance(trx, request.principal.platformId, request.body.seconds));
      return { now: moved.now.toISOString(), offsetSeconds: Math.floor(moved.offsetMs / 1000) };
    },
  });
};
