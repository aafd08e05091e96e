import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ModuleDeps } from '../../platform/module.js';
import { withTx } from '../../platform/db/tx.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import { Verification, VerificationCreateRequest, VerificationListQuery, VerificationListResponse, VerificationParams } from './schemas.js';
import { getVerification, listVerifications, REVIEW_JOB, reviewVerification, startVerification, type ReviewJobPayload } from './service.js';

export const verificationRoutes: FastifyPluginAsyncTypebox<ModuleDeps> = async (app, deps) => {
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
        '`REJECTED`, `RESOLVE_ERRORS` (documents rejected in review) or `PENDING_MANUAL_REVIEW`. While a review is in progress, ' +
        'starting another returns it.',
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
};
