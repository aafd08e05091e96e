import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ModuleDeps } from '../../platform/module.js';
import type { BlobStore } from '../../platform/blob-store.js';
import { errorResponses } from '../../platform/http/schemas.js';
import { sendWrite } from '../../platform/http/write.js';
import {
  Document,
  DocumentListQuery,
  DocumentListResponse,
  DocumentParams,
  DocumentReplaceForm,
  DocumentUploadForm,
  MAX_DOCUMENT_BYTES,
} from './schemas.js';
import { DocumentIntake } from './intake.js';
import type { ScreeningProviders } from './screening/index.js';
import { checkHolder, deleteDocument, getDocument, listDocuments, type ReviewLookup } from './service.js';

export interface DocumentDeps extends ModuleDeps {
  /** Answers whether a document's customer is under review (verifications provides it). */
  reviews: ReviewLookup;
  /** The app's intake, shared with the hosted verification page; default: one of this plugin's own. */
  intake?: DocumentIntake;
  /** For an intake of the plugin's own. Defaults: file bytes in the database; screeners chosen from the config. */
  blobs?: BlobStore;
  screening?: ScreeningProviders;
}

const UPLOAD_RULES =
  `The file part's Content-Type must be application/pdf, image/jpeg or image/png (the file name is not considered), and the file at most ` +
  `${MAX_DOCUMENT_BYTES} bytes (10 MiB); otherwise 400 INVALID_INPUT, listing every invalid part. The file is screened before anything is ` +
  'stored: a rejection is 422 DOCUMENT_REJECTED with `precheckErrors` (dataNotReadable, screenshot, grayscale, documentExpired, glare, …). ' +
  '503 SERVICE_UNAVAILABLE with Retry-After when the file cannot be taken now (too many uploads are waiting for screening, or there is ' +
  'no room to receive it; `details.reason` SCREENING_QUEUE_FULL, SCREENING_WAIT_EXPIRED, STORAGE_FULL): nothing is stored; send it again later.';

export const documentRoutes: FastifyPluginAsyncTypebox<DocumentDeps> = async (app, deps) => {
  const tags = ['Documents'];
  let intake = deps.intake;
  if (!intake) {
    const own = (intake = await DocumentIntake.open(deps));
    app.addHook('onClose', async () => own.close());
  }
  const blobs = intake.blobs;

  await app.register(multipart);
  // Any other body reaches the handler, which answers 400 INVALID_INPUT rather than 415.
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.post('/documents', {
    schema: {
      operationId: 'uploadDocument',
      tags,
      summary: 'Upload a document for a customer or beneficial owner',
      description: `multipart/form-data. ${UPLOAD_RULES} A rejected file creates no document. An unknown documentHolder is 404.`,
      consumes: ['multipart/form-data'],
      multipartBody: DocumentUploadForm,
      response: { 201: Document, ...errorResponses(400, 401, 403, 404, 410, 422, 500, 503) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) => {
      const { platformId, environment } = request.principal;
      const document = await intake.upload(request, platformId, environment, (fields) => checkHolder(deps.db, platformId, fields.documentHolder));
      return reply.code(201).send(document);
    },
  });

  app.get('/documents', {
    schema: {
      operationId: 'listDocuments',
      tags,
      summary: 'List documents',
      description: 'Newest first. `documentHolder` narrows the list to one customer or beneficial owner.',
      querystring: DocumentListQuery,
      response: { 200: DocumentListResponse, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => listDocuments(deps.db, request.principal.platformId, request.query),
  });

  app.get('/documents/:documentId', {
    schema: {
      operationId: 'getDocument',
      tags,
      summary: 'Read a document',
      params: DocumentParams,
      response: { 200: Document, ...errorResponses(400, 401, 404, 500) },
    },
    handler: async (request) => getDocument(deps.db, request.principal.platformId, request.params.documentId),
  });

  app.put('/documents/:documentId', {
    schema: {
      operationId: 'replaceDocument',
      tags,
      summary: 'Replace a document',
      description:
        `multipart/form-data. ${UPLOAD_RULES} On success the previous file becomes inactive (it is kept, never served as current), the ` +
        'new file is active and the metadata is the one sent here (parts left out are cleared). On 422 the document keeps its previous ' +
        'file and metadata. Errors of earlier verifications stay until a new POST /verifications gives a new verdict. Replacing is for a ' +
        'document a verification rejected (or one no review has judged yet): 409 CONFLICT while a verification of its customer is ' +
        'IN_PROGRESS or PENDING_MANUAL_REVIEW, once the customer is REJECTED, and when the latest review accepted the current file ' +
        '(`details.reason`: REVIEW_UNDERWAY, CUSTOMER_REJECTED, ACCEPTED_IN_REVIEW). 410 CUSTOMER_DELETED for a deleted customer.',
      consumes: ['multipart/form-data'],
      params: DocumentParams,
      multipartBody: DocumentReplaceForm,
      response: { 200: Document, ...errorResponses(400, 401, 403, 404, 409, 410, 422, 500, 503) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request) => {
      const { platformId, environment } = request.principal;
      return intake.replace(request, platformId, environment, request.params.documentId);
    },
  });

  app.delete('/documents/:documentId', {
    schema: {
      operationId: 'deleteDocument',
      tags,
      summary: 'Delete a document',
      description:
        'Deletes the document and all its files. 409 CONFLICT once it was submitted for verification (a review read it; `details.reason` ' +
        'SUBMITTED_FOR_VERIFICATION: replace it if a verification rejected it), and while a verification of its customer is IN_PROGRESS ' +
        'or PENDING_MANUAL_REVIEW (REVIEW_UNDERWAY).',
      params: DocumentParams,
      response: { 204: { type: 'null', description: 'Deleted.' }, ...errorResponses(400, 401, 403, 404, 409, 500) },
    },
    config: { permission: 'MANAGE' },
    handler: async (request, reply) =>
      sendWrite(deps, request, reply, async (trx) => {
        await deleteDocument(trx, blobs, deps.reviews, request.principal.platformId, request.params.documentId);
        return { statusCode: 204, body: undefined };
      }),
  });
};
