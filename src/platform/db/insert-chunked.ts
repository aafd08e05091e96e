/** Rows per INSERT of a batch writer: far below PostgreSQL's 65,535 parameters per statement. */
export const ROWS_PER_INSERT = 1_000;

/** Writes many rows as one INSERT per ROWS_PER_INSERT of them (`insert` is given each slice). */
export async function insertChunked<T>(rows: readonly T[], insert: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await insert(rows.slice(i, i + ROWS_PER_INSERT));
}
