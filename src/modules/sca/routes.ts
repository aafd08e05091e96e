import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import { parseId } from '../../platform/ids.js';
import type { ModuleDeps } from '../../platform/module.js';
import {
  BeneficiaryTrustConfirmRequest,
  ContactVerificationConfirmRequest,
  CustomerParams,
  ExternalAccountParams,
  FactorParams,
  QuoteParams,
  RecordSecurityEventRequest,
  ResetParams,
  ScaAuthorization,
  ScaCustomerQuery,
  ScaFactorConfirmRequest,
  ScaFactorEnrollRequest,
  ScaLoginCompleteRequest,
  ScaLoginStartRequest,
  TwoFactorResetCompleteRequest,
  TwoFactorResetStartRequest,
} from './schemas.js';
import { contactVerificationNotRequired, scaNotRequiredForBeneficiary, scaNotRequiredForCustomer, scaNotRequiredForQuote, type Contact } from './service.js';

// Every operation here answers 409 CONFLICT once what it names is found: see README.md for why,
// and for the order of the checks each description repeats.

const CONTACT_TAGS = ['Contact Verification'];
const SCA_TAGS = ['Strong Customer Authentication'];

const contactNote =
  'Corridor’s payment providers do not require contact verification: for a customer of the platform this answers 409 CONFLICT ' +
  '(`details.reason: CONTACT_VERIFICATION_NOT_REQUIRED`) and changes nothing. An unknown customer is 404 USER_NOT_FOUND, a deleted one 410 CUSTOMER_DELETED.';
const scaNote = (found: string) =>
  'Corridor’s payment providers do not require strong customer authentication: nothing is enrolled, no quote waits for authorization ' +
  `(none is PENDING_AUTHORIZATION or carries an scaChallenge). ${found} this answers 409 CONFLICT (\`details.reason: SCA_NOT_REQUIRED\`) and changes nothing.`;
const forCustomer =
  scaNote('For a customer of the platform') +
  ' An unknown `customerId` is 404 USER_NOT_FOUND, a deleted customer 410 CUSTOMER_DELETED. No factor or reset is ever made, so a `credentialId` or `resetId` is not looked up: the 409 says why there is none.';
const forBeneficiary =
  scaNote('For a customer’s external account') +
  ' An unknown external account, or the platform’s own, is 404 REFERENCE_NOT_FOUND; a deleted customer’s 410 CUSTOMER_DELETED. No beneficiary is trusted, so none blocks its deletion.';
const forQuote = scaNote('For a quote of the platform') + ' An unknown quote is 404 QUOTE_NOT_FOUND.';
const validated = ' The query and body are validated before anything is looked up (400 INVALID_INPUT).';

