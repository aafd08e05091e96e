import pg from 'pg';
import { expect } from 'vitest';

/** A statement as the pg driver sent it. */
export interface SentStatement {
  text: string;
  values: unknown[];
}

/** Keeps every statement whose text `matches` on its way to PostgreSQL, until `restore()`. */
export function captureStatements(matches: (text: string) => boolean): { statements: SentStatement[]; restore: () => void } {
  const statements: SentStatement[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function capture(this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    const submitted = config as { text?: string; values?: unknown[] };
    const text = typeof config === 'string' ? config : submitted.text;
    if (text && matches(text)) statements.push({ text, values: (typeof config === 'string' ? (values as unknown[]) : submitted.values) ?? [] });
    return (query as (...args: unknown[]) => unknown).call(this, config, values, callback);
  } as typeof query;
  return {
    statements,
    restore: () => {
      pg.Client.prototype.query = query;
    },
  };
}

/**
 * Pages of tables and indexes that `statement` reads, by EXPLAIN (ANALYZE, BUFFERS) on a
 * connection of its own in `schema`, inside a transaction that is rolled back (a write changes
 * nothing): planned for its values (`custom`), or once for any values (`generic`, as a named
 * statement ends up planned). With `runs`, it runs that many times and the last run counts (the
 * first may compile a function and plan it).
 */
export async function pagesRead(schema: string, statement: SentStatement, options: { plan?: 'custom' | 'generic'; runs?: number } = {}): Promise<number> {
  return (await explained(schema, statement, options)).pages;
}

/** A plan node as EXPLAIN (FORMAT JSON) gives it: what the failure message of a bound shows. */
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

/** One line per plan node, indented by depth: its type, index or table, rows and pages. */
function outline(node: PlanNode, depth = 0): string[] {
  const where = node['Index Name'] ?? node['Relation Name'];
  const line = `${'  '.repeat(depth)}${node['Node Type']}${where ? ` on ${where}` : ''}: ${node['Actual Rows'] ?? '?'} rows, ${node['Shared Hit Blocks'] + node['Shared Read Blocks']} pages`;
  return [line, ...(node.Plans ?? []).flatMap((child) => outline(child, depth + 1))];
}

/** `pagesRead` with the plan that read them, outlined. */
async function explained(schema: string, statement: SentStatement, { plan = 'custom', runs = 1 }: { plan?: 'custom' | 'generic'; runs?: number } = {}): Promise<{ pages: number; outline: string }> {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    type Explained = { 'QUERY PLAN': Array<{ Plan: PlanNode }> };
    let explain = () => client.query<Explained>(`explain (analyze, buffers, format json) ${statement.text}`, statement.values);
    if (plan === 'generic') {
      await client.query('set plan_cache_mode = force_generic_plan');
      await client.query(`prepare explained as ${statement.text}`);
      // An instant in PostgreSQL's syntax: String() of a Date is not.
      const values = statement.values.map((v) => client.escapeLiteral(v instanceof Date ? v.toISOString() : String(v))).join(', ');
      explain = () => client.query<Explained>(`explain (analyze, buffers, format json) execute explained(${values})`);
    }
    let last: PlanNode | undefined;
    for (let run = 0; run < runs; run++) {
      await client.query('begin');
      last = (await explain()).rows[0]!['QUERY PLAN'][0]!.Plan;
      await client.query('rollback');
    }
    return last ? { pages: last['Shared Hit Blocks'] + last['Shared Read Blocks'], outline: outline(last).join('\n') } : { pages: Number.NaN, outline: '' };
  } finally {
    await client.end();
  }
}

/**
 * Each statement reads fewer than `bound` pages, planned for its values and once for any values
 * (the generic plan a named statement ends up with): a page of a list, not a walk of the table.
 */
export async function expectFewPagesRead(schema: string, statements: SentStatement[], bound = 100): Promise<void> {
  expect(statements.length).toBeGreaterThan(0);
  for (const statement of statements) {
    // The plan goes into the message: a bound broken once under load is diagnosed from the log alone.
    for (const plan of ['custom', 'generic'] as const) {
      const { pages, outline: read } = await explained(schema, statement, { plan });
      expect(pages, `${statement.text}\n${plan} plan:\n${read}`).toBeLessThan(bound);
    }
  }
}
