import { sql, type Expression, type SqlBool } from 'kysely';
import { validDateTime } from './datetime.js';
import { invalidInput, type AppError } from './errors.js';
import { unstorableText } from './http/text-input.js';

/**
 * Keyset pagination over UUIDv7 primary keys, newest first. The cursor is the last id of the
 * page, wrapped so clients treat it as opaque. Rows inserted while a client pages have newer
 * ids and fall before its cursor, so later pages neither repeat nor skip existing rows.
 * GET /transactions carries the same cursor but orders by (createdAt, id): see its repo.
 */
export interface PageRequest {
  limit: number;
  /** Keyset position: only ids strictly below this one. */
  after?: string;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ k: lastId }), 'utf8').toString('base64url');
}

const isUuid = (key: string) => UUID_RE.test(key);

/**
 * The key a cursor carries. Lists keyed by UUIDv7 accept only a uuid; a list keyed otherwise
 * (a directory sorted by name) passes its own `accept`. The key is decoded text the request's
 * text checks never saw, and it goes into SQL: text PostgreSQL cannot hold (U+0000) is refused
 * here, whatever `accept` says.
 */
export function decodeCursor(cursor: string, accept: (key: string) => boolean = isUuid): string {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { k?: unknown };
    if (typeof parsed.k === 'string' && unstorableText(parsed.k).length === 0 && accept(parsed.k)) return parsed.k;
  } catch {
    // fall through to the error below
  }
  throw notThisListsCursor();
}

/**
 * The refusal of a cursor this list could not have given: undecodable here, or (for a list that
 * resolves its cursor's row) naming no row of the list. Worded as the validator words every other
 * bad query parameter (platform/http/error-handler.ts).
 */
export function notThisListsCursor(): AppError {
  return invalidInput([{ field: 'cursor', message: 'is not a cursor returned by this list' }], 'The request query parameters are invalid.');
}

export function pageRequest(query: { limit?: number; cursor?: string }, accept?: (key: string) => boolean): PageRequest {
  return { limit: query.limit ?? 20, ...(query.cursor ? { after: decodeCursor(query.cursor, accept) } : {}) };
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount?: number;
}

/** `rows` were fetched with `limit + 1`; the extra row only says whether another page exists. */
export function toPage<R extends { id: string }, T>(rows: R[], request: PageRequest, map: (row: R) => T, totalCount?: number): Page<T> {
  const hasMore = rows.length > request.limit;
  const pageRows = hasMore ? rows.slice(0, request.limit) : rows;
  return {
    data: pageRows.map(map),
    hasMore,
    ...(hasMore ? { nextCursor: encodeCursor(pageRows[pageRows.length - 1]!.id) } : {}),
    ...(totalCount === undefined ? {} : { totalCount }),
  };
}

export interface TimeRange {
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  updatedBefore?: string;
}

/**
 * `column` at or after `instant`, as the API shows instants: to the millisecond. A column may hold
 * microseconds (a row written by SQL's `now()` or restored from elsewhere) that answers print
 * truncated, and such a row is at or after its own printed time whatever its microseconds.
 */
export function atOrAfter(column: string, instant: Date): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(column)} >= ${instant}`;
}

/**
 * `column` at or before `instant` to the millisecond: anywhere within that millisecond, so a row
 * stored at 12:00:00.123456 and shown as 12:00:00.123 is at or before 12:00:00.123, as an item is
 * at or before its own `createdAt`. The bound is moved by PostgreSQL, not in JavaScript: the last
 * accepted instant (9999-12-31T23:59:59.999Z) plus a millisecond has no RFC 3339 form to send.
 */
export function atOrBefore(column: string, instant: Date): Expression<SqlBool> {
  return sql<SqlBool>`${sql.ref(column)} < ${instant}::timestamptz + interval '1 millisecond'`;
}

/** A list's inclusive time bounds (to the millisecond) as conditions on its `created_at` and `updated_at` columns. */
export function timeRangeConditions(range: TimeRange): Expression<SqlBool>[] {
  const at = validDateTime;
  return [
    ...(range.createdAfter ? [atOrAfter('created_at', at(range.createdAfter))] : []),
    ...(range.createdBefore ? [atOrBefore('created_at', at(range.createdBefore))] : []),
    ...(range.updatedAfter ? [atOrAfter('updated_at', at(range.updatedAfter))] : []),
    ...(range.updatedBefore ? [atOrBefore('updated_at', at(range.updatedBefore))] : []),
  ];
}
