import { createHash } from 'node:crypto';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import { dryRun } from '../../platform/db/tx.js';
import { formatId } from '../../platform/ids.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { attachedFieldErrors } from '../../platform/http/validation.js';
import { guardedParts, notWellFormed } from '../../platform/http/multipart.js';
import { unstorableText } from '../../platform/http/text-input.js';
import { sendWrite } from '../../platform/http/write.js';
import {
  answerSignedRetry,
  SignedRequestChallenge,
  signedRetryHeaders,
  SignedRetryHeaders,
  type TiedCredentials,
  type WalletAuthRouteDeps,
  WalletOperationProcessing,
} from '../wallet-auth/index.js';
import { JobTakenOver } from '../../platform/jobs/index.js';
import { CONFIG_ACCOUNTS_JOB, type ConfigAccountsJobPayload } from '../config/index.js';
import { openAccountsAfterConfigChange } from './accounts-sync.js';
import { checkImportFile, failImport, getImport, importErrorReport, IMPORT_JOB, runImport, startImport, type ImportJobPayload } from './import.js';
import {
  Customer,
  CustomerCreateRequest,
  CustomerCsvUpload,
  CustomerListQuery,
  CustomerListResponse,
  CustomerParams,
  CustomerSettings,
  CustomerSettingsUpdate,
  CustomerUpdateRequest,
  EndUserTerms,
  ImportJobAccepted,
  ImportJobParams,
  ImportJobResponse,
  type CustomerCreate,
} from './schemas.js';
import { changeTiedContact, checkContactChange, CONTACT_OPERATIONS, contactKindOf, signedContactChange } from './contact-changes.js';
import { createCustomer, deleteCustomer, updateCustomer } from './create-update.js';
import { attachOwners, getCustomer, listCustomers, type OwnerLookup } from './reads.js';
import { getSettings, updateSettings } from './review-state.js';
import { checkCreate, getEndUserTerms } from './validation.js';

const MAX_CSV_BYTES = 10 * 1024 * 1024;
const CSV_TYPES = new Set(['text/csv', 'application/csv', 'text/plain', 'application/vnd.ms-excel', 'application/octet-stream']);

const onePart = () => invalidInput([{ field: 'file', message: 'must be the only part of the upload (one file, no other parts)' }]);

