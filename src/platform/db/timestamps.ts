import { sql, type AliasedRawBuilder } from 'kysely';
import pg from 'pg';

const parseTimestamptz = pg.types.getTypeParser(1184, 'text') as (text: string) => Date;

/** PostgreSQL's text of a timestamptz in a UTC session (DateStyle ISO): `2026-11-26 03:34:44.869+00`. */
const UTC_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;

/**
 * A timestamptz column selected as PostgreSQL's text of it (the text the driver would parse into
 * a Date), under its own name: for answers that only print the instant (`isoInstant`). Reading a
 * Date and printing it again cost some 1.2 µs per value here — postgres-date's regular
 * expressions, then `toISOString` — and a page of 20 customers has 60 of them (bench/README.md).
 */
export function timestampText<C extends string>(column: C): AliasedRawBuilder<string, C> {
  return sql<string>`${sql.ref(column)}::text`.as(column);
}

/**
 * An instant as the API writes it, `Date.prototype.toISOString()`'s form, from a Date or from
 * PostgreSQL's text of a timestamptz (`timestampText`): exactly the string the driver's Date
 * would print. The common text — a UTC session, a four-digit year — is rearranged in place (its
 * fraction truncated to milliseconds, as the driver's `1000 * parseFloat` is by Date.UTC, which
 * agrees for every fraction of up to six digits); any other (another offset, BC, infinity) is
 * parsed as the driver would and printed.
 */
export function isoInstant(value: Date | string): string {
  if (typeof value !== 'string') return value.toISOString();
  if (!UTC_TEXT.test(value)) return parseTimestamptz(value).toISOString();
  const fraction = value.length > 22 ? value.slice(20, -3) : '';
  return `${value.slice(0, 10)}T${value.slice(11, 19)}.${fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0')}Z`;
}
