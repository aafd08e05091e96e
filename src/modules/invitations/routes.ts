import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import type { ModuleDeps } from '../../platform/module.js';
import { InvitationParams, UmaInvitation, UmaInvitationClaimRequest, UmaInvitationCreateRequest } from './schemas.js';
import { cancelInvitation, claimInvitation, createInvitation, getInvitation } from './service.js';

export const invitationRoutes: FastifyPluginAsyncTypebox<ModuleDeps> = async (app, deps) => {
  const tags = ['Invitations'];

  app.post('/invitations', {
    schema: {
      operationId: 'createInvitation',
      tags,
      summary: 'Create an UMA invitation',
      description:
        'An invitation from one of your customers (`inviterUma`), to share as its `url`. Needs your `umaDomain` (PATCH /config): ' +
        '400 INVITATIONS_NOT_CONFIGURED without it. A malformed address is 400 INVALID_UMA_ADDRESS; one that is not a customer of yours, ' +
        'or an `expiresAt` not in the future, 400 INVALID_INPUT. Needs the TRANSACT permission. Each call makes a new invitation: send an ' +
        '`Idempotency-Key` to retry one safely.',
      body: UmaInvitationCreateRequest,
      idempotencyKey: true,
      response: { 201: UmaInvitation, ...errorResponses(400, 401, 403, 409, 500) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) =>
      sendWrite(
        deps,
        request,
        reply,
        async (trx) => ({
          statusCode: 201,
          body: await createInvitation(trx, deps.clock, request.principal.platformId, request.body),
        }),
        { idempotent: true },
      ),
  });

  app.get('/invitations/:invitationCode', {
    schema: {
      operationId: 'getInvitation',
      tags,
      summary: 'Read an UMA invitation by its code',
      description:
        'Any platform of the same environment (sandbox or production) as the one that created it may read an invitation by its code (the ' +
        'code is what the inviter shares). Unknown, or of the other environment: 404 INVITATION_NOT_FOUND. A PENDING invitation reads as ' +
        'EXPIRED past `expiresAt`, and as CANCELLED once its inviter has been deleted.',
      params: InvitationParams,
      response: { 200: UmaInvitation, ...errorResponses(401, 404, 500) },
    },
    handler: async (request) => getInvitation(deps.db, deps.clock, request.principal, request.params.invitationCode),
  });

  app.post('/invitations/:invitationCode/claim', {
    schema: {
      operationId: 'claimInvitation',
      tags,
      summary: 'Claim an UMA invitation',
      description:
        'Associates the invitation with the invitee\'s UMA address: PENDING → CLAIMED, exactly once however many claims race, and the ' +
        'platform that created it receives INVITATION.CLAIMED. Any platform of its environment with an `umaDomain` may claim (else 400 ' +
        'INVITATIONS_NOT_CONFIGURED, for a code that exists). The same claim again (your platform, the same `inviteeUma`), as a retry after ' +
        'a lost answer, is 200 with the invitation as it is, changing nothing (no Idempotency-Key needed). Claimed otherwise: 400 ' +
        'INVITATION_ALREADY_CLAIMED; cancelled, or its inviter ' +
        'deleted (`details.reason` INVITER_DELETED): 400 INVITATION_CANCELLED; expired: 400 INVALID_INPUT (`details.status` EXPIRED); ' +
        'unknown, or of the other environment: 404 INVITATION_NOT_FOUND. Needs the TRANSACT permission.',
      params: InvitationParams,
      body: UmaInvitationClaimRequest,
      response: { 200: UmaInvitation, ...errorResponses(400, 401, 403, 404, 500) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await claimInvitation(trx, deps.clock, request.principal, request.params.invitationCode, request.body),
      })),
  });

  app.post('/invitations/:invitationCode/cancel', {
    schema: {
      operationId: 'cancelInvitation',
      tags,
      summary: 'Cancel an UMA invitation',
      description:
        'PENDING → CANCELLED; it can no longer be claimed. Only the platform that created it may cancel it (403 FORBIDDEN). Already ' +
        'claimed: 400 INVITATION_ALREADY_CLAIMED; already cancelled, or its inviter deleted: 400 INVITATION_CANCELLED; expired: 400 ' +
        'INVALID_INPUT. Needs the TRANSACT permission.',
      params: InvitationParams,
      response: { 200: UmaInvitation, ...errorResponses(400, 401, 403, 404, 500) },
    },
    config: { permission: 'TRANSACT' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await cancelInvitation(trx, deps.clock, request.principal, request.params.invitationCode),
      })),
  });
};
