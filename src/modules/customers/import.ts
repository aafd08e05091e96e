import type { Clock } from '../../platform/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { compileBodySchema, toFieldErrors } from '../../platform/http/validation.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob } from '../../platform/jobs.js';
import { recordEvent } from '../../platform/outbox.js';
import { headerErrors, parseCsv, rowToRequest, toColumnErrors } from './csv.js';
import { countImportRow, findImport, finishImport, insertImport, type ImportError, type ImportRow } from './repo.js';
import { CustomerCreateRequest, type CustomerCreate } from './schemas.js';
import { createCustomer, type CallerContext } from './create-update.js';
import { mergeFieldErrors, ruleErrors, type EndUserTerms } from './validation.js';

export const IMPORT_JOB = 'customers.bulk-import';
/** Rows per job run, so one run stays well inside the job lease; the rest continues in a new run. */
const ROWS_PER_RUN = 500;

export interface ImportJobPayload {
  importId: string;
  environment: CallerContext['environment'];
}

export interface ImportJob {
  id: string;
  status: ImportRow['status'];
  progress: { total: number; processed: number; successful: number; failed: number };
  errors: ImportError[];
  completedAt?: string;
}

const validateRow = compileBodySchema(CustomerCreateRequest as object);

function toImportJob(row: ImportRow): ImportJob {
  return {
    id: formatId('Job', row.id),
    status: row.status,
    progress: { total: row.total, processed: row.processed, successful: row.successful, failed: row.failed },
    errors: row.errors,
    ...(row.completed_at ? { completedAt: row.completed_at.toISOString() } : {}),
  };
}

function parseFile(text: string): { header: string[]; rows: string[][] } {
  const parsed = parseCsv(text);
  if ('brokenAt' in parsed) throw invalidInput([{ field: 'file', message: `is not valid CSV: unbalanced quotes in record ${parsed.brokenAt}` }]);
  const [header, ...rows] = parsed.records;
  if (!header) throw invalidInput([{ field: 'file', message: 'is empty; it needs a header and at least one row' }]);
  const errors = headerErrors(header);
  if (errors.length) throw invalidInput(errors, 'The CSV header has unknown or missing columns.');
  if (rows.length === 0) throw invalidInput([{ field: 'file', message: 'has a header but no rows' }]);
  return { header: header.map((h) => h.trim()), rows };
}

/** Checks the file's shape now (so a broken file is a 400, not a failed job) and queues its rows. */
export async function startImport(trx: Tx, clock: Clock, caller: CallerContext, text: string): Promise<{ jobId: string; status: 'PENDING' }> {
  const { rows } = parseFile(text);
  const now = clock.now();
  const id = uuidv7(now.getTime());
  await insertImport(trx, {
    id,
    platform_id: caller.platformId,
    status: 'PENDING',
    csv: text,
    total: rows.length,
    processed: 0,
    successful: 0,
    failed: 0,
    errors: [],
    created_at: now,
    updated_at: now,
    completed_at: null,
  });
  const payload: ImportJobPayload = { importId: id, environment: caller.environment };
  await enqueueJob(trx, clock, { kind: IMPORT_JOB, payload, platformId: caller.platformId });
  return { jobId: formatId('Job', id), status: 'PENDING' };
}

export async function getImport(db: DbOrTx, platformId: string, jobId: string): Promise<ImportJob> {
  const uuid = parseId('Job', jobId);
  const row = uuid && (await findImport(db, platformId, uuid));
  if (!row) throw new AppError('BULK_UPLOAD_JOB_NOT_FOUND', `Bulk upload job ${jobId} was not found.`);
  return toImportJob(row);
}

/** Why one row was not created, in the FieldError shape of POST /customers, named by CSV column. */
function rowError(rowNumber: number, correlationId: string, error: AppError): ImportError {
  const details = error.details?.errors
    ? { ...error.details, errors: toColumnErrors(error.details.errors as FieldError[]) }
    : error.details;
  return { row: rowNumber, correlationId, code: error.code, message: error.message, ...(details ? { details } : {}) };
}

class ImportTakenOver extends Error {}

/**
 * Creates the customers of up to ROWS_PER_RUN rows, each in its own transaction together with
 * the job's progress, so a bad row never blocks the others and a crash resumes exactly where
 * it stopped. A row whose platformCustomerId already exists fails with 409 CONFLICT, so
 * uploading the same file again creates no duplicates.
 */
export async function runImport(db: Db, clock: Clock, platformId: string, payload: ImportJobPayload, terms: EndUserTerms): Promise<void> {
  const job = await findImport(db, platformId, payload.importId);
  if (!job || job.status === 'COMPLETED' || job.csv === null) return;
  const { header, rows } = parseFile(job.csv);
  const caller: CallerContext = { platformId, environment: payload.environment };
  const end = Math.min(rows.length, job.processed + ROWS_PER_RUN);
  try {
    for (let index = job.processed; index < end; index++) {
      const rowNumber = index + 2;
      const request = rowToRequest(header, rows[index]!);
      const correlationId = typeof request.platformCustomerId === 'string' ? request.platformCustomerId : `row ${rowNumber}`;
      try {
        if (rows[index]!.length > header.length) {
          throw invalidInput([{ field: 'file', message: `row has ${rows[index]!.length} cells; the header has ${header.length}` }]);
        }
        const schemaErrors = validateRow(request) ? [] : toFieldErrors(validateRow.errors ?? []);
        const type = request.customerType === 'INDIVIDUAL' || request.customerType === 'BUSINESS' ? request.customerType : undefined;
        const errors = mergeFieldErrors(schemaErrors, type ? ruleErrors(request, request, type, clock.now(), 'create') : []);
        if (errors.length) throw invalidInput(errors, 'The row has invalid fields.');
        await withTx(db, async (trx) => {
          await createCustomer(trx, clock, caller, terms, request as CustomerCreate);
          if (!(await countImportRow(trx, job.id, index, { ok: true }, clock.now()))) throw new ImportTakenOver();
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const counted = await withTx(db, (trx) => countImportRow(trx, job.id, index, { ok: false, error: rowError(rowNumber, correlationId, error) }, clock.now()));
        if (!counted) throw new ImportTakenOver();
      }
    }
  } catch (error) {
    // Another worker took the job over after our lease ran out; it carries on from its row.
    if (error instanceof ImportTakenOver) return;
    throw error;
  }
  await withTx(db, async (trx) => {
    if (end < rows.length) {
      await enqueueJob(trx, clock, { kind: IMPORT_JOB, payload, platformId });
      return;
    }
    const finished = await finishImport(trx, job.id, clock.now());
    if (finished) {
      const summary = toImportJob(finished);
      await recordEvent(trx, clock, { platformId, type: 'BULK_UPLOAD.COMPLETED', resourceId: summary.id, data: summary });
    }
  });
}
