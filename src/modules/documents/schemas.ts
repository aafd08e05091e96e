import Type, { type Static } from 'typebox';
import { DateTime, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum } from '../../platform/http/schemas.js';
import { DOCUMENT_TYPES } from './catalogue.js';
import { DOCUMENT_CONTENT_TYPES } from './screening/screener.js';

/** 10 MiB: the largest file accepted (spec §8 "at most 10 MB"); one byte more is 400 INVALID_INPUT. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;

export const SIDES = ['FRONT', 'BACK'] as const;
/** The longest document number accepted (the hosted page's field says the same). */
export const MAX_DOCUMENT_NUMBER_LENGTH = 64;

const DocumentHolderId = Type.String({
  pattern: '^(Customer|BeneficialOwner):[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
  maxLength: 52,
  description: 'The customer or beneficial owner the document belongs to.',
  examples: ['Customer:019542f5-b3e7-1d02-0000-000000000001'],
});

const DocumentFields = {
  documentType: StringEnum(DOCUMENT_TYPES, { description: 'What the document is (spec DocumentType).' }),
  side: Type.Optional(StringEnum(SIDES, { description: 'Side of a two-sided document (DRIVERS_LICENSE, NATIONAL_ID).' })),
  country: Type.String({ format: 'iso3166-1-alpha-2', description: 'Issuing country, ISO 3166-1 alpha-2.', examples: ['US'] }),
  documentNumber: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_DOCUMENT_NUMBER_LENGTH, description: 'Identification number printed on the document.' })),
  issuingAuthority: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Agency or organisation that issued the document.' })),
};

export const Document = Type.Object(
  {
    id: ResourceId('Document'),
    documentHolder: DocumentHolderId,
    ...DocumentFields,
    fileName: Type.String({ description: 'File name of the current file, as uploaded.' }),
    createdAt: DateTime({ description: 'When the document was uploaded.' }),
    updatedAt: Type.Optional(DateTime({ description: 'When the document or its file last changed.' })),
  },
  { title: 'Document' },
);
export type Document = Static<typeof Document>;

const FilePart = Type.String({
  format: 'binary',
  'x-part-content-types': DOCUMENT_CONTENT_TYPES,
  description:
    `The file; its part's Content-Type must be one of ${DOCUMENT_CONTENT_TYPES.join(', ')} (the file name's extension is ignored). ` +
    `At most ${MAX_DOCUMENT_BYTES} bytes (10 MiB).`,
});

/** Text parts of a replace (PUT); validated as one object so every problem is reported at once. */
export const DocumentReplaceFields = Type.Object(DocumentFields, { additionalProperties: false });
/** Text parts of an upload (POST). */
export const DocumentUploadFields = Type.Object({ documentHolder: DocumentHolderId, ...DocumentFields }, { additionalProperties: false });
export type DocumentReplaceFields = Static<typeof DocumentReplaceFields>;
export type DocumentUploadFields = Static<typeof DocumentUploadFields>;

/** The multipart bodies as OpenAPI documents them (the file plus the text parts). */
export const DocumentUploadForm = Type.Object({ file: FilePart, documentHolder: DocumentHolderId, ...DocumentFields }, { title: 'DocumentUploadRequest' });
export const DocumentReplaceForm = Type.Object({ file: FilePart, ...DocumentFields }, { title: 'DocumentReplaceRequest' });

export const DocumentParams = Type.Object({ documentId: IdParam('Document', 'REFERENCE_NOT_FOUND') }, { additionalProperties: false });
export const DocumentListQuery = Type.Object({ documentHolder: Type.Optional(DocumentHolderId), ...PaginationQuery }, { additionalProperties: false });
export type DocumentListQuery = Static<typeof DocumentListQuery>;
export const DocumentListResponse = ListResponse(Document, 'DocumentListResponse');
