import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { PlatformClock } from '../../platform/clock.js';
import { withTx } from '../../platform/db/tx.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { OffsetPlatformClock } from '../../platform/platform-clock.js';
import type { Ledger } from '../ledger/index.js';
import {
  answerSignedRetry,
  OPERATIONS,
  SignedRequestChallenge,
  signedRetryHeaders,
  SignedRetryHeaders,
  type WalletAuthRouteDeps,
  WalletExportRequest,
  WalletExportResponse,
  WalletOperationProcessing,
} from '../wallet-auth/index.js';
import { LIGHTNING_RENEW_BEFORE_SECONDS } from './funding-instructions.js';
import {
  CustomerAccountList,
  CustomerAccountsQuery,
  InternalAccount,
  InternalAccountParams,
  InternalAccountUpdate,
  PlatformAccountList,
  PlatformAccountsQuery,
  SandboxFundParams,
  SandboxFundRequest,
} from './schemas.js';
import { fundSandboxAccount, listCustomerInternalAccounts, listPlatformInternalAccounts, updateWalletAccount } from './service.js';

/** The signed operation behind PATCH /internal-accounts/{id}. */
const UPDATE_WALLET_ACCOUNT = 'wallet.privacy';

/**
 * `platformClock`: the app's (offsets cached); without it, one that reads the platform's offset
 * from the database, only when an account with a Lightning invoice is read.
 */
export const internalAccountRoutes: FastifyPluginAsyncTypebox<WalletAuthRouteDeps & { ledger: Ledger; platformClock?: PlatformClock }> = async (app, deps) => {
  const tags = ['Internal Accounts'];
  const { signed, walletAuth } = deps;
  const clocks = { clock: deps.clock, platformClock: deps.platformClock ?? new OffsetPlatformClock(deps.db, deps.clock) };
  signed.register(UPDATE_WALLET_ACCOUNT, {
    execute: async (trx, row) => ({
      statusCode: 200,
      body: await updateWalletAccount(trx, deps.clock, row.account_id, row.context.body as InternalAccountUpdate),
    }),
  });

  app.patch('/internal-accounts/:id', {
    schema: {
      operationId: 'updateInternalAccount',
      tags,
      summary: "Update an embedded wallet's settings",
      description:
        'Sets `privateEnabled`. Needs the end user: the first call answers 202 with a challenge; the retry signed by an active session of the wallet answers 200 with the account, or 200 `{status: PROCESSING}`.',
      headers: SignedRetryHeaders,
      params: InternalAccountParams,
      body: InternalAccountUpdate,
      response: { 200: Type.Union([InternalAccount, WalletOperationProcessing]), 202: SignedRequestChallenge, ...errorResponses(400, 401, 403, 404, 500) },
    },
    handler: async (request, reply) => {
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, UPDATE_WALLET_ACCOUNT, request.params.id, headers);
      const challenge = await withTx(deps.db, async (trx) => {
        const account = await walletAuth.wallets.walletAccount(trx, request.principal.platformId, request.params.id);
        return walletAuth.wallets.issueFor(trx, {
          platformId: request.principal.platformId,
          accountUuid: account.id,
          operation: UPDATE_WALLET_ACCOUNT,
          targetId: request.params.id,
          body: request.body,
          type: 'ACTIVITY_TYPE_UPDATE_WALLET_SETTINGS',
          parameters: { walletId: request.params.id, ...request.body },
        });
      });
      return reply.code(202).send(challenge);
    },
  });

  app.post('/internal-accounts/:id/export', {
    schema: {
      operationId: 'exportEmbeddedWallet',
      tags,
      summary: 'Export an embedded wallet',
      description:
        "The first call answers 202; the retry signed by an active session of the wallet answers 200 with the wallet mnemonic sealed to `clientPublicKey`, or 200 `{status: PROCESSING}`. The sealed export is never stored: only re-sending that identical signed request returns it, until the challenge expires.",
      headers: SignedRetryHeaders,
      params: InternalAccountParams,
      body: WalletExportRequest,
      response: { 200: Type.Union([WalletExportResponse, WalletOperationProcessing]), 202: SignedRequestChallenge, ...errorResponses(400, 401, 403, 404, 500) },
    },
    handler: async (request, reply) => {
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, OPERATIONS.exportWallet, request.params.id, headers);
      return reply.code(202).send(await walletAuth.wallets.startExport(request.principal.platformId, request.params.id, request.body));
    },
  });

  app.get('/customers/internal-accounts', {
    schema: {
      operationId: 'listCustomerInternalAccounts',
      tags,
      summary: "List customers' internal accounts",
      description:
        'Accounts are opened when a customer passes KYC/KYB: one per supported currency (INTERNAL_FIAT, or INTERNAL_CRYPTO for USDC, USDT and BTC), plus an EMBEDDED_WALLET when configured. Newest first. ' +
        `A Lightning funding invoice is renewed when it has less than ${LIGHTNING_RENEW_BEFORE_SECONDS / 86_400} days left (same funding reference; INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED).`,
      querystring: CustomerAccountsQuery,
      response: { 200: CustomerAccountList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listCustomerInternalAccounts(deps.db, clocks.clock, clocks.platformClock, request.principal.platformId, request.query),
  });

  app.get('/platform/internal-accounts', {
    schema: {
      operationId: 'listPlatformInternalAccounts',
      tags,
      summary: "List the platform's own internal accounts",
      description: 'One account per currency the platform supports: INTERNAL_FIAT, or INTERNAL_CRYPTO for USDC, USDT and BTC.',
      querystring: PlatformAccountsQuery,
      response: { 200: PlatformAccountList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) =>
      withTx(deps.db, (trx) => listPlatformInternalAccounts(trx, deps.clock, clocks.platformClock, request.principal.platformId, request.query)),
  });

  app.post('/sandbox/internal-accounts/:accountId/fund', {
    schema: {
      operationId: 'fundSandboxInternalAccount',
      tags: ['Sandbox'],
      summary: 'Add money to an internal account (sandbox)',
      description:
        "Credits the account from the sandbox platform's simulated outside world, as one ledger transaction, and answers the account with its " +
        'new balances; an INTERNAL_ACCOUNT.BALANCE_UPDATED event follows. Sandbox platforms only (403 otherwise). Send `Idempotency-Key` to make retries safe.',
      params: SandboxFundParams,
      body: SandboxFundRequest,
      idempotencyKey: true,
      response: { 200: InternalAccount, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'TRANSACT', sandboxOnly: { what: 'Sandbox funding' } },
    handler: async (request, reply) =>
      sendWrite(
        deps,
        request,
        reply,
        async (trx) => ({
          statusCode: 200,
          body: await fundSandboxAccount(trx, deps.ledger, clocks, request.principal, request.params.accountId, BigInt(request.body.amount), `sandbox-fund:${request.id}`),
        }),
        { idempotent: true },
      ),
  });
};
