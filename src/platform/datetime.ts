/**
 * RFC 3339 date-times (§5.6), the one reading of every timestamp a caller sends. The `date-time`
 * validation format is exactly "this function returns a Date", so whatever passes validation
 * can be stored, compared and returned:
 *
 * - `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `T`/`Z` in either case, or a space for `T`
 *   (RFC 3339 §5.6 NOTE). The date must exist; the offset is at most ±23:59.
 * - Seconds `60` (a leap second) only where the UTC time is 23:59, as RFC 3339 allows. It is
 *   read, as PostgreSQL and POSIX read it, as the first instant of the next minute
 *   (`2026-06-30T23:59:60Z` → `2026-07-01T00:00:00Z`).
 * - Fractions keep milliseconds (what a JavaScript Date holds); further digits are dropped.
 * - The instant lies in years 0001–9999 UTC: the range both a JavaScript Date's RFC 3339 output
 *   and PostgreSQL's timestamptz share (year 0 and 10000 have no RFC 3339 form).
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

const EARLIEST = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');
const MINUTE_MS = 60_000;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Milliseconds since the epoch of a UTC wall-clock time; any year, unlike Date.UTC (which maps 0–99 to 1900–1999). */
function utc(year: number, month: number, day: number, hour: number, minute: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, 0, 0);
  return date.getTime();
}

/** The instant an RFC 3339 date-time names, or undefined when Corridor does not accept it. */
export function parseDateTime(text: string): Date | undefined {
  const match = RFC3339.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMinutes = 0;
  if (!match[8]) {
    const [offsetHours, offsetMins] = [Number(match[10]), Number(match[11])];
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (match[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const minuteStart = utc(year, month, day, hour, minute) - offsetMinutes * MINUTE_MS;
  if (second === 60) {
    const at = new Date(minuteStart);
    if (at.getUTCHours() !== 23 || at.getUTCMinutes() !== 59) return undefined;
  }
  const milliseconds = Number((match[7] ?? '').slice(0, 3).padEnd(3, '0'));
  const instant = minuteStart + second * 1000 + milliseconds;
  if (instant < EARLIEST || instant > LATEST) return undefined;
  return new Date(instant);
}

/** The instant of a date-time that has passed validation (a failure here is a bug, not bad input). */
export function validDateTime(text: string): Date {
  const date = parseDateTime(text);
  if (!date) throw new Error(`not an accepted date-time: ${text}`);
  return date;
}

/**
 * The latest calendar date anywhere on Earth at `now` (YYYY-MM-DD): the date at UTC+14, the Line
 * Islands' offset, the furthest ahead. A date after it is in the future everywhere; a date "not in
 * the future" judged by UTC's date would refuse someone born today east of Greenwich until UTC's
 * day caught up.
 */
export function latestDateOnEarth(now: Date): string {
  return new Date(now.getTime() + 14 * 3_600_000).toISOString().slice(0, 10);
}
