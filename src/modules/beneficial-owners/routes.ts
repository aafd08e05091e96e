import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ModuleDeps } from '../../platform/module.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { attachedFieldErrors } from '../../platform/http/validation.js';
import { sendWrite } from '../../platform/http/write.js';
import {
  BeneficialOwner,
  BeneficialOwnerCreateRequest,
  BeneficialOwnerUpdateRequest,
  OwnerListQuery,
  OwnerListResponse,
  OwnerParams,
} from './schemas.js';
import { checkCreate, createBeneficialOwner, getBeneficialOwner, listBeneficialOwners, updateBeneficialOwner } from './service.js';

export const beneficialOwnerRoutes: FastifyPluginAsyncTypebox<ModuleDeps> = async (app, deps) => {
  const tags = ['KYC/KYB Verifications'];

  app.post('/beneficial-owners', {
    schema: {
      operationId: 'createBeneficialOwner',
      tags,
      summary: 'Add a beneficial owner to a business customer',
      description:
        'Only BUSINESS customers have beneficial owners. The ownership of all owners of a customer totals at most 100%. While a verification of the ' +
        'business is IN_PROGRESS or PENDING_MANUAL_REVIEW: 409 CONFLICT (`details.reason: UNDER_REVIEW`).',
      body: BeneficialOwnerCreateRequest,
      response: { 201: BeneficialOwner, ...errorResponses(400, 401, 403, 404, 409, 410, 500) },
    },
    attachValidation: true,
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      checkCreate(request.body, attachedFieldErrors(request), deps.clock.now());
      return sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 201,
        body: await createBeneficialOwner(trx, deps.clock, deps.identifiers, request.principal.platformId, request.body),
      }));
    },
  });

  app.get('/beneficial-owners', {
    schema: {
      operationId: 'listBeneficialOwners',
      tags,
      summary: "List a customer's beneficial owners",
      querystring: OwnerListQuery,
      response: { 200: OwnerListResponse, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => listBeneficialOwners(deps.db, deps.identifiers, request.principal.platformId, request.query),
  });

  app.get('/beneficial-owners/:beneficialOwnerId', {
    schema: {
      operationId: 'getBeneficialOwner',
      tags,
      summary: 'Read a beneficial owner',
      params: OwnerParams,
      response: { 200: BeneficialOwner, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => getBeneficialOwner(deps.db, deps.identifiers, request.principal.platformId, request.params.beneficialOwnerId),
  });

  app.patch('/beneficial-owners/:beneficialOwnerId', {
    schema: {
      operationId: 'updateBeneficialOwner',
      tags,
      summary: 'Update a beneficial owner',
      description:
        'Fields left out stay as they are; `personalInfo` merges field by field. A change of the person (`personalInfo`) sets its kycStatus back to ' +
        'UNVERIFIED until a new verification of the business. While a verification of the business is IN_PROGRESS or PENDING_MANUAL_REVIEW: 409 ' +
        'CONFLICT (`details.reason: UNDER_REVIEW`).',
      params: OwnerParams,
      body: BeneficialOwnerUpdateRequest,
      response: { 200: BeneficialOwner, ...errorResponses(400, 401, 403, 404, 409, 410, 500) },
    },
    attachValidation: true,
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      const schemaErrors = attachedFieldErrors(request);
      return sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await updateBeneficialOwner(trx, deps.clock, deps.identifiers, request.principal.platformId, request.params.beneficialOwnerId, request.body, schemaErrors),
      }));
    },
  });
};
