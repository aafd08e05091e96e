/**
 * jsonb values go to the database as JSON text: both drivers would otherwise send a JS array
 * as a PostgreSQL array literal. Reading back needs nothing: jsonb arrives parsed.
 */
export function withJsonColumns<R extends object>(row: R, columns: readonly (keyof R)[]): R {
  const out = { ...row } as Record<string, unknown>;
  for (const column of columns) {
    const value = out[column as string];
    if (value !== undefined && value !== null) out[column as string] = JSON.stringify(value);
  }
  return out as R;
}