/** The `file` part of a multipart upload as text: at most 10 MB of UTF-8 CSV, and no other part. */
async function readCsvUpload(request: FastifyRequest): Promise<string> {
  let buffer: Buffer | undefined;
  let mimetype = '';
  try {
    for await (const part of guardedParts(request, { limits: { fileSize: MAX_CSV_BYTES, files: 1, fields: 0, parts: 1 } })) {
      if (buffer !== undefined) throw onePart();
      if (part.type !== 'file' || part.fieldname !== 'file') throw invalidInput([{ field: 'file', message: 'is required (a multipart part named file)' }]);
      mimetype = part.mimetype;
      buffer = await part.toBuffer();
    }
    if (buffer === undefined) throw invalidInput([{ field: 'file', message: 'is required (a multipart part named file)' }]);
  } catch (error) {
    if (error instanceof AppError) throw error;
    const code = (error as { code?: string }).code;
    // A part past the first (busboy's limits: one part, one file, no fields).
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') throw onePart();
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw invalidInput([{ field: 'file', message: 'must be at most 10 MB' }]);
    if (code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') throw invalidInput([{ field: 'file', message: 'must be sent as multipart/form-data' }]);
    throw notWellFormed(error);
  }
  if (!CSV_TYPES.has(mimetype.split(';')[0]!.trim().toLowerCase())) {
    throw invalidInput([{ field: 'file', constraint: { enum: [...CSV_TYPES] }, message: `has type ${mimetype}; send text/csv` }]);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw invalidInput([{ field: 'file', message: 'must be UTF-8 text' }]);
  }
  // The file is stored as text until the job has read it, and PostgreSQL text cannot hold U+0000.
  if (unstorableText(text).length > 0) throw invalidInput([{ field: 'file', message: 'must not contain U+0000' }]);
  return text;
}

export interface CustomerRouteDeps extends WalletAuthRouteDeps {
  /** Business customers' beneficial owners (beneficial-owners' implementation, wired in app.ts). */
  owners: OwnerLookup;
}

export const customerRoutes: FastifyPluginAsyncTypebox<CustomerRouteDeps> = async (app, deps) => {
  /** A customer answer with its beneficial owners when it is a business. */
  const withOwners = async <T>(db: Parameters<typeof attachOwners>[0], platformId: string, body: T): Promise<T> => {
    await attachOwners(db, deps.owners, platformId, [body]);
    return body;
  };
  const tags = ['Customers'];
  const terms = getEndUserTerms(deps.config);

  await app.register(multipart, { limits: { fileSize: MAX_CSV_BYTES, files: 1, fields: 0, parts: 1 } });
  deps.jobs.register(IMPORT_JOB, async (job, checkpoint) => {
    const payload = job.payload as ImportJobPayload;
    try {
      await runImport(deps.db, deps.clock, deps.identifiers, job.platform_id!, payload, terms, checkpoint);
    } catch (error) {
      // The last attempt: the import ends FAILED (BULK_UPLOAD.FAILED) instead of staying PROCESSING for ever.
      if (!(error instanceof JobTakenOver) && job.attempts >= job.max_attempts) await failImport(deps.db, deps.clock, job.platform_id!, payload);
      throw error;
    }
  });
  deps.jobs.register(CONFIG_ACCOUNTS_JOB, async (job, checkpoint) =>
    openAccountsAfterConfigChange(deps.db, deps.clock, job.platform_id!, job.payload as ConfigAccountsJobPayload, checkpoint),
  );

  app.post('/customers/bulk/csv', {
    schema: {
      operationId: 'uploadCustomersCsv',
      tags,
      summary: 'Import customers from a CSV file',
      description:
        'multipart/form-data with one part `file` (CSV, UTF-8, at most 10 MB, 100 columns, 100,000 rows, 64 KiB per record). The header names the columns: ' +
        'customerType (required), upstream\'s template columns (umaAddress, platformCustomerId, fullName, birthDate, addressLine1, addressLine2, city, state, ' +
        'postalCode, country, email, businessLegalName, businessRegistrationNumber, businessTaxId), every other field of POST /customers by its name ' +
        '(an individual\'s: region, currencies, phoneNumber, nationality, idType, identifier, …; a business\'s `businessInfo.x` as `businessX`: ' +
        'businessDoingBusinessAs, businessCountry (defaults to country), businessIncorporatedOn, businessEntityType, businessType, …). List cells separate values with `;`. ' +
        'platformAccountId and description are accepted and ignored. Each row is validated like POST /customers; a row with fewer or more cells than the header fails. ' +
        'A background job creates the rows in batches; one bad row never blocks the others, and a row whose platformCustomerId already exists fails with CONFLICT, ' +
        'so uploading a file again creates no duplicates. The job ends COMPLETED, or FAILED when no row could be created. ' +
        'Send `Idempotency-Key` to make a retried upload safe for rows without a platformCustomerId: the same file under the key answers the first job again.',
      consumes: ['multipart/form-data'],
      idempotencyKey: true,
      multipartBody: CustomerCsvUpload,
      response: { 202: ImportJobAccepted, ...errorResponses(400, 401, 403, 500) },
    },
    // readCsvUpload reads the file into memory: it reserves its length from the body budget.
    config: { permission: 'MANAGE', multipartInMemoryBytes: MAX_CSV_BYTES },
    handler: async (request, reply) => {
      const text = await readCsvUpload(request);
      const rows = await checkImportFile(text);
      // With an Idempotency-Key, the same file again replays the first job; another file under the key is 409.
      return sendWrite(deps, request, reply, async (trx) => ({ statusCode: 202, body: await startImport(trx, deps.clock, request.principal, text, rows) }), {
        idempotent: true,
        fingerprintBody: { fileSha256: createHash('sha256').update(text).digest('hex') },
      });
    },
  });

  app.get('/customers/bulk/jobs/:jobId/errors', {
    schema: {
      operationId: 'getBulkCustomerImportErrors',
      tags,
      summary: 'Download the errors of a CSV import as CSV',
      description:
        'Corridor extension. Every failed row of the job (the JSON job lists the first 1,000), one CSV line per invalid field: ' +
        '`row,line,correlationId,code,field,message`. Every cell is quoted, and a value a spreadsheet would read as a formula ' +
        '(starting with `=`, `+`, `-`, `@`, tab or carriage return) is prefixed with `\'`.',
      params: ImportJobParams,
      produces: ['text/csv'],
      response: { 200: Type.String({ description: 'text/csv' }), ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request, reply) => {
      const report = await importErrorReport(deps.db, request.principal.platformId, request.params.jobId);
      const name = `${request.params.jobId.replace(':', '-')}-errors.csv`;
      return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`).send(report as never);
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
      idempotencyKey: true,
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
        async (trx) => ({
          statusCode: 201,
          body: await withOwners(trx, platformId, await createCustomer(trx, deps.clock, deps.identifiers, { platformId, environment }, terms, request.body as CustomerCreate)),
        }),
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
    handler: async (request) => {
      const page = await listCustomers(deps.db, request.principal.platformId, request.query);
      await attachOwners(deps.db, deps.owners, request.principal.platformId, page.data);
      return page;
    },
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
      description: 'The settings as they apply to this platform: a setting that has no effect in its environment reads false.',
      response: { 200: CustomerSettings, ...errorResponses(401, 500) },
    },
    handler: async (request) => getSettings(deps.db, request.principal.platformId),
  });

  app.patch('/customers/settings', {
    schema: {
      operationId: 'updateCustomerSettings',
      tags,
      summary: 'Change onboarding settings',
      description:
        'Corridor extension; settings left out keep their value. `sandboxAutoApprove: false` makes sandbox individuals go through the full ' +
        'verification review; a production platform never auto-approves (GET shows false) and turning it on there is 403 FORBIDDEN (`details.field: sandboxAutoApprove`). `platformKyc: true` says the platform runs its own KYC/KYB: the `kycStatus`/`kybStatus` it sends on POST /customers is honoured. ' +
          'A production platform may turn it on only as a regulated financial institution (`isRegulatedFinancialInstitution` in GET /config, set by the operator when creating the platform), else 403 FORBIDDEN (`details.field: platformKyc`).',
      body: CustomerSettingsUpdate,
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
    handler: async (request) =>
      withOwners(deps.db, request.principal.platformId, await getCustomer(deps.db, request.principal.platformId, request.params.customerId)),
  });

  for (const { operation } of Object.values(CONTACT_OPERATIONS)) {
    deps.signed.register(operation, {
      execute: async (trx, row) => ({
        statusCode: 200,
        body: await withOwners(
          trx,
          row.platform_id,
          await changeTiedContact(trx, deps.clock, deps.identifiers, row.platform_id, terms, row.target_id, row.context.body, row.context.tied as TiedCredentials),
        ),
      }),
    });
  }

  app.patch('/customers/:customerId', {
    schema: {
      operationId: 'updateCustomer',
      tags,
      summary: 'Update a customer',
      description:
        'Fields left out stay as they are. Every invalid field is reported in one 400 INVALID_INPUT. 410 CUSTOMER_DELETED for a deleted customer. ' +
        "Changing an e-mail that an embedded wallet's EMAIL_OTP credential is tied to, or a phone number an SMS_OTP credential is tied to, answers 202 with a " +
        'signed-retry challenge (sign it with a session of the wallet; an end user who never logged in logs in with the EMAIL_OTP credential first); the ' +
        'signed retry changes the customer contact and every tied credential together and answers 200 (or 200 `{status: PROCESSING}`). E-mail and phone in ' +
        'one request: 400. A contact that another wallet\'s OTP credential carries: 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS (e-mail) or CONFLICT (phone). Tied ' +
        'credentials added or revoked since the 202: 409 EMAIL_OTP_CREDENTIAL_SET_CHANGED; a tied credential that no longer carries the old contact (a ' +
        'competing change was signed first): 424 EMAIL_OTP_CREDENTIAL_SYNC_FAILED. Either leaves everything unchanged. While a verification of the ' +
        'customer is IN_PROGRESS or PENDING_MANUAL_REVIEW, a change of a profile field or the tax identifier is 409 CONFLICT (`details.reason: ' +
        'UNDER_REVIEW`, `details.fields`); contact fields, currencies, umaAddress and consent may change.',
      params: CustomerParams,
      headers: SignedRetryHeaders,
      body: CustomerUpdateRequest,
      response: {
        200: Type.Union([Customer, WalletOperationProcessing]),
        202: SignedRequestChallenge,
        ...errorResponses(400, 401, 403, 404, 409, 410, 424, 500),
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
        const { operation } = CONTACT_OPERATIONS[contactKindOf(request.body) ?? 'email'];
        return answerSignedRetry(deps.signed, request, reply, operation, customerId, signedHeaders);
      }
      return sendWrite(deps, request, reply, async (trx) => {
        const change = await signedContactChange(trx, platformId, customerId, request.body);
        const update = () => updateCustomer(trx, deps.clock, deps.identifiers, platformId, terms, customerId, request.body, schemaErrors);
        if (!change) return { statusCode: 200, body: await withOwners(trx, platformId, await update()) };
        // Every field error is reported before the challenge; the change itself waits for the signature.
        await dryRun(trx, update);
        await checkContactChange(trx, platformId, customerId, change);
        const { operation, activity, parameter } = CONTACT_OPERATIONS[change.kind];
        const challenge = await deps.walletAuth.wallets.issueFor(trx, {
          platformId,
          accountUuid: change.tied.accountUuid,
          operation,
          targetId: customerId,
          body: request.body,
          type: activity,
          parameters: { [parameter]: change.contact, userId: formatId('InternalAccount', change.tied.accountUuid) },
          tied: change.tied,
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
      description:
        'Answers the customer marked deleted. Deleting again is 410 CUSTOMER_DELETED. Refused with 409 CONFLICT while money depends on the customer: ' +
        'an internal account of theirs holds money or has money held towards it (`details.reason: BALANCE_NOT_ZERO`, `accountIds`), or a payment ' +
        'they sent has not ended (`PAYMENT_IN_FLIGHT`, `transactionId`).',
      params: CustomerParams,
      response: { 200: Customer, ...errorResponses(400, 401, 403, 404, 409, 410, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => ({
        statusCode: 200,
        body: await withOwners(trx, request.principal.platformId, await deleteCustomer(trx, deps.clock, request.principal.platformId, request.params.customerId)),
      })),
  });
};
