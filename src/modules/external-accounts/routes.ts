import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { BASE_PATH } from '../../config.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { errorResponses, PathParam } from '../../platform/http/schemas.js';
import { refuseCrossSite } from '../../platform/http/hosted-page.js';
import { attachedFieldErrors, validatorCompiler } from '../../platform/http/validation.js';
import { sendWrite } from '../../platform/http/write.js';
import type { ModuleDeps } from '../../platform/module.js';
import { BeneficiaryVerifier, type BeneficiaryVerification, type InstitutionDirectory } from './beneficiary.js';
import { livenessHeaders, livenessPage, livenessPageStatus, newNonce, unknownLinkPage } from './liveness-page.js';
import { completeLiveness, describeLiveness, LIVENESS_PATH, startChallenge, verifySignature, type Attempt } from './ownership.js';
import type { Owner } from './repo.js';
import {
  CustomerCreateBody,
  CustomerCreateEnvelope,
  CustomerListQuery,
  ExternalAccountList,
  ExternalAccountParams,
  ExternalAccountRef,
  OwnershipChallenge,
  OwnershipChallengeRequest,
  OwnershipVerifyRequest,
  PlatformCreateBody,
  PlatformCreateEnvelope,
  PlatformListQuery,
  type ExternalAccountCreate,
} from './schemas.js';
import {
  beneficiaryQueryOf,
  createExternalAccount,
  deleteExternalAccount,
  getExternalAccount,
  listCustomerExternalAccounts,
  listPlatformExternalAccounts,
} from './service.js';
import { checkAccount, createRequestValidator } from './validation.js';

export interface ExternalAccountRouteDeps extends ModuleDeps {
  /** Default: sandbox → the simulated institution; production → CORRIDOR_BENEFICIARY_URL, else no name check. */
  institutions?: { sandbox?: InstitutionDirectory; production?: InstitutionDirectory };
}

const ATTEMPT_MESSAGES: Record<Exclude<Attempt, { outcome: 'VERIFIED' }>['reason'], string> = {
  CHALLENGE_EXPIRED: 'The challenge had expired. The account is now UNVERIFIED; start a new challenge.',
  SIGNATURE_INVALID: 'The signature is not by this wallet over the messageToSign. The account is now UNVERIFIED; start a new challenge.',
  CONSENT_DECLINED: 'The owner declined the check. The account is now UNVERIFIED.',
};

const CREATE_DESCRIPTION =
  'Every `accountInfo` field is checked by its real rule: IBAN and BIC, ABA routing and CLABE checksums, CPF/CNPJ, phone numbering plans, ' +
  'EVM (EIP-55), Solana, Tron, Spark and Lightning encodings. Missing or malformed fields are 400 INVALID_INPUT; well-formed details that fail ' +
  'their checks 400 INVALID_BANK_ACCOUNT; every problem is listed at once. The holder name is checked with the receiving institution ' +
  '(`beneficiaryVerificationStatus`). A FIRST_PARTY self-custody wallet starts PENDING_OWNERSHIP_VERIFICATION. The same destination twice for one ' +
  'owner is 409 CONFLICT. Send `Idempotency-Key` to make retries safe.';

