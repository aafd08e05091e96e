import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import { CsvError, parse } from 'csv-parse';
import { stringify } from 'csv-stringify';
import type { FieldError } from '../../platform/errors.js';
import { BusinessInfo, IndividualCustomerCreate } from './schemas.js';

/**
 * Bounds of one import file, beyond the 10 MB upload limit: a record (a row, quoted newlines
 * included) of at most 64 KiB of cell text and at most 100 cells (every record, not only the
 * header: empty cells cost no text), at most 100,000 rows. Reading stops at the first record
 * that breaches a cap, before anything is stored.
 */
export const CSV_LIMITS = { maxRecordChars: 65_536, maxColumns: 100, maxRows: 100_000 } as const;

/**
 * The event loop gets a turn between two chunks of text and every so many records (readCsv):
 * parsing a chunk, and handing on its records, are synchronous. 16 KiB of text, or 500 short
 * records, take a few milliseconds.
 */
const CHUNK_CHARS = 16 * 1024;
const RECORDS_PER_TURN = 500;

export interface CsvRecord {
  cells: string[];
  /** Record number: the header is 1; blank lines and records of blank cells are not counted. */
  row: number;
  /** Line of the file where the record starts (a quoted cell may span lines). */
  line: number;
}

/** A file that cannot be read as CSV within the limits; `line` is where reading stopped. */
export class CsvFileError extends Error {
  constructor(
    message: string,
    readonly line?: number,
  ) {
    super(message);
  }
}

/** A record with more cells than the cap: the header (`columns`) or a later record, starting at `line`. */
function tooManyCells(cells: number, header: boolean, line: number): CsvFileError {
  return new CsvFileError(
    header
      ? `has ${cells} columns; at most ${CSV_LIMITS.maxColumns} are read`
      : `has a record of ${cells} cells at line ${line}; at most ${CSV_LIMITS.maxColumns} are read`,
    line,
  );
}

/**
 * Counts the cells of each record in the text ahead of csv-parse, which builds a record's array
 * whole before it can be counted: a 10 MB line of commas was 10 million empty strings, some
 * 350 MB of heap and seconds of CPU, before the cell cap refused it. Quotes toggle a quoted
 * cell (a doubled quote toggles twice), so for RFC 4180 text the count is csv-parse's; text
 * csv-parse refuses anyway may be refused here first. A record past the cap is counted on to its
 * end (characters only, nothing kept), so the message gives its exact size.
 */
class CellCounter {
  private quoted = false;
  private cells = 1;
  private line = 1;
  private recordLine = 1;
  private recordHasText = false;
  private recordsEnded = 0;
  /** The record being read has passed the cap: no more of the text goes to the parser. */
  over = false;

  /** Scans `text` from `from` to `to`; answers the breach once the record past the cap has ended. */
  scan(text: string, from: number, to: number): CsvFileError | undefined {
    for (let at = from; at < to; at++) {
      const c = text.charCodeAt(at);
      if (at === 0 && c === 0xfeff) continue; // the BOM csv-parse drops
      if (c === 0x22) this.quoted = !this.quoted;
      else if (c === 0x0a || c === 0x0d) {
        if (c === 0x0a || text.charCodeAt(at + 1) !== 0x0a) this.line++;
        if (!this.quoted) {
          if (this.over) return this.breach();
          if (this.recordHasText) this.recordsEnded++;
          this.cells = 1;
          this.recordHasText = false;
          this.recordLine = this.line;
          continue;
        }
      } else if (c === 0x2c && !this.quoted && ++this.cells > CSV_LIMITS.maxColumns) this.over = true;
      this.recordHasText = true;
    }
    return this.over && to === text.length ? this.breach() : undefined;
  }

  private breach(): CsvFileError {
    return tooManyCells(this.cells, this.recordsEnded === 0, this.recordLine);
  }
}

/**
 * RFC 4180 records of `text` (csv-parse), streamed: comma-separated, optional double quotes
 * (a doubled quote is one quote, quoted cells may span lines), CRLF or LF, a UTF-8 BOM
 * tolerated, blank lines skipped. A record whose every cell is empty or spaces (`,,,,`: the row
 * a spreadsheet exports for an empty one) is skipped like a blank line, since it says nothing
 * either. Rows may have any number of cells; the importer judges them.
 */
