/**
 * Which of `indexes` refused a write as a duplicate (SQLSTATE 23505), or undefined for any other
 * error: a lost race on a unique index, turned by the caller into the answer its pre-check gives.
 * PostgreSQL names the index in `constraint`; PGlite only in the message.
 */
export function violatedUniqueIndex<I extends string>(error: unknown, indexes: readonly I[]): I | undefined {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown } | null;
  if (e?.code !== '23505') return undefined;
  const where = `${String(e.constraint ?? '')} ${String(e.message ?? '')}`;
  return indexes.find((index) => where.includes(index));
}