export const externalAccountRoutes: FastifyPluginAsyncTypebox<ExternalAccountRouteDeps> = async (app, deps) => {
  const tags = ['External Accounts'];
  // Responses are built field by field from stored rows (toExternalAccount), so they are written
  // as they are: a schema-driven serializer would compile and try all 46 accountInfo branches.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const verifier = new BeneficiaryVerifier(deps.config.beneficiaryVerification, deps.institutions);
  const livenessBaseUrl = `${deps.config.publicUrl}${BASE_PATH}`;

  const paths = [
    { prefix: '/customers/external-accounts', owner: { kind: 'customer' } as Owner, who: 'customer', op: 'Customer', body: CustomerCreateBody, envelope: CustomerCreateEnvelope },
    { prefix: '/platform/external-accounts', owner: { kind: 'platform' } as Owner, who: 'platform', op: 'Platform', body: PlatformCreateBody, envelope: PlatformCreateEnvelope },
  ] as const;

  for (const { prefix, owner, who, op, body, envelope } of paths) {
    const path = who === 'customer' ? 'customers' : 'platform';
    // A customer's account outlives its customer's deletion, but takes no ownership proof after it.
    const deletedOwner = who === 'customer' ? ' A deleted customer’s account is 410 CUSTOMER_DELETED: nothing can be paid to it again.' : '';
    const ownerGone = who === 'customer' ? ([410] as const) : ([] as const);

    app.post(prefix, {
      schema: {
        operationId: `create${op}ExternalAccount`,
        tags,
        summary: `Add a ${who} external account`,
        description: CREATE_DESCRIPTION,
        body,
        idempotencyKey: true,
        response: { 201: ExternalAccountRef, ...errorResponses(400, 401, 403, 404, 409, 500, 503) },
      },
      attachValidation: true,
      validatorCompiler: (route) => (route.httpPart === 'body' ? createRequestValidator(envelope) : validatorCompiler(route)),
      handler: async (request, reply) => {
        const { platformId, environment } = request.principal;
        const input = request.body as ExternalAccountCreate;
        return sendWrite(
          deps,
          request,
          reply,
          async (trx, { checked, verification }) => ({
            statusCode: 201,
            body: await createExternalAccount(trx, deps.clock, { platformId, path }, input, checked, verification),
          }),
          {
            idempotent: true,
            // The account's checks and the name check run only when no stored response answers the
            // Idempotency-Key: a retry answers what the first request did, whatever time has passed
            // (an invoice that expired since) and without asking the provider again.
            prepare: async () => {
              const checked = checkAccount(request.body, attachedFieldErrors(request), { scope: environment === 'production' ? 'mainnet' : 'any', now: deps.clock.now() });
              const query = beneficiaryQueryOf(checked, input.currency);
              const verification: BeneficiaryVerification = query ? await verifier.verify(environment, query) : { status: 'UNSUPPORTED' };
              return { checked, verification };
            },
          },
        );
      },
    });

    app.get(prefix, {
      schema: {
        operationId: `list${op}ExternalAccounts`,
        tags,
        summary: `List ${who} external accounts`,
        description:
          who === 'customer'
            ? 'Newest first; deleted accounts are not listed. A deleted customer’s accounts are, as its internal accounts are, until they are deleted themselves: nothing can be paid to or pulled from them (410 CUSTOMER_DELETED).'
            : 'Newest first; deleted accounts are not listed.',
        querystring: who === 'customer' ? CustomerListQuery : PlatformListQuery,
        response: { 200: ExternalAccountList, ...errorResponses(400, 401, 500) },
      },
      handler: async (request) =>
        who === 'customer'
          ? listCustomerExternalAccounts(deps.db, request.principal.platformId, request.query as CustomerListQuery)
          : listPlatformExternalAccounts(deps.db, request.principal.platformId, request.query as PlatformListQuery),
    });

    app.get(`${prefix}/:externalAccountId`, {
      schema: {
        operationId: `get${op}ExternalAccount`,
        tags,
        summary: `Read a ${who} external account`,
        params: ExternalAccountParams,
        response: { 200: ExternalAccountRef, ...errorResponses(400, 401, 404, 500) },
      },
      handler: async (request) => getExternalAccount(deps.db, request.principal.platformId, owner, request.params.externalAccountId),
    });

    app.delete(`${prefix}/:externalAccountId`, {
      schema: {
        operationId: `delete${op}ExternalAccount`,
        tags,
        summary: `Delete a ${who} external account`,
        description: 'Answers 204. The account disappears from the API; payments that named it keep their record of it.',
        params: ExternalAccountParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...errorResponses(400, 401, 403, 404, 500) },
      },
      handler: async (request, reply) =>
        sendWrite(deps, request, reply, async (trx) => {
          await deleteExternalAccount(trx, deps.clock, request.principal.platformId, owner, request.params.externalAccountId);
          return { statusCode: 204, body: null };
        }),
    });

    app.post(`${prefix}/:externalAccountId/challenge`, {
      schema: {
        operationId: `create${op}ExternalAccountOwnershipChallenge`,
        tags,
        summary: 'Start an ownership verification challenge',
        description:
          'For a FIRST_PARTY self-custody wallet in PENDING_OWNERSHIP_VERIFICATION or UNVERIFIED (else 409 INVALID_STATE_TRANSITION). ' +
          'WALLET_SIGNATURE answers a `messageToSign` (valid 10 minutes); LIVENESS a `verificationLink` to a page Corridor serves (valid 30 minutes; ' +
          'sandbox platforms only, 501 elsewhere). A new challenge replaces the previous one and moves an UNVERIFIED account back to ' +
          'PENDING_OWNERSHIP_VERIFICATION.' +
          deletedOwner,
        params: ExternalAccountParams,
        body: OwnershipChallengeRequest,
        response: { 201: OwnershipChallenge, ...errorResponses(400, 401, 403, 404, 409, ...ownerGone, 500, 501) },
      },
      handler: async (request, reply) => {
        const { platformId, environment } = request.principal;
        return sendWrite(deps, request, reply, async (trx) => ({
          statusCode: 201,
          body: await startChallenge(trx, deps.clock, { platformId, environment, owner, livenessBaseUrl }, request.params.externalAccountId, request.body.method),
        }));
      },
    });

    app.post(`${prefix}/:externalAccountId/verify`, {
      schema: {
        operationId: `verify${op}ExternalAccountOwnership`,
        tags,
        summary: 'Verify ownership with a wallet signature',
        description:
          'Completes the outstanding WALLET_SIGNATURE challenge at once (409 INVALID_STATE_TRANSITION without one). A valid signature makes the ' +
          'account ACTIVE (200). An expired challenge or a signature that does not verify is a failed attempt: the account becomes UNVERIFIED and ' +
          'the answer is 400 INVALID_INPUT with `details.reason` (CHALLENGE_EXPIRED or SIGNATURE_INVALID). A signature that cannot belong to ' +
          "the wallet's network is 400 and changes nothing." +
          deletedOwner,
        params: ExternalAccountParams,
        body: OwnershipVerifyRequest,
        response: { 200: ExternalAccountRef, ...errorResponses(400, 401, 403, 404, 409, ...ownerGone, 500) },
      },
      handler: async (request) => {
        const attempt = await withTx(deps.db, (trx) => verifySignature(trx, deps.clock, request.principal.platformId, owner, request.params.externalAccountId, request.body));
        if (attempt.outcome === 'VERIFIED') return attempt.account;
        throw new AppError('INVALID_INPUT', ATTEMPT_MESSAGES[attempt.reason], {
          details: { reason: attempt.reason, status: attempt.account.status, errors: [{ field: 'signature', message: ATTEMPT_MESSAGES[attempt.reason] }] },
        });
      },
    });
  }

  const LivenessParams = Type.Object({ token: PathParam(Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' }), 'REFERENCE_NOT_FOUND', 'verification link') });

  app.get(`${LIVENESS_PATH}/:token`, {
    schema: { hide: true, params: Type.Object({ token: PathParam(Type.String({ maxLength: 100 }), 'REFERENCE_NOT_FOUND', 'verification link') }) },
    config: { auth: false },
    handler: async (request, reply) => {
      const nonce = newNonce();
      const session = await withTx(deps.db, (trx) => describeLiveness(trx, deps.clock, request.params.token));
      return reply
        .code(livenessPageStatus(session))
        .headers(livenessHeaders(nonce))
        .send(session ? livenessPage(nonce, session) : unknownLinkPage(nonce));
    },
  });

  app.post(`${LIVENESS_PATH}/:token`, {
    schema: { hide: true, params: LivenessParams, body: Type.Object({ consent: Type.Boolean() }, { additionalProperties: false }) },
    config: { auth: false },
    onRequest: refuseCrossSite(new URL(deps.config.publicUrl).origin),
    handler: async (request, reply) => {
      const attempt = await withTx(deps.db, (trx) => completeLiveness(trx, deps.clock, request.params.token, request.body.consent));
      if (!attempt) throw new AppError('REFERENCE_NOT_FOUND', 'This verification link does not exist or was already used.');
      reply.header('cache-control', 'no-store');
      return attempt.outcome === 'VERIFIED' ? { outcome: attempt.outcome } : { outcome: attempt.outcome, reason: attempt.reason };
    },
  });
};
