import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { BASE_PATH } from '../../config.js';
import type { ModuleDeps } from '../../platform/module.js';
import { withTx } from '../../platform/db/tx.js';
import { hostedPageHeaders, newNonce, refuseCrossSite } from '../../platform/http/hosted-page.js';
import { errorResponses, IdParam, PathParam } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { getEndUserTerms } from '../customers/index.js';
import type { DocumentIntake } from '../documents/index.js';
import {
  checkDocumentInScope,
  checkHolderInScope,
  createKycLink,
  createKycLinkForPlatformCustomerId,
  describeKycPage,
  fillKycFields,
  holdOpenLink,
  KYC_LINK_TTL_MS,
  KYC_PAGE_PATH,
  presentKycLink,
  submitKycLink,
  uploadScope,
  type KycLinkTokens,
  type StoredKycLink,
} from './kyc-links.js';
import { kycGonePage, kycPage } from './kyc-page.js';
import {
  KycLinkByPlatformCustomerIdQuery,
  KycLinkCreateRequest,
  KycLinkForCustomerResponse,
  KycLinkResponse,
  KycPageFields,
  ManualReviewDecision,
  Verification,
  VerificationCreateRequest,
  VerificationListQuery,
  VerificationListResponse,
  VerificationParams,
} from './schemas.js';
import { decideManualReview, getVerification, listVerifications, REVIEW_JOB, reviewVerification, startVerification, type ReviewJobPayload } from './service.js';

export interface VerificationDeps extends ModuleDeps {
  /** Where the hosted page's uploads go: the same intake as POST /documents. */
  intake: DocumentIntake;
  kycLinkTokens: KycLinkTokens;
}

