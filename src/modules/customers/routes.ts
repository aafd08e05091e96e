import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import { dryRun } from '../../platform/db/tx.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { attachedFieldErrors } from '../../platform/http/validation.js';
import { sendWrite } from '../../platform/http/write.js';
import {
  answerSignedRetry,
  SignedRequestChallenge,
  signedRetryHeaders,
  SignedRetryHeaders,
  type WalletAuthRouteDeps,
  WalletOperationProcessing,
} from '../wallet-auth/index.js';
import { getImport, IMPORT_JOB, runImport, startImport, type ImportJobPayload } from './import.js';
import {
  Customer,
  CustomerCreateRequest,
  CustomerListQuery,
  CustomerListResponse,
  CustomerParams,
  CustomerSettings,
  CustomerUpdateRequest,
  EndUserTerms,
  ImportJobAccepted,
  ImportJobParams,
  ImportJobResponse,
  type CustomerCreate,
} from './schemas.js';
import { changeTiedEmail, emailChangeSigner } from './contact-changes.js';
import { createCustomer, deleteCustomer, updateCustomer } from './create-update.js';
import { getCustomer, listCustomers } from './reads.js';
import { getSettings, updateSettings } from './review-state.js';
import { checkCreate, getEndUserTerms } from './validation.js';

const MAX_CSV_BYTES = 10 * 1024 * 1024;
const CSV_TYPES = new Set(['text/csv', 'application/csv', 'text/plain', 'application/vnd.ms-excel', 'application/octet-stream']);

