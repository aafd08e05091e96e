/**
 * PostgreSQL's data exceptions (SQLSTATE class 22) quote the value they refused in the message
 * itself: `invalid input syntax for type uuid: "…"`, `date/time field value out of range: "…"`
 * (a birth date), `value "…" is out of range for type bigint`. Such a value is what a caller sent
 * and may be personal data, so wherever an error's message is kept (the log, a job's last_error)
 * it is censored; the code and the message's words still say what failed.
 */

/** Whether these are the fields of a PostgreSQL data exception (a database error has a severity). */
export function isDataException(fields: { code?: unknown; severity?: unknown }): boolean {
  const { code, severity } = fields;
  return typeof code === 'string' && code.length === 5 && code.startsWith('22') && severity !== undefined;
}

/**
 * A data exception's message with what lies from the first double quote to the last replaced by
 * "[redacted]" (a value may hold quotes of its own); a message quoting nothing is returned as is.
 */
export function withoutRefusedValue(message: string): string {
  const first = message.indexOf('"');
  const last = message.lastIndexOf('"');
  if (first < 0 || last === first) return message;
  return `${message.slice(0, first)}"[redacted]"${message.slice(last + 1)}`;
}

/** An error's message as it may be kept: a data exception's without the value it refused. */
export function keptErrorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return isDataException(error as { code?: unknown; severity?: unknown }) ? withoutRefusedValue(error.message) : error.message;
}
