import type { FastifyRequest } from 'fastify';
import { invalidInput, type FieldError } from '../../platform/errors.js';
import { receiveForm, type FormFile, type UploadSpool } from '../../platform/http/multipart.js';
import { compileBodySchema, toFieldErrors } from '../../platform/http/validation.js';
import { freeTextErrors, mergeFieldErrors } from '../customers/index.js';
import { DocumentReplaceFields, DocumentUploadFields, MAX_DOCUMENT_BYTES } from './schemas.js';
import { DOCUMENT_CONTENT_TYPES, type DocumentContentType } from './screening/screener.js';
import type { UploadedFile } from './service.js';

const validateUpload = compileBodySchema(DocumentUploadFields as object);
const validateReplace = compileBodySchema(DocumentReplaceFields as object);
const ACCEPTED_TYPES: ReadonlySet<string> = new Set(DOCUMENT_CONTENT_TYPES);
const MAX_FILE_NAME_LENGTH = 255;

const LIMITS = { maxFileBytes: MAX_DOCUMENT_BYTES, maxFiles: 1, maxFields: 10, maxFieldBytes: 1024 };

export interface DocumentForm<F> {
  fields: F;
  file: UploadedFile;
  /** Removes the spooled file; call once the request is done with it. */
  discard(): Promise<void>;
}

function fileErrors(file: FormFile | undefined, sentAsText: boolean): FieldError[] {
  if (!file) {
    return [{ field: 'file', message: sentAsText ? 'must be a file part (with a filename), not a text part' : 'is required' }];
  }
  const errors: FieldError[] = [];
  if (!ACCEPTED_TYPES.has(file.contentType)) {
    errors.push({
      field: 'file',
      constraint: { enum: [...DOCUMENT_CONTENT_TYPES] },
      message: `must be one of ${DOCUMENT_CONTENT_TYPES.join(', ')} by its part's Content-Type (got ${file.contentType}; the file name is not considered)`,
    });
  }
  if (file.tooLarge) errors.push({ field: 'file', message: `must be at most ${MAX_DOCUMENT_BYTES} bytes (10 MiB)` });
  // An empty file is an invalid size (spec §4.1: 400), not a document for the provider to judge.
  if (file.sizeBytes === 0) errors.push({ field: 'file', message: 'must not be empty' });
  if (file.fileName.length === 0) errors.push({ field: 'file', message: 'needs a file name (the filename of its Content-Disposition)' });
  // Characters are code points: a name of 255 emoji is 510 UTF-16 units and still allowed.
  if ([...file.fileName].length > MAX_FILE_NAME_LENGTH) errors.push({ field: 'file', message: `file name must be at most ${MAX_FILE_NAME_LENGTH} characters` });
  return errors;
}

/** Several problems with the one `file` part become one FieldError, as for any other field. */
function mergeByField(errors: FieldError[]): FieldError[] {
  const merged = new Map<string, FieldError>();
  for (const error of errors) {
    const existing = merged.get(error.field);
    if (!existing) merged.set(error.field, { ...error });
    else {
      if (error.constraint) existing.constraint = { ...existing.constraint, ...error.constraint };
      existing.message = [existing.message, error.message].filter(Boolean).join('; ');
    }
  }
  return [...merged.values()];
}

/**
 * Reads a document upload (POST, with `documentHolder`) or replacement (PUT) form: every part
 * is checked and every problem reported in one 400 INVALID_INPUT; nothing is kept on failure.
 * A spool disk with no room is 503 SERVICE_UNAVAILABLE (`receiveForm`).
 */
export async function receiveDocumentForm(request: FastifyRequest, spool: UploadSpool, mode: 'upload'): Promise<DocumentForm<DocumentUploadFields>>;
export async function receiveDocumentForm(request: FastifyRequest, spool: UploadSpool, mode: 'replace'): Promise<DocumentForm<DocumentReplaceFields>>;
export async function receiveDocumentForm(
  request: FastifyRequest,
  spool: UploadSpool,
  mode: 'upload' | 'replace',
): Promise<DocumentForm<DocumentUploadFields | DocumentReplaceFields>> {
  const form = await receiveForm(request, spool, LIMITS);
  const { file: fileSentAsText, ...fields } = form.fields;
  const file = form.files.find((f) => f.field === 'file');
  const validate = mode === 'upload' ? validateUpload : validateReplace;
  const formErrors: FieldError[] = [
    ...form.problems,
    ...fileErrors(file, fileSentAsText !== undefined),
    ...form.files.filter((f) => f.field !== 'file').map((f) => ({ field: f.field, message: 'is not a known part; the file goes in the part named file' })),
    ...(validate(fields) ? [] : toFieldErrors(validate.errors ?? [])),
  ];
  // The free-text parts are held to the rule customers' text is (no control characters, not blank), once per part.
  const errors = mergeFieldErrors(formErrors, freeTextErrors({ documentNumber: fields.documentNumber, issuingAuthority: fields.issuingAuthority }));
  if (errors.length > 0) {
    await form.discard();
    throw invalidInput(mergeByField(errors));
  }
  return {
    fields: fields as unknown as DocumentUploadFields,
    file: { path: file!.path, sha256: file!.sha256, sizeBytes: file!.sizeBytes, fileName: file!.fileName, contentType: file!.contentType as DocumentContentType },
    discard: form.discard,
  };
}
