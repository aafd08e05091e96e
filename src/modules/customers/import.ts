import type { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { Clock } from '../../platform/clock.js';
import type { TenantSecretBox } from '../../platform/crypto/secret-box.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { inSavepoint, withTx } from '../../platform/db/tx.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { compileBodySchema, toFieldErrors } from '../../platform/http/validation.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob, type JobCheckpoint } from '../../platform/jobs/index.js';
import { recordEvent } from '../../platform/outbox.js';
import { csvStream, CsvFileError, headerErrors, neutraliseDeep, readCsv, rowToRequest, toColumnErrors, type CsvRecord } from './csv.js';
import {
  abandonImport,
  countImportBatch,
  findImport,
  findImportStatus,
  finishImport,
  insertImport,
  insertImportErrors,
  listImportErrors,
  type ImportError,
  type ImportRow,
  type ImportStatusRow,
} from './repo.js';
import { CustomerCreateRequest, type CustomerCreate } from './schemas.js';
import { createCustomer, createCustomers, type CallerContext, type CreateOutcome } from './create-update.js';
import { mergeFieldErrors, ruleErrors, type EndUserTerms } from './validation.js';

export const IMPORT_JOB = 'customers.bulk-import';
/**
 * Rows per transaction: validated one by one, created together (createCustomers: a fixed number
 * of statements per batch), the batch's progress and errors committed with them. 500 rows keep
 * each insert well under PostgreSQL's 65,535 parameters and a batch's transaction short.
 */
export const IMPORT_BATCH_ROWS = 500;
/** Rows validated between two turns of the event loop, so requests are answered during an import. */
const VALIDATE_SLICE_ROWS = 50;
/** The job report lists this many errors; the CSV report (GET …/errors) lists them all. */
const REPORT_ERRORS = 1000;

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

/** The job as reported (API, webhooks): every value that came from the file is neutralised against formula injection. */
async function toImportJob(db: DbOrTx, row: ImportStatusRow): Promise<ImportJob> {
  return {
    id: formatId('Job', row.id),
    status: row.status,
    progress: { total: row.total, processed: row.processed, successful: row.successful, failed: row.failed },
    errors: neutraliseDeep(await listImportErrors(db, row.platform_id, row.id, -1, REPORT_ERRORS)),
    ...(row.completed_at ? { completedAt: row.completed_at.toISOString() } : {}),
  };
}

/**
 * A file's header: its named columns, and how many cells wide it is. A spreadsheet's export may
 * end the header with unnamed, empty cells ("a,b,c,"); those columns are not columns, and a row's
 * cells under them must be empty.
 */
interface CsvHeader {
  columns: string[];
  width: number;
}

function readHeader(cells: string[]): CsvHeader {
  const trimmed = cells.map((h) => h.trim());
  let named = trimmed.length;
  while (named > 0 && trimmed[named - 1] === '') named--;
  return { columns: trimmed.slice(0, named), width: trimmed.length };
}

/** The header, and every record after it; a file that breaks the limits or RFC 4180 is a 400 naming the line. */
async function* records(text: string): AsyncGenerator<{ header: CsvHeader } | CsvRecord> {
  try {
    let header: CsvHeader | undefined;
    for await (const record of readCsv(text)) {
      if (!header) {
        header = readHeader(record.cells);
        const errors = headerErrors(header.columns);
        if (errors.length) throw invalidInput(errors, 'The CSV header has unknown or missing columns.');
        yield { header };
        continue;
      }
      yield record;
    }
    if (!header) throw invalidInput([{ field: 'file', message: 'is empty; it needs a header and at least one row' }]);
  } catch (error) {
    if (error instanceof CsvFileError) throw invalidInput([{ field: 'file', message: error.message }]);
    throw error;
  }
}

/** Reads the whole file once at upload, so a broken file is a 400 and not a failed job; answers its row count. */
export async function checkImportFile(text: string): Promise<number> {
  let rows = 0;
  for await (const record of records(text)) if (!('header' in record)) rows++;
  if (rows === 0) throw invalidInput([{ field: 'file', message: 'has a header but no rows' }]);
  return rows;
}

/** Checks the file's shape now and queues its rows. */
export async function startImport(trx: Tx, clock: Clock, caller: CallerContext, text: string, rows: number): Promise<{ jobId: string; status: 'PENDING' }> {
  const now = clock.now();
  const id = uuidv7(now.getTime());
  await insertImport(trx, {
    id,
    platform_id: caller.platformId,
    status: 'PENDING',
    csv: text,
    total: rows,
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

async function loadImport(db: DbOrTx, platformId: string, jobId: string): Promise<ImportStatusRow> {
  const uuid = parseId('Job', jobId);
  const row = uuid && (await findImportStatus(db, platformId, uuid));
  if (!row) throw new AppError('BULK_UPLOAD_JOB_NOT_FOUND', `Bulk upload job ${jobId} was not found.`);
  return row;
}

export async function getImport(db: DbOrTx, platformId: string, jobId: string): Promise<ImportJob> {
  return toImportJob(db, await loadImport(db, platformId, jobId));
}

export const ERROR_REPORT_COLUMNS = ['row', 'line', 'correlationId', 'code', 'field', 'message'];

/** Every error of a job as CSV rows: one per invalid field (one per row when no field is named). */
export async function importErrorReport(db: DbOrTx, platformId: string, jobId: string): Promise<Readable> {
  const job = await loadImport(db, platformId, jobId);
  async function* rows(): AsyncGenerator<Array<string | number>> {
    let after = -1;
    for (;;) {
      const page = await listImportErrors(db, platformId, job.id, after, 500);
      for (const e of page) {
        const fields = (e.details?.errors as FieldError[] | undefined) ?? [];
        const base = [e.row ?? '', e.line ?? '', e.correlationId, e.code];
        if (fields.length === 0) yield [...base, '', e.message];
        for (const f of fields) yield [...base, f.field, f.message ?? e.message];
      }
      if (page.length < 500) return;
      after = page.at(-1)!.row ?? 0;
    }
  }
  return csvStream(ERROR_REPORT_COLUMNS, rows());
}

/** Why one row was not created, in the FieldError shape of POST /customers, named by CSV column. */
function rowError(record: CsvRecord, correlationId: string, error: AppError): ImportError {
  const details = error.details?.errors ? { ...error.details, errors: toColumnErrors(error.details.errors as FieldError[]) } : error.details;
  return { row: record.row, line: record.line, correlationId, code: error.code, message: error.message, ...(details ? { details } : {}) };
}

/** A row's request, or the error that keeps it from being one (checked without the database). */
function prepareRow(header: CsvHeader, record: CsvRecord, now: Date): { request: Record<string, unknown>; correlationId: string; error?: AppError } {
  const request = rowToRequest(header.columns, record.cells);
  const correlationId = typeof request.platformCustomerId === 'string' ? request.platformCustomerId : `row ${record.row}`;
  const named = header.columns.length;
  if (record.cells.length < named || record.cells.length > header.width) {
    const expected = named === header.width ? `${named}` : `${named} to ${header.width}`;
    const error = invalidInput(
      [{ field: 'file', message: `row ${record.row} (line ${record.line}) has ${record.cells.length} cells; the header has ${expected}` }],
      `Row ${record.row} (line ${record.line}) has ${record.cells.length < named ? 'fewer' : 'more'} cells than the header.`,
    );
    return { request, correlationId, error };
  }
  const unnamed = record.cells.findIndex((cell, index) => index >= named && cell.trim() !== '');
  if (unnamed >= 0) {
    const error = invalidInput(
      [{ field: 'file', message: `row ${record.row} (line ${record.line}) has a value in column ${unnamed + 1}, which the header leaves unnamed` }],
      `Row ${record.row} (line ${record.line}) has a value under a column the header does not name.`,
    );
    return { request, correlationId, error };
  }
  const schemaErrors = validateRow(request) ? [] : toFieldErrors(validateRow.errors ?? []);
  const type = request.customerType === 'INDIVIDUAL' || request.customerType === 'BUSINESS' ? request.customerType : undefined;
  const errors = mergeFieldErrors(schemaErrors, type ? ruleErrors(request, request, type, now, 'create') : []);
  return { request, correlationId, ...(errors.length ? { error: invalidInput(errors, 'The row has invalid fields.') } : {}) };
}

class ImportTakenOver extends Error {}

type PreparedRow = { record: CsvRecord } & ReturnType<typeof prepareRow>;

/** Validates a batch's rows (synchronous work), giving the event loop to the API's requests every few rows. */
async function prepareBatch(header: CsvHeader, batch: CsvRecord[], now: Date): Promise<PreparedRow[]> {
  const prepared: PreparedRow[] = [];
  for (const record of batch) {
    prepared.push({ record, ...prepareRow(header, record, now) });
    if (prepared.length % VALIDATE_SLICE_ROWS === 0) await setImmediate();
  }
  return prepared;
}

/**
 * Creates the customers of the file's rows, IMPORT_BATCH_ROWS per transaction: every row is
 * validated on its own (a bad row never blocks the others), the valid ones are created together
 * (falling back to one savepoint per row if the database refuses the batch), and the batch's
 * customers, progress, errors and the job's checkpoint commit together. The next batch is read
 * and validated while the database writes the current one (the transactions themselves run one
 * after another, in file order). A crash resumes after the last committed batch; a row
 * is counted once even if two workers hold the job (`processed` must still be the batch's
 * start). A row whose platformCustomerId already exists fails with 409 CONFLICT, so uploading
 * the same file again creates no duplicates.
 */
export async function runImport(
  db: Db,
  clock: Clock,
  identifiers: TenantSecretBox,
  platformId: string,
  payload: ImportJobPayload,
  terms: EndUserTerms,
  checkpoint: JobCheckpoint,
): Promise<void> {
  const job = await findImport(db, platformId, payload.importId);
  if (!job || job.status === 'COMPLETED' || job.status === 'FAILED' || job.csv === null) return;
  const caller: CallerContext = { platformId, environment: payload.environment };
  let header: CsvHeader = { columns: [], width: 0 };
  let processed = job.processed;
  let batch: CsvRecord[] = [];

  const commit = async (prepared: PreparedRow[]) => {
    const start = processed;
    await withTx(db, async (trx) => {
      const errors: ImportError[] = [];
      const valid = prepared.filter((row) => !row.error);
      let successful = 0;
      for (const row of prepared) if (row.error) errors.push(rowError(row.record, row.correlationId, row.error));
      let outcomes: CreateOutcome[];
      try {
        outcomes = await inSavepoint(trx, 'import_batch', () =>
          createCustomers(
            trx,
            clock,
            identifiers,
            caller,
            terms,
            valid.map((row) => row.request as CustomerCreate),
          ),
        );
      } catch (failure) {
        // Something the database refused that validation did not foresee: row by row, each in
        // its own savepoint, so the failure is pinned to its row and the others still go in.
        if (failure instanceof AppError) throw failure;
        outcomes = [];
        for (const row of valid) {
          try {
            const customer = await inSavepoint(trx, 'import_row', () => createCustomer(trx, clock, identifiers, caller, terms, row.request as CustomerCreate));
            outcomes.push({ customer });
          } catch (rowFailure) {
            if (!(rowFailure instanceof AppError)) throw rowFailure;
            outcomes.push({ error: rowFailure });
          }
        }
      }
      outcomes.forEach((outcome, i) => {
        if ('customer' in outcome) successful++;
        else errors.push(rowError(valid[i]!.record, valid[i]!.correlationId, outcome.error));
      });
      errors.sort((a, b) => (a.row ?? 0) - (b.row ?? 0));
      if (!(await countImportBatch(trx, platformId, job.id, start, { successful, errors }, clock.now()))) throw new ImportTakenOver();
      await checkpoint(trx, payload);
    });
    processed += prepared.length;
  };

  /** The batch being written, if any: the next one is validated meanwhile, and committed after it. */
  let writing: Promise<void> | undefined;
  const hand = async () => {
    const prepared = await prepareBatch(header, batch, clock.now());
    batch = [];
    await writing;
    writing = commit(prepared);
    // Awaited before the next batch is handed over (or at the end); until then a failure waits there.
    writing.catch(() => {});
  };

  try {
    let index = 0;
    for await (const record of records(job.csv)) {
      if ('header' in record) {
        header = record.header;
        continue;
      }
      if (index++ < processed) continue;
      batch.push(record);
      if (batch.length === IMPORT_BATCH_ROWS) await hand();
    }
    if (batch.length) await hand();
    await writing;
  } catch (error) {
    // Another worker took the job over after our lease ran out; it carries on from its row.
    if (error instanceof ImportTakenOver) return;
    // Leave no transaction running behind a failure of reading or validating.
    await writing?.catch(() => {});
    throw error;
  }
  await withTx(db, async (trx) => {
    const finished = await finishImport(trx, platformId, job.id, clock.now());
    if (finished) await announce(trx, clock, finished);
  });
}

/** BULK_UPLOAD.COMPLETED or BULK_UPLOAD.FAILED, with the job report, in the transaction that ends the job. */
async function announce(trx: Tx, clock: Clock, row: ImportRow): Promise<void> {
  const report = await toImportJob(trx, row);
  await recordEvent(trx, clock, { platformId: row.platform_id, type: `BULK_UPLOAD.${row.status}`, resourceId: report.id, data: report });
}

/** The job gave up (its last attempt failed; the log has why): the import ends FAILED, saying so, and is announced. */
export async function failImport(db: Db, clock: Clock, platformId: string, payload: ImportJobPayload): Promise<void> {
  await withTx(db, async (trx) => {
    const failed = await abandonImport(trx, platformId, payload.importId, clock.now());
    if (!failed) return;
    await insertImportErrors(trx, platformId, failed.id, [
      {
        correlationId: formatId('Job', failed.id),
        code: 'INTERNAL_ERROR',
        message: `The import stopped after ${failed.processed} of ${failed.total} rows because it failed repeatedly. Upload the remaining rows again.`,
      },
    ]);
    await announce(trx, clock, failed);
  });
}