export async function* readCsv(text: string): AsyncGenerator<CsvRecord> {
  const counter = new CellCounter();
  let breach: CsvFileError | undefined;
  // A stream alone never gives the event loop a turn: a synchronous source is read, and records
  // are handed on, in microtasks and nextTicks, so a 10 MB file held it for the whole parse
  // (~0.7 s). Each chunk after the first, and every RECORDS_PER_TURN records, wait for the
  // event loop's check phase, after its I/O. From the chunk where a record passes the cell cap,
  // no text goes to the parser: the breach is thrown instead of any further record.
  const chunks = (async function* () {
    for (let at = 0; at < text.length; at += CHUNK_CHARS) {
      if (at > 0) await setImmediate();
      breach = counter.scan(text, at, Math.min(at + CHUNK_CHARS, text.length));
      if (breach) return;
      if (!counter.over) yield text.slice(at, at + CHUNK_CHARS);
    }
  })();
  const parser = Readable.from(chunks).pipe(
    parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true, max_record_size: CSV_LIMITS.maxRecordChars }),
  );
  let previousEnd = 0;
  let previousEmpty = 0;
  /** Records of blank cells so far: skipped, and not counted in `row`, as csv-parse counts no blank line. */
  let blankRecords = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number; records: number; empty_lines: number } }>) {
      const line = previousEnd + 1 + (info.empty_lines - previousEmpty);
      previousEnd = info.lines;
      previousEmpty = info.empty_lines;
      if (breach) throw breach;
      const row = info.records - blankRecords;
      // Every record, not just the header: empty cells do not count toward max_record_size.
      // (CellCounter refuses such a record before it is parsed; this holds for any text it miscounts.)
      if (record.length > CSV_LIMITS.maxColumns) throw tooManyCells(record.length, row === 1, line);
      if (record.every((cell) => cell.trim() === '')) {
        blankRecords++;
      } else {
        if (row > CSV_LIMITS.maxRows + 1) throw new CsvFileError(`has more than ${CSV_LIMITS.maxRows} rows; split it into several files`, line);
        yield { cells: record, row, line };
      }
      // Skipped records count too: a file of nothing but `,,,,` lines is parsed like any other.
      if (info.records % RECORDS_PER_TURN === 0) await setImmediate();
    }
    if (breach) throw breach;
  } catch (error) {
    parser.destroy();
    // The parser saw the text cut short at the breach; what it made of that is not the reason.
    if (breach) throw breach;
    if (error instanceof CsvError) {
      const line = (error as CsvError & { lines?: number }).lines;
      const reason =
        error.code === 'CSV_MAX_RECORD_SIZE'
          ? `has a record longer than ${CSV_LIMITS.maxRecordChars} characters`
          : error.code === 'CSV_QUOTE_NOT_CLOSED'
            ? 'has a quoted cell that is never closed'
            : `is not valid CSV (${error.code})`;
      throw new CsvFileError(line ? `${reason} at line ${line}` : reason, line);
    }
    throw error;
  }
}

/** List fields take several values in one cell, separated by `;` (or spaces). */
const LIST_PATHS = new Set<string>();

function columnsOf(schema: { properties: Record<string, unknown> }, prefix: string, pathPrefix: string, skip: Set<string>): Array<[string, string]> {
  return Object.entries(schema.properties)
    .filter(([name]) => !skip.has(name))
    .map(([name, property]) => {
      const column = !prefix || name.startsWith(prefix) ? name : `${prefix}${name[0]!.toUpperCase()}${name.slice(1)}`;
      const path = `${pathPrefix}${name}`;
      if ((property as { type?: unknown }).type === 'array') LIST_PATHS.add(path);
      return [column, path] as [string, string];
    });
}

/**
 * CSV column → dot path in the create request. Upstream's template columns (umaAddress,
 * platformCustomerId, customerType, fullName, birthDate, addressLine1, addressLine2, city,
 * state, postalCode, country, email, businessLegalName, businessRegistrationNumber,
 * businessTaxId) keep their names; every other field of POST /customers has a column too:
 * an individual's under its own name, a business's `businessInfo.x` as `businessX`.
 */
