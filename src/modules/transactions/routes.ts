import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { validDateTime } from '../../platform/datetime.js';
import { afterCommit } from '../../platform/db/tx.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import type { ModuleDeps } from '../../platform/module.js';
import type { IncomingPaymentApprovals } from '../webhooks/index.js';
import type { Payments } from './payments.js';
import { listPlatformTransactions } from './reads.js';
import {
  ApproveTransactionRequest,
  CancelTransactionRequest,
  ConfirmReceiptDeliveryRequest,
  IncomingTransaction,
  RejectTransactionRequest,
  Transaction,
  TransactionList,
  TransactionListQuery,
  TransactionParams,
} from './schemas.js';
import { toTransaction } from './views.js';

export type TransactionRouteDeps = ModuleDeps & { payments: Payments; approvals: IncomingPaymentApprovals };

export const transactionRoutes: FastifyPluginAsyncTypebox<TransactionRouteDeps> = async (app, deps) => {
  const tags = ['Transactions'];
  const { payments } = deps;

  app.get('/transactions', {
    schema: {
      operationId: 'listTransactions',
      tags,
      summary: 'List transactions',
      description:
        'The platform’s transactions, newest first (`sortOrder=asc`: oldest first), filtered by customer, account (as sender, receiver or either), status, type, reconciliation reference and creation time.',
      querystring: TransactionListQuery,
      response: { 200: TransactionList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listPlatformTransactions(deps.db, request.principal.platformId, request.query),
  });

  app.get('/transactions/:transactionId', {
    schema: {
      operationId: 'getTransactionById',
      tags,
      summary: 'Get a transaction',
      params: TransactionParams,
      response: { 200: Transaction, ...errorResponses(401, 404, 500) },
    },
    handler: async (request) => toTransaction(await payments.load(deps.db, request.principal.platformId, request.params.transactionId)),
  });

  app.post('/transactions/:transactionId/cancel', {
    schema: {
      operationId: 'cancelTransaction',
      tags,
      summary: 'Cancel a payment that has not been handed to its rail',
      description:
        'While an outgoing payment is PENDING (held, or waiting for the platform’s funds) it can be cancelled: it ends FAILED, the hold is released and money paid in is returned (`refund.reason` USER_CANCELLATION). ' +
        'Once it is PROCESSING the money has left: 409 TRANSACTION_NOT_CANCELLABLE.',
      params: TransactionParams,
      body: CancelTransactionRequest,
      idempotencyKey: true,
      response: { 200: Transaction, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) =>
      sendWrite(
        deps,
        request,
        reply,
        async (trx) => {
          const { platformId } = request.principal;
          const cancelled = await payments.cancel(trx, platformId, request.params.transactionId);
          // The reason is the platform's own (upstream: for its debugging): nothing stores it, so
          // the log keeps it, once the cancel has committed.
          const { reason } = request.body;
          if (reason !== undefined) afterCommit(trx, () => request.log.info({ platformId, transactionId: cancelled.id, reason }, 'payment cancelled'));
          return { statusCode: 200, body: cancelled };
        },
        { idempotent: true },
      ),
  });

  app.post('/transactions/:transactionId/confirm', {
    schema: {
      operationId: 'confirmReceiptDelivery',
      tags,
      summary: 'Confirm the receipt was delivered to the customer',
      description:
        'Records `receiptDeliveryConfirmedAt` (default now; 400 before the transaction was created or more than 5 minutes ahead of now). A repeat records its own time in place of the earlier one.',
      params: TransactionParams,
      body: ConfirmReceiptDeliveryRequest,
      response: { 200: Transaction, ...errorResponses(400, 401, 403, 404, 500) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await payments.confirmReceipt(
          trx,
          request.principal.platformId,
          request.params.transactionId,
          request.body.receiptDeliveryConfirmedAt ? validDateTime(request.body.receiptDeliveryConfirmedAt) : undefined,
        ),
      })),
  });

  // The platform's answer to an incoming payment's approval question (webhooks' approval round
  // trip, after a 202): the question is decided in this transaction and its consumer's hook
  // updates the incoming transaction, which is answered as it now stands.
  for (const action of ['approve', 'reject'] as const) {
    app.post(`/transactions/:transactionId/${action}`, {
      schema: {
        operationId: action === 'approve' ? 'approvePendingIncomingPayment' : 'rejectPendingIncomingPayment',
        tags,
        summary: action === 'approve' ? 'Approve a pending incoming payment' : 'Reject a pending incoming payment',
        description:
          'Decides an `INCOMING_PAYMENT.PENDING` question the platform answered 202 to, within its window (5 s). ' +
          'Nothing open about this transaction, or the window has closed: 409 TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL.',
        params: TransactionParams,
        body: action === 'approve' ? ApproveTransactionRequest : RejectTransactionRequest,
        // Upstream answers IncomingTransaction: only an incoming payment has a question to decide.
        response: { 200: IncomingTransaction, ...errorResponses(400, 401, 403, 404, 409, 500) },
      },
      config: { permission: 'TRANSACT' },
      handler: async (request, reply) =>
        sendWrite(deps, request, reply, async (trx) => {
          const { platformId } = request.principal;
          const row = await payments.load(trx, platformId, request.params.transactionId, { forUpdate: true });
          const body = request.body as { receiverCustomerInfo?: Record<string, unknown>; reason?: string };
          await deps.approvals.decidePendingApproval(
            trx,
            platformId,
            toTransaction(row).id,
            action === 'approve'
              ? { status: 'APPROVED', ...(body.receiverCustomerInfo ? { receiverCustomerInfo: body.receiverCustomerInfo } : {}) }
              : { status: 'REJECTED', ...(body.reason ? { reason: body.reason } : {}) },
          );
          return { statusCode: 200, body: toTransaction(await payments.load(trx, platformId, request.params.transactionId)) };
        }),
    });
  }
};
