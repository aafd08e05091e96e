import type { FieldError } from '../../platform/errors.js';

/**
 * RFC 4180 CSV: comma-separated, fields optionally in double quotes (a doubled quote inside
 * is one quote, quoted fields may span lines), CRLF or LF line ends, a UTF-8 BOM tolerated.
 * Returns records, or the 1-based record number where quoting is broken.
 */
export function parseCsv(text: string): { records: string[][] } | { brokenAt: number } {
  const input = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  while (i < input.length) {
    const ch = input[i]!;
    if (quoted) {
      if (ch === '"') {
        if (input[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        if (i < input.length && input[i] !== ',' && input[i] !== '\n' && input[i] !== '\r') return { brokenAt: records.length + 1 };
        continue;
      }
      field += ch;
      i++;
      continue;
    }
    if (ch === '"' && field === '') {
      quoted = true;
      i++;
    } else if (ch === ',') {
      record.push(field);
      field = '';
      i++;
    } else if (ch === '\n' || ch === '\r') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i += ch === '\r' && input[i + 1] === '\n' ? 2 : 1;
    } else {
      field += ch;
      i++;
    }
  }
  if (quoted) return { brokenAt: records.length + 1 };
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  // Blank lines carry no customer.
  return { records: records.filter((r) => !(r.length === 1 && r[0]!.trim() === '')) };
}

/** CSV column → dot path in the create request. */
export const CSV_COLUMNS: Record<string, string> = {
  customerType: 'customerType',
  platformCustomerId: 'platformCustomerId',
  umaAddress: 'umaAddress',
  region: 'region',
  currencies: 'currencies',
  email: 'email',
  phoneNumber: 'phoneNumber',
  fullName: 'fullName',
  birthDate: 'birthDate',
  nationality: 'nationality',
  idType: 'idType',
  identifier: 'identifier',
  addressLine1: 'address.line1',
  addressLine2: 'address.line2',
  city: 'address.city',
  state: 'address.state',
  postalCode: 'address.postalCode',
  country: 'address.country',
  businessLegalName: 'businessInfo.legalName',
  businessRegistrationNumber: 'businessInfo.registrationNumber',
  businessTaxId: 'businessInfo.taxId',
  businessCountry: 'businessInfo.country',
  businessIncorporatedOn: 'businessInfo.incorporatedOn',
  businessEntityType: 'businessInfo.entityType',
};

/** Upstream columns Corridor accepts so their files load, but does not store. */
export const IGNORED_COLUMNS = new Set(['platformAccountId', 'description']);

const PATH_TO_COLUMN = new Map(Object.entries(CSV_COLUMNS).map(([column, path]) => [path, column]));
PATH_TO_COLUMN.set('address', 'addressLine1');
PATH_TO_COLUMN.set('businessInfo', 'businessLegalName');

/** Header problems: unknown or repeated columns, and the one column every row needs. */
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

/** One CSV record as a create request: empty cells are absent, currencies split on `;` or spaces. */
export function rowToRequest(header: string[], cells: string[]): Record<string, unknown> {
  const request: Record<string, unknown> = {};
  header.forEach((raw, index) => {
    const path = CSV_COLUMNS[raw.trim()];
    const value = (cells[index] ?? '').trim();
    if (!path || value === '') return;
    if (path === 'currencies') setPath(request, path, value.split(/[;\s]+/).filter(Boolean));
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