// Without a prototype: a header cell naming an Object.prototype member (`constructor`,
// `__proto__`) is an unknown column, not a column whose path is a function.
export const CSV_COLUMNS: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, Object.fromEntries([
  ...columnsOf(IndividualCustomerCreate as never, '', '', new Set(['address', 'endUserTermsConsent'])),
  ['addressLine1', 'address.line1'],
  ['addressLine2', 'address.line2'],
  ['city', 'address.city'],
  ['state', 'address.state'],
  ['postalCode', 'address.postalCode'],
  ['country', 'address.country'],
  ...columnsOf(BusinessInfo as never, 'business', 'businessInfo.', new Set()),
]));

/** Upstream columns Corridor accepts so their files load, but does not store. */
export const IGNORED_COLUMNS = new Set(['platformAccountId', 'description']);

const PATH_TO_COLUMN = new Map(Object.entries(CSV_COLUMNS).map(([column, path]) => [path, column]));
PATH_TO_COLUMN.set('address', 'addressLine1');
PATH_TO_COLUMN.set('businessInfo', 'businessLegalName');

/** Header problems: too many, unknown or repeated columns, and the one column every row needs. */
export function headerErrors(header: string[]): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  header.forEach((raw) => {
    const column = raw.trim();
    if (!(column in CSV_COLUMNS) && !IGNORED_COLUMNS.has(column)) {
      errors.push({ field: `columns.${column}`, constraint: { enum: Object.keys(CSV_COLUMNS) }, message: 'is not a known column' });
    } else if (seen.has(column)) {
      errors.push({ field: `columns.${column}`, message: 'appears twice' });
    }
    seen.add(column);
  });
  if (!seen.has('customerType')) errors.push({ field: 'columns.customerType', message: 'is required' });
  return errors;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = target;
  for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
  node[keys[keys.length - 1]!] = value;
}

/** One CSV record as a create request: empty cells are absent, lists split on `;` or spaces. */
export function rowToRequest(header: string[], cells: string[]): Record<string, unknown> {
  const request: Record<string, unknown> = {};
  header.forEach((column, index) => {
    const path = CSV_COLUMNS[column];
    const value = (cells[index] ?? '').trim();
    if (!path || value === '') return;
    if (LIST_PATHS.has(path)) setPath(request, path, value.split(/[;\s]+/).filter(Boolean));
    else if (path === 'umaAddress') setPath(request, path, value.startsWith('$') ? value : `$${value}`);
    else setPath(request, path, value);
  });
  const info = request.businessInfo as Record<string, unknown> | undefined;
  const address = request.address as Record<string, unknown> | undefined;
  if (request.customerType === 'BUSINESS' && info && info.country === undefined && address?.country !== undefined) info.country = address.country;
  return request;
}

/** FieldErrors of a request, renamed to the CSV columns the platform edits. */
export function toColumnErrors(errors: FieldError[]): FieldError[] {
  return errors.map((e) => {
    const exact = PATH_TO_COLUMN.get(e.field);
    if (exact) return { ...e, field: exact };
    const prefix = [...PATH_TO_COLUMN.keys()].find((p) => e.field.startsWith(`${p}.`));
    return prefix ? { ...e, field: `${PATH_TO_COLUMN.get(prefix)}${e.field.slice(prefix.length)}` } : e;
  });
}

/**
 * OWASP's CSV-injection rule: a value that a spreadsheet would read as a formula (it starts
 * with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with `'`, so it shows as
 * text. Applied to every value Corridor writes back into a CSV file or an import report.
 */
export function neutraliseFormula(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** `neutraliseFormula` on every string inside a JSON value. */
export function neutraliseDeep<T>(value: T): T {
  if (typeof value === 'string') return neutraliseFormula(value) as T;
  if (Array.isArray(value)) return value.map(neutraliseDeep) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, neutraliseDeep(v)])) as T;
  return value;
}

/**
 * Rows as a CSV stream (csv-stringify): a header, every cell quoted and neutralised, so the
 * file opens in a spreadsheet as text, whatever the values hold.
 */
export function csvStream(columns: string[], rows: AsyncIterable<Array<string | number>>): Readable {
  const out = stringify({ header: true, columns, quoted: true, record_delimiter: 'windows' });
  void (async () => {
    try {
      for await (const row of rows) {
        if (!out.write(row.map((cell) => (typeof cell === 'string' ? neutraliseFormula(cell) : cell)))) {
          await new Promise((resolve) => out.once('drain', resolve));
        }
      }
      out.end();
    } catch (error) {
      out.destroy(error as Error);
    }
  })();
  return out;
}
