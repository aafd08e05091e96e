import { sql, type SelectQueryBuilder } from 'kysely';
import type { DbOrTx } from './database.js';

/**
 * How many rows a platform has under the count `name`, from the counts triggers keep in the
 * writing transaction (`platform_row_counts`, migrations 0009 and 0034): a sum over at most 64
 * slot rows, whatever the size of the table. `live` leaves out soft-deleted rows (deleted_at
 * set). A count is the table's name (customers, transactions) or, where a table holds two lists,
 * a name of its own (`external_accounts:platform`); it exists once a migration attaches the
 * triggers that keep it.
 */
export async function platformRowCount(db: DbOrTx, name: string, platformId: string, which: 'live' | 'total'): Promise<number> {
  const column = sql.ref(which);
  const { rows } = await sql<{ n: string | number | bigint | null }>`
    select sum(${column}) as n from platform_row_counts where platform_id = ${platformId} and table_name = ${name}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** The same count as a scalar subquery, to select beside other columns in one statement. */
export function platformRowCountExpression(name: string, platformId: string, which: 'live' | 'total') {
  return sql<string | number | bigint | null>`(select sum(${sql.ref(which)}) from platform_row_counts where platform_id = ${platformId} and table_name = ${name})`;
}

/**
 * How many rows `query` matches, by count(*): only for queries that match few rows whatever the
 * size of the table (one customer's accounts, a platform's tokens); a platform's rows are counted
 * by `platformRowCount`.
 */
export async function countMatches<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): Promise<number> {
  const row = await query.select(sql<string>`count(*)`.as('n')).$castTo<{ n: string | number | bigint }>().executeTakeFirstOrThrow();
  return Number(row.n);
}