export const verificationRoutes: FastifyPluginAsyncTypebox<VerificationDeps> = async (app, deps) => {
  const tags = ['KYC/KYB Verifications'];

  deps.jobs.register(REVIEW_JOB, async (job) => {
    await withTx(deps.db, (trx) => reviewVerification(trx, deps.clock, job.platform_id!, job.payload as ReviewJobPayload));
  });

  app.post('/verifications', {
    schema: {
      operationId: 'createVerification',
      tags,
      summary: "Start a review of a customer's KYC/KYB",
      description:
        'Checks the customer, its beneficial owners and their documents against the requirements. Anything missing answers ' +
        '`RESOLVE_ERRORS` with one entry per problem; otherwise `IN_PROGRESS`, and a background review moves it to `APPROVED`, ' +
        '`REJECTED`, `RESOLVE_ERRORS` (documents rejected in review) or `PENDING_MANUAL_REVIEW` (a person decides: the operator, or in ' +
        'sandbox POST /sandbox/verifications/{id}/manual-review). While a review is `IN_PROGRESS` or `PENDING_MANUAL_REVIEW`, starting ' +
        'another returns it. A rejection is final: for a `REJECTED` customer the answer is the verification that rejected it, and nothing ' +
        'starts. While a review is open, the customer profile and beneficial owners cannot change, nor its documents be replaced or deleted.',
      body: VerificationCreateRequest,
      response: { 200: Verification, ...errorResponses(400, 401, 403, 404, 410, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await startVerification(trx, deps.clock, request.principal, request.body.customerId),
      })),
  });

  app.get('/verifications', {
    schema: {
      operationId: 'listVerifications',
      tags,
      summary: 'List verifications',
      description: 'Newest first.',
      querystring: VerificationListQuery,
      response: { 200: VerificationListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listVerifications(deps.db, request.principal.platformId, request.query),
  });

  app.get('/verifications/:verificationId', {
    schema: {
      operationId: 'getVerification',
      tags,
      summary: 'Read a verification',
      params: VerificationParams,
      response: { 200: Verification, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => getVerification(deps.db, request.principal.platformId, request.params.verificationId),
  });

  app.post('/sandbox/verifications/:verificationId/manual-review', {
    schema: {
      operationId: 'decideSandboxManualReview',
      tags: ['Sandbox'],
      summary: 'Decide a verification waiting for manual review (sandbox)',
      description:
        'Plays the person who reviews a `PENDING_MANUAL_REVIEW` verification (sandbox triggers `SANDBOX_MANUAL_REVIEW`, a fullName ending ' +
        '`001`): `APPROVED`, or `REJECTED` with one APPLICANT_REJECTED entry carrying `reason`. The customer, its beneficial owners and the ' +
        'events follow as for any verdict (`VERIFICATION.APPROVED|REJECTED`, `CUSTOMER.KYC_*|KYB_*`; internal accounts open on approval). ' +
        'The same verdict again answers the verification unchanged; a verification in any other status is 409 CONFLICT. ' +
        "Production platforms' manual reviews are decided by the operator. Sandbox platforms only (403 otherwise).",
      params: VerificationParams,
      body: ManualReviewDecision,
      response: { 200: Verification, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'MANAGE', sandboxOnly: { what: 'Deciding a manual review', hint: 'the operator decides production ones' } },
    handler: async (request, reply) => {
      return sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await decideManualReview(trx, deps.clock, request.principal.platformId, request.params.verificationId, request.body),
      }));
    },
  });

  const pageBaseUrl = `${deps.config.publicUrl}${BASE_PATH}`;
  app.post('/customers/:customerId/kyc-link', {
    schema: {
      operationId: 'createCustomerKycLink',
      tags,
      summary: 'Create a hosted KYC/KYB link for a customer',
      description:
        `A page Corridor serves itself (\`provider: CORRIDOR\`, no \`token\`): it lists what a review still needs, lets the customer fill in the ` +
        `missing fields and upload or replace documents, and on submit starts the review (as POST /verifications) and sends the customer to ` +
        `\`redirectUri\`. Single use, valid ${KYC_LINK_TTL_MS / 3_600_000} hours; each call makes a new link and earlier ones stay valid until used or expired. ` +
        'The customer status does not change until the review starts. 409 CONFLICT (`details.reason: CONTACT_VERIFICATION_INCOMPLETE`) while an ' +
        "e-mail or phone the customer's wallet signs in with (EMAIL_OTP / SMS_OTP) has never been confirmed by its one-time code. " +
        'Send `Idempotency-Key` to make retries safe: a replay answers the same link.',
      params: Type.Object({ customerId: IdParam('Customer', 'USER_NOT_FOUND') }, { additionalProperties: false }),
      body: KycLinkCreateRequest,
      idempotencyKey: true,
      response: { 201: KycLinkResponse, ...errorResponses(400, 401, 403, 404, 409, 410, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(
        deps,
        request,
        reply,
        async (trx) => ({ statusCode: 201, body: await createKycLink(trx, deps.clock, deps.kycLinkTokens, request.principal, request.params.customerId, request.body) }),
        { idempotent: true, present: (stored) => presentKycLink(deps.kycLinkTokens, pageBaseUrl, stored as StoredKycLink) },
      ),
  });

  // The upstream's published SDK (`customers.getKYCLink()`) still asks for a link this way, by the
  // platform's own customer id, under the same date version: answered as the POST above.
  app.get('/customers/kyc-link', {
    // A HEAD would issue a link too: it writes, so it is served as GET only.
    exposeHeadRoute: false,
    schema: {
      operationId: 'getCustomerKycLinkByPlatformCustomerId',
      tags,
      summary: "Create a hosted KYC/KYB link for a customer named by the platform's id",
      description:
        "POST /customers/{customerId}/kyc-link for the live customer holding `platformCustomerId` (404 USER_NOT_FOUND when none does), at the " +
        "path and in the shape the upstream's published SDK calls (`customers.getKYCLink()`); the answer also names the customer. " +
        'Each call makes a new link, as the POST does; there is no Idempotency-Key on a GET (a retried call leaves one more unused link, valid until it expires).',
      querystring: KycLinkByPlatformCustomerIdQuery,
      response: { 200: KycLinkForCustomerResponse, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    // It issues a link, a write on a customer: as the POST, not a read.
    config: { permission: 'MANAGE' },
    handler: async (request) => {
      const { customerId, link } = await withTx(deps.db, (trx) =>
        createKycLinkForPlatformCustomerId(trx, deps.clock, deps.kycLinkTokens, request.principal, request.query),
      );
      return { customerId, platformCustomerId: request.query.platformCustomerId, ...presentKycLink(deps.kycLinkTokens, pageBaseUrl, link) };
    },
  });

  await app.register(hostedKycPage, deps);
};

/** The hosted page and the calls its script makes; the link's token in the path is the only credential. */
const hostedKycPage: FastifyPluginAsyncTypebox<VerificationDeps> = async (app, deps) => {
  await app.register(multipart);
  const endUserTerms = getEndUserTerms(deps.config);
  const Token = PathParam(Type.String({ maxLength: 100 }), 'REFERENCE_NOT_FOUND', 'verification link');
  const TokenParams = Type.Object({ token: Token }, { additionalProperties: false });
  const noStore = { 'cache-control': 'no-store' };
  app.addHook('onRequest', refuseCrossSite(new URL(deps.config.publicUrl).origin));

  app.get(`${KYC_PAGE_PATH}/:token`, {
    schema: { hide: true, params: TokenParams },
    config: { auth: false },
    handler: async (request, reply) => {
      const nonce = newNonce();
      const model = await withTx(deps.db, (trx) => describeKycPage(trx, deps.clock, request.params.token));
      const page = !model ? kycGonePage(nonce, 'UNKNOWN') : model.state === 'OPEN' ? kycPage(nonce, model) : kycGonePage(nonce, model.state);
      return reply
        .code(!model ? 404 : model.state === 'OPEN' ? 200 : 410)
        .headers(hostedPageHeaders(nonce))
        .send(page);
    },
  });

  app.post(`${KYC_PAGE_PATH}/:token/fields`, {
    schema: { hide: true, params: TokenParams, body: KycPageFields },
    config: { auth: false },
    handler: async (request, reply) => {
      await withTx(deps.db, (trx) => fillKycFields(trx, deps.clock, deps.identifiers, endUserTerms, request.params.token, request.body));
      return reply.headers(noStore).send({ saved: true });
    },
  });

  app.post(`${KYC_PAGE_PATH}/:token/documents`, {
    schema: { hide: true, params: TokenParams },
    config: { auth: false },
    handler: async (request, reply) => {
      const scope = await withTx(deps.db, (trx) => uploadScope(trx, deps.clock, request.params.token));
      const document = await deps.intake.upload(
        request,
        scope.platformId,
        scope.environment,
        async (fields) => checkHolderInScope(scope, fields.documentHolder),
        (trx) => holdOpenLink(trx, deps.clock, request.params.token),
      );
      return reply.code(201).headers(noStore).send({ id: document.id });
    },
  });

  app.put(`${KYC_PAGE_PATH}/:token/documents/:documentId`, {
    schema: { hide: true, params: Type.Object({ token: Token, documentId: IdParam('Document', 'REFERENCE_NOT_FOUND') }, { additionalProperties: false }) },
    config: { auth: false },
    handler: async (request, reply) => {
      const scope = await withTx(deps.db, (trx) => uploadScope(trx, deps.clock, request.params.token));
      await checkDocumentInScope(deps.db, scope, request.params.documentId);
      const document = await deps.intake.replace(request, scope.platformId, scope.environment, request.params.documentId, (trx) =>
        holdOpenLink(trx, deps.clock, request.params.token),
      );
      return reply.headers(noStore).send({ id: document.id });
    },
  });

  app.post(`${KYC_PAGE_PATH}/:token/submit`, {
    schema: { hide: true, params: TokenParams },
    config: { auth: false },
    handler: async (request, reply) => {
      const submitted = await withTx(deps.db, (trx) => submitKycLink(trx, deps.clock, request.params.token));
      return reply.headers(noStore).send(submitted);
    },
  });
};
