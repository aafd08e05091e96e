import { CompiledQuery, sql } from 'kysely';
import { expect } from 'vitest';
import type { Db, DbOrTx } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { recordingDb } from './recording-db.js';

/** The statements `run` sends, compiled and recorded but not run (on either engine). */
export async function recorded(run: (db: DbOrTx) => Promise<unknown>): Promise<CompiledQuery[]> {
  const { db, sent } = recordingDb();
  await run(db).catch(() => {});
  return sent;
}

export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

function literal(value: unknown): string {
  // An array parameter (`= any($1::text[])`) as an array literal: {"a","b"}.
  const text = Array.isArray(value) ? `{${value.map((v) => `"${String(v).replace(/["\\]/g, '\\$&')}"`).join(',')}}` : String(value);
  return `'${text.replace(/'/g, "''")}'`;
}

/** The query's plan for its values, and its generic plan (what a prepared statement settles on), each as its list of nodes. */
export async function queryPlans(db: Db, query: CompiledQuery): Promise<PlanNode[][]> {
  return withTx(db, async (trx) => {
    const custom = await trx.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
    );
    await sql.raw(`prepare plan_probe as ${query.sql}`).execute(trx);
    await sql`set local plan_cache_mode = force_generic_plan`.execute(trx);
    const generic = await sql<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>`${sql.raw(
      `explain (format json) execute plan_probe(${query.parameters.map(literal).join(', ')})`,
    )}`.execute(trx);
    await sql`deallocate plan_probe`.execute(trx);
    return [custom.rows[0]!['QUERY PLAN'][0]!.Plan, generic.rows[0]!['QUERY PLAN'][0]!.Plan].map(nodes);
  });
}

/** Each query's plans read through one of `indexes` (any of them serves it), never a scan or a sort of the table. */
export async function expectIndex(db: Db, queries: CompiledQuery[], ...indexes: string[]): Promise<void> {
  expect(queries.length).toBeGreaterThan(0);
  for (const query of queries) {
    for (const plan of await queryPlans(db, query)) {
      const types = plan.map((n) => n['Node Type']);
      expect(types, query.sql).not.toContain('Seq Scan');
      expect(types, `${query.sql}\n${JSON.stringify(plan)}`).not.toContain('Sort');
      const used = plan.map((n) => n['Index Name']).filter(Boolean);
      expect(used.some((name) => indexes.includes(name!)), `${query.sql}: ${used.join(', ')}`).toBe(true);
    }
  }
}