export const scaRoutes: FastifyPluginAsyncTypebox<ModuleDeps> = async (app, deps) => {
  const contacts: Array<{ contact: Contact; word: 'email' | 'phone'; op: 'Email' | 'Phone' }> = [
    { contact: 'EMAIL', word: 'email', op: 'Email' },
    { contact: 'PHONE', word: 'phone', op: 'Phone' },
  ];
  for (const { contact, word, op } of contacts) {
    app.post(`/customers/:customerId/verify-${word}`, {
      schema: {
        operationId: `sendCustomer${op}Verification`,
        tags: CONTACT_TAGS,
        summary: `Send a ${word} verification code to a customer`,
        description: contactNote,
        params: CustomerParams,
        response: errorResponses(400, 401, 403, 404, 409, 410, 500),
      },
      config: { permission: 'MANAGE' },
      handler: async (request) => contactVerificationNotRequired(deps.db, request.principal.platformId, request.params.customerId, contact),
    });

    app.post(`/customers/:customerId/verify-${word}/confirm`, {
      schema: {
        operationId: `confirmCustomer${op}Verification`,
        tags: CONTACT_TAGS,
        summary: `Confirm a customer's ${word} verification code`,
        description: contactNote + validated,
        params: CustomerParams,
        body: ContactVerificationConfirmRequest,
        response: errorResponses(400, 401, 403, 404, 409, 410, 500),
      },
      config: { permission: 'MANAGE' },
      handler: async (request) => contactVerificationNotRequired(deps.db, request.principal.platformId, request.params.customerId, contact),
    });
  }

  // The /sca operations name their customer in the query string.
  const customerOperations = [
    { method: 'GET', url: '/sca/factors', operationId: 'listScaFactors', summary: 'List enrolled SCA factors' },
    { method: 'POST', url: '/sca/factors', operationId: 'startScaFactorEnrollment', summary: 'Start SCA factor enrollment', body: ScaFactorEnrollRequest },
    { method: 'POST', url: '/sca/factors/confirm', operationId: 'confirmScaFactorEnrollment', summary: 'Confirm SCA factor enrollment', body: ScaFactorConfirmRequest },
    { method: 'DELETE', url: '/sca/factors/:credentialId', operationId: 'deleteScaFactor', summary: 'Delete an enrolled SCA factor', params: FactorParams },
    { method: 'POST', url: '/sca/login/start', operationId: 'startScaLogin', summary: 'Start an SCA login', body: ScaLoginStartRequest },
    { method: 'POST', url: '/sca/login/complete', operationId: 'completeScaLogin', summary: 'Complete an SCA login', body: ScaLoginCompleteRequest },
    { method: 'POST', url: '/sca/record-event', operationId: 'recordSecurityEvent', summary: 'Record a security event', body: RecordSecurityEventRequest },
    { method: 'POST', url: '/sca/factors/reset', operationId: 'startTwoFactorReset', summary: 'Start a 2FA reset', body: TwoFactorResetStartRequest },
    { method: 'GET', url: '/sca/factors/reset/:resetId', operationId: 'getTwoFactorResetStatus', summary: 'Get 2FA reset status', params: ResetParams },
    {
      method: 'POST',
      url: '/sca/factors/reset/:resetId/complete',
      operationId: 'completeTwoFactorReset',
      summary: 'Complete a 2FA reset',
      params: ResetParams,
      // Upstream: "omit the body entirely" except for an SMS_OTP reset.
      body: TwoFactorResetCompleteRequest,
    },
  ] as const;
  for (const operation of customerOperations) {
    const { method, url, operationId, summary } = operation;
    const body = 'body' in operation ? operation.body : undefined;
    const params = 'params' in operation ? operation.params : undefined;
    app.route({
      method,
      url,
      schema: {
        operationId,
        tags: SCA_TAGS,
        summary,
        description: forCustomer + validated,
        querystring: ScaCustomerQuery,
        ...(params ? { params } : {}),
        ...(body ? { body } : {}),
        response: errorResponses(400, 401, ...(method === 'GET' ? [] : [403]), 404, 409, 410, 500),
      },
      // Reads are every token's; the rest are a customer's authentication, as its wallet credentials are (MANAGE).
      config: { permission: method === 'GET' ? 'VIEW' : 'MANAGE' },
      handler: async (request) => scaNotRequiredForCustomer(deps.db, request.principal.platformId, (request.query as { customerId: string }).customerId),
    });
  }

  for (const [action, op] of [
    ['trust', 'Trust'],
    ['untrust', 'Untrust'],
  ] as const) {
    app.post(`/customers/external-accounts/:externalAccountId/${action}`, {
      schema: {
        operationId: `startBeneficiary${op}`,
        tags: SCA_TAGS,
        summary: `Start ${action}ing a beneficiary`,
        description: forBeneficiary,
        params: ExternalAccountParams,
        response: errorResponses(400, 401, 403, 404, 409, 410, 500),
      },
      config: { permission: 'MANAGE' },
      handler: async (request) => scaNotRequiredForBeneficiary(deps.db, request.principal.platformId, request.params.externalAccountId),
    });

    app.post(`/customers/external-accounts/:externalAccountId/${action}/confirm`, {
      schema: {
        operationId: `confirmBeneficiary${op}`,
        tags: SCA_TAGS,
        summary: `Confirm ${action}ing a beneficiary`,
        description: forBeneficiary + validated,
        params: ExternalAccountParams,
        body: BeneficiaryTrustConfirmRequest,
        response: errorResponses(400, 401, 403, 404, 409, 410, 500),
      },
      config: { permission: 'MANAGE' },
      handler: async (request) => scaNotRequiredForBeneficiary(deps.db, request.principal.platformId, request.params.externalAccountId),
    });
  }

  // Authorizing a quote releases its payment: TRANSACT, as executing one needs.
  app.post('/quotes/:quoteId/authorize', {
    schema: {
      operationId: 'authorizeQuote',
      tags: SCA_TAGS,
      summary: "Authorize a quote's SCA challenge",
      description: forQuote + validated,
      params: QuoteParams,
      body: ScaAuthorization,
      response: errorResponses(400, 401, 403, 404, 409, 500),
    },
    config: { permission: 'TRANSACT' },
    handler: async (request) => scaNotRequiredForQuote(deps.db, request.principal.platformId, parseId('Quote', request.params.quoteId)!),
  });

  app.post('/quotes/:quoteId/authorize/resend', {
    schema: {
      operationId: 'resendQuoteScaCode',
      tags: SCA_TAGS,
      summary: "Resend a quote's SCA challenge code",
      description: forQuote,
      params: QuoteParams,
      response: errorResponses(400, 401, 403, 404, 409, 500),
    },
    config: { permission: 'TRANSACT' },
    handler: async (request) => scaNotRequiredForQuote(deps.db, request.principal.platformId, parseId('Quote', request.params.quoteId)!),
  });
};
