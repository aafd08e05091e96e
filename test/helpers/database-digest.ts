import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/database.js';

/** Every row of every table of the test's schema, as one digest per table: whether a request changed anything at all. */
export async function databaseDigest(db: Db): Promise<Record<string, string>> {
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(db);
  const digests = await sql<{ name: string; digest: string | null }>`${sql.join(
    tables.rows.map(({ table_name }) => sql`select ${table_name} as name, md5(string_agg(t::text, '|' order by t::text)) as digest from ${sql.table(table_name)} t`),
    sql` union all `,
  )}`.execute(db);
  return Object.fromEntries(digests.rows.map((row) => [row.name, row.digest ?? '']));
}