/** The `file` part of a multipart upload as text: at most 10 MB of UTF-8 CSV. */
async function readCsvUpload(request: FastifyRequest): Promise<string> {
  let buffer: Buffer;
  let mimetype: string;
  try {
    const part = await request.file({ limits: { fileSize: MAX_CSV_BYTES, files: 1 } });
    if (!part || part.fieldname !== 'file') throw invalidInput([{ field: 'file', message: 'is required (a multipart part named file)' }]);
    mimetype = part.mimetype;
    buffer = await part.toBuffer();
  } catch (error) {
    if (error instanceof AppError) throw error;
    const code = (error as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw invalidInput([{ field: 'file', message: 'must be at most 10 MB' }]);
    if (code?.startsWith('FST_')) throw invalidInput([{ field: 'file', message: 'must be sent as multipart/form-data' }]);
    throw error;
  }
  if (!CSV_TYPES.has(mimetype.split(';')[0]!.trim().toLowerCase())) {
    throw invalidInput([{ field: 'file', constraint: { enum: [...CSV_TYPES] }, message: `has type ${mimetype}; send text/csv` }]);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw invalidInput([{ field: 'file', message: 'must be UTF-8 text' }]);
  }
}

/** The signed operation that changes an e-mail tied to EMAIL_OTP credentials. */
const CHANGE_TIED_EMAIL = 'customer.email';

export const customerRoutes: FastifyPluginAsyncTypebox<WalletAuthRouteDeps> = async (app, deps) => {
  const tags = ['Customers'];
  const terms = getEndUserTerms(deps.config);

  await app.register(multipart, { limits: { fileSize: MAX_CSV_BYTES, files: 1, fields: 0, parts: 1 } });
  deps.jobs.register(IMPORT_JOB, async (job) => runImport(deps.db, deps.clock, job.platform_id!, job.payload as ImportJobPayload, terms));

  app.post('/customers/bulk/csv', {
    schema: {
      operationId: 'uploadCustomersCsv',
      tags,
      summary: 'Import customers from a CSV file',
      description:
        'multipart/form-data with one part `file` (CSV, UTF-8, at most 10 MB). The header names the columns: customerType (required), ' +
        'platformCustomerId, umaAddress, region, currencies (separated by `;`), email, phoneNumber, fullName, birthDate, nationality, ' +
        'idType, identifier, addressLine1, addressLine2, city, state, postalCode, country, businessLegalName, businessRegistrationNumber, ' +
        'businessTaxId, businessCountry (defaults to country), businessIncorporatedOn, businessEntityType; platformAccountId and description ' +
        'are accepted and ignored. Each row is validated like POST /customers; rows are created by a background job, one bad row never ' +
        'blocks the others, and a row whose platformCustomerId already exists fails with CONFLICT, so uploading a file again creates no duplicates.',
      consumes: ['multipart/form-data'],
      response: { 202: ImportJobAccepted, ...errorResponses(400, 401, 403, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      const text = await readCsvUpload(request);
      return sendWrite(deps, request, reply, async (trx) => ({ statusCode: 202, body: await startImport(trx, deps.clock, request.principal, text) }));
    },
  });

  app.get('/customers/bulk/jobs/:jobId', {
    schema: {
      operationId: 'getBulkCustomerImportJob',
      tags,
      summary: 'Read the progress of a CSV import',
      description: 'Per-row errors carry `row` (the CSV record number; the header is 1) and, for invalid fields, `details.errors` named by CSV column.',
      params: ImportJobParams,
      response: { 200: ImportJobResponse, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => getImport(deps.db, request.principal.platformId, request.params.jobId),
  });

  app.post('/customers', {
    schema: {
      operationId: 'createCustomer',
      tags,
      summary: 'Create a customer',
      description:
        'Every invalid field is reported in one 400 INVALID_INPUT. `platformCustomerId` must be unique among live customers (409 CONFLICT) and ' +
        '`umaAddress` unique (409 UMA_ADDRESS_EXISTS). An `endUserTermsConsent` must name the current terms version ' +
        '(400 END_USER_TERMS_VERSION_NOT_FOUND). In a sandbox platform individuals are approved at creation unless ' +
        '`PATCH /customers/settings` turned that off. Send `Idempotency-Key` to make retries safe.',
      body: CustomerCreateRequest,
      response: { 201: Customer, ...errorResponses(400, 401, 403, 409, 500) },
    },
    attachValidation: true,
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      checkCreate(request.body, attachedFieldErrors(request), deps.clock.now());
      const { platformId, environment } = request.principal;
      return sendWrite(
        deps,
        request,
        reply,
        async (trx) => ({ statusCode: 201, body: await createCustomer(trx, deps.clock, { platformId, environment }, terms, request.body as CustomerCreate) }),
        { idempotent: true },
      );
    },
  });

  app.get('/customers', {
    schema: {
      operationId: 'listCustomers',
      tags,
      summary: 'List customers',
      description: 'Newest first. Deleted customers are listed only with `isIncludingDeleted=true`.',
      querystring: CustomerListQuery,
      response: { 200: CustomerListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listCustomers(deps.db, request.principal.platformId, request.query),
  });

  app.get('/customers/end-user-terms', {
    schema: {
      operationId: 'getEndUserTerms',
      tags,
      summary: 'Read the current end-user terms',
      description: 'Customers accept this version; pass it as `endUserTermsConsent.termsVersion`.',
      response: { 200: EndUserTerms, ...errorResponses(401, 500) },
    },
    handler: async () => terms,
  });

  app.get('/customers/settings', {
    schema: {
      operationId: 'getCustomerSettings',
      tags,
      summary: 'Read onboarding settings',
      response: { 200: CustomerSettings, ...errorResponses(401, 500) },
    },
    handler: async (request) => getSettings(deps.db, request.principal.platformId),
  });

  app.patch('/customers/settings', {
    schema: {
      operationId: 'updateCustomerSettings',
      tags,
      summary: 'Change onboarding settings',
      description: 'Corridor extension. `sandboxAutoApprove: false` makes sandbox individuals go through the full verification review.',
      body: CustomerSettings,
      response: { 200: CustomerSettings, ...errorResponses(400, 401, 403, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await updateSettings(trx, deps.clock, request.principal.platformId, request.body),
      })),
  });

  app.get('/customers/:customerId', {
    schema: {
      operationId: 'getCustomer',
      tags,
      summary: 'Read a customer',
      description: 'Deleted customers are still returned, with `isDeleted: true`.',
      params: CustomerParams,
      response: { 200: Customer, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => getCustomer(deps.db, request.principal.platformId, request.params.customerId),
  });

  deps.signed.register(CHANGE_TIED_EMAIL, {
    execute: async (trx, row) => ({
      statusCode: 200,
      body: await changeTiedEmail(trx, deps.clock, row.platform_id, terms, row.target_id, row.context.body),
    }),
  });

  app.patch('/customers/:customerId', {
    schema: {
      operationId: 'updateCustomer',
      tags,
      summary: 'Update a customer',
      description:
        'Fields left out stay as they are. Every invalid field is reported in one 400 INVALID_INPUT. 410 CUSTOMER_DELETED for a deleted customer. ' +
        "Changing an e-mail that an embedded wallet's EMAIL_OTP credential is tied to answers 202 with a signed-retry challenge; the signed retry changes the " +
        'customer e-mail and the credential together and answers 200 (or 200 `{status: PROCESSING}`).',
      params: CustomerParams,
      headers: SignedRetryHeaders,
      body: CustomerUpdateRequest,
      response: {
        200: Type.Union([Customer, WalletOperationProcessing]),
        202: SignedRequestChallenge,
        ...errorResponses(400, 401, 403, 404, 409, 410, 500),
      },
    },
    attachValidation: true,
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      const schemaErrors = attachedFieldErrors(request);
      const { platformId } = request.principal;
      const { customerId } = request.params;
      const signedHeaders = signedRetryHeaders(request);
      if (signedHeaders) {
        if (schemaErrors.length) throw invalidInput(schemaErrors);
        return answerSignedRetry(deps.signed, request, reply, CHANGE_TIED_EMAIL, customerId, signedHeaders);
      }
      return sendWrite(deps, request, reply, async (trx) => {
        const signer = await emailChangeSigner(trx, platformId, customerId, request.body);
        const update = () => updateCustomer(trx, deps.clock, platformId, terms, customerId, request.body, schemaErrors);
        if (!signer) return { statusCode: 200, body: await update() };
        // Every field error is reported before the challenge; the change itself waits for the signature.
        await dryRun(trx, update);
        const email = (request.body as { email: string }).email;
        const challenge = await deps.walletAuth.wallets.issueFor(trx, {
          platformId,
          accountUuid: signer,
          operation: CHANGE_TIED_EMAIL,
          targetId: customerId,
          body: request.body,
          type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL',
          parameters: { userEmail: email, userId: `InternalAccount:${signer}` },
        });
        return { statusCode: 202, body: challenge };
      });
    },
  });

  app.delete('/customers/:customerId', {
    schema: {
      operationId: 'deleteCustomer',
      tags,
      summary: 'Delete a customer',
      description: 'Answers the customer marked deleted. Deleting again is 410 CUSTOMER_DELETED.',
      params: CustomerParams,
      response: { 200: Customer, ...errorResponses(400, 401, 403, 404, 410, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await deleteCustomer(trx, deps.clock, request.principal.platformId, request.params.customerId),
      })),
  });
};
