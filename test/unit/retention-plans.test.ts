import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeEndedDailyVolumes } from '../../src/modules/quotes/repo.js';
import { purgeExpiredReceiverLookups } from '../../src/modules/receivers/repo.js';
import { purgeExpiredUmaLookups, purgeSpentNonces } from '../../src/modules/uma/repo.js';
import { purgeEndedSessions, purgeSpentOidcTokens } from '../../src/modules/wallet-auth/repo.js';
import { createPlatform } from '../../src/modules/platforms/service.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { Db, DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { jobQueueDepth } from '../../src/platform/jobs/index.js';
import { PURGE_BATCH_ROWS, purgeDoneJobs } from '../../src/platform/retention.js';
import { openTestDatabase } from '../helpers/context.js';
import { recordingDb } from '../helpers/recording-db.js';

/**
 * The retention purge and the /metrics job count read what they act on through an index,
 * whatever the statistics: every table here holds thousands of rows and was never analysed (as
 * on a database with autovacuum off), and each statement is explained as planned for its values
 * and as the generic plan a named prepared statement ends up with.
 */
let handle: DbHandle;
let drop: () => Promise<void>;
const clock = new ManualClock('2026-03-01T00:00:00Z');
const now = clock.now();

async function recorded(run: (db: Db) => Promise<unknown>): Promise<CompiledQuery> {
  const { db, sent } = recordingDb();
  await run(db);
  expect(sent).toHaveLength(1);
  return sent[0]!;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

function literal(value: unknown): string {
  const text = value instanceof Date ? value.toISOString() : String(value);
  return `'${text.replace(/'/g, "''")}'`;
}

/** The statement's plan for its values, and its generic plan. */
async function plans(query: CompiledQuery): Promise<PlanNode[][]> {
  return withTx(handle.db, async (trx) => {
    const custom = await trx.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
    const generic: PlanNode[] = [];
    if (query.parameters.length > 0) {
      await sql.raw(`prepare plan_probe as ${query.sql}`).execute(trx);
      await sql`set local plan_cache_mode = force_generic_plan`.execute(trx);
      const explained = await sql<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>`${sql.raw(`explain (format json) execute plan_probe(${query.parameters.map(literal).join(', ')})`)}`.execute(trx);
      await sql`deallocate plan_probe`.execute(trx);
      generic.push(explained.rows[0]!['QUERY PLAN'][0]!.Plan);
    }
    return [custom.rows[0]!['QUERY PLAN'][0]!.Plan, ...generic].map(nodes);
  });
}

/** Every plan of `query` reads `table` through indexes only, `indexes` among them. */
async function expectIndexes(query: CompiledQuery, table: string, indexes: string[]): Promise<void> {
  for (const plan of await plans(query)) {
    const described = `${query.sql}\n${JSON.stringify(plan.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']]))}`;
    expect(plan.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === table), described).toEqual([]);
    for (const index of indexes) expect(plan.map((n) => n['Index Name']), described).toContain(index);
  }
}

beforeAll(async () => {
  ({ handle, drop } = await openTestDatabase());
  const { platformUuid } = await withTx(handle.db, (trx) => createPlatform(trx, clock, { name: 'Plans', environment: 'sandbox' }));
  // Thousands of rows, inserted behind the planner's back (no ANALYZE): mostly done jobs, a few live and dead.
  await sql`
    insert into jobs (id, platform_id, kind, payload, status, attempts, max_attempts, run_at, locked_until, last_error, created_at, updated_at)
    select gen_random_uuid(), null, 'test.plans', '{}'::jsonb,
           case when i % 500 = 0 then 'dead' when i % 100 = 0 then 'queued' else 'done' end,
           1, 8, ${now}::timestamptz, null, null, ${now}::timestamptz - i * interval '1 minute', ${now}::timestamptz - i * interval '1 minute'
      from generate_series(1, 20000) i`.execute(handle.db);
  await sql`
    insert into uma_nonces (vasp_domain, nonce, expires_at)
    select 'vasp' || (i % 5) || '.example', 'n' || i, ${now}::timestamptz - i * interval '1 second' from generate_series(1, 10000) i`.execute(handle.db);
  for (const table of ['uma_lookups', 'receiver_lookups'] as const) {
    const columns = table === 'uma_lookups' ? sql`, customer_id, receiver_uma_address, counterparty_domain` : sql``;
    const values = table === 'uma_lookups' ? sql`, gen_random_uuid(), '$r@vasp.example', 'vasp.example'` : sql``;
    await sql`
      insert into ${sql.table(table)} (platform_id, id, response, created_at, expires_at${columns})
      select ${platformUuid}, gen_random_uuid(), '{}', ${now}::timestamptz, ${now}::timestamptz - i * interval '1 second'${values} from generate_series(1, 20000) i`.execute(handle.db);
  }
  await sql`
    insert into oidc_tokens_used (token_sha256, platform_id, expires_at, used_at)
    select encode(sha256(i::text::bytea), 'hex'), ${platformUuid}, ${now}::timestamptz - i * interval '1 second', ${now}::timestamptz from generate_series(1, 20000) i`.execute(handle.db);
  // Sessions of one wallet account: a third revoked, all ending over the last days.
  const [account] = (await sql<{ id: string }>`select id from internal_accounts where platform_id = ${platformUuid} limit 1`.execute(handle.db)).rows;
  const credentialId = crypto.randomUUID();
  await sql`
    insert into auth_credentials (id, platform_id, account_id, type, nickname, created_at, updated_at)
    values (${credentialId}, ${platformUuid}, ${account!.id}, 'EMAIL_OTP', 'plans@example.com', ${now}, ${now})`.execute(handle.db);
  await sql`
    insert into auth_sessions (id, platform_id, account_id, credential_id, public_key, created_at, updated_at, expires_at, revoked_at)
    select gen_random_uuid(), ${platformUuid}, ${account!.id}, ${credentialId}, '02' || encode(sha256(i::text::bytea), 'hex'), ${now}::timestamptz, ${now}::timestamptz,
           ${now}::timestamptz - i * interval '10 seconds', case when i % 3 = 0 then ${now}::timestamptz - i * interval '20 seconds' end
      from generate_series(1, 20000) i`.execute(handle.db);
  await sql`
    insert into daily_volumes (platform_id, customer_id, day, currency, amount)
    select ${platformUuid}, gen_random_uuid(), date '2026-03-01' - (i % 400), 'USD', i from generate_series(1, 20000) i`.execute(handle.db);
  const analysed = await sql<{ n: number }>`select count(*)::int as n from pg_stats where schemaname = current_schema() and tablename in ('jobs', 'auth_sessions', 'daily_volumes')`.execute(handle.db);
  expect(analysed.rows[0]!.n).toBe(0);
}, 120_000);
afterAll(() => drop());

describe('retention statements on tables without statistics', () => {
  it('done jobs are found along jobs_done, oldest first', async () => {
    await expectIndexes(await recorded((db) => purgeDoneJobs(db, now, PURGE_BATCH_ROWS)), 'jobs', ['jobs_done']);
  });

  it('nonces are found domain by domain along uma_nonces_expiry, the domains by skipping through an index', async () => {
    await expectIndexes(await recorded((db) => purgeSpentNonces(db, now, 300, PURGE_BATCH_ROWS)), 'uma_nonces', ['uma_nonces_expiry']);
  });

  it('expired lookups and used OIDC tokens are found along their expiry indexes', async () => {
    await expectIndexes(await recorded((db) => purgeExpiredUmaLookups(db, now, PURGE_BATCH_ROWS)), 'uma_lookups', ['uma_lookups_expiry']);
    await expectIndexes(await recorded((db) => purgeExpiredReceiverLookups(db, now, PURGE_BATCH_ROWS)), 'receiver_lookups', ['receiver_lookups_expiry']);
    await expectIndexes(await recorded((db) => purgeSpentOidcTokens(db, now, PURGE_BATCH_ROWS)), 'oidc_tokens_used', ['oidc_tokens_used_expiry']);
  });

  it('ended wallet sessions are found along auth_sessions_ended, daily volumes of ended days along daily_volumes_day', async () => {
    await expectIndexes(await recorded((db) => purgeEndedSessions(db, now, PURGE_BATCH_ROWS)), 'auth_sessions', ['auth_sessions_ended']);
    await expectIndexes(await recorded((db) => purgeEndedDailyVolumes(db, now, PURGE_BATCH_ROWS)), 'daily_volumes', ['daily_volumes_day']);
  });

  it('/metrics counts queued, running and dead jobs through their partial indexes, never the done ones', async () => {
    await expectIndexes(await recorded((db) => jobQueueDepth(db)), 'jobs', ['jobs_due', 'jobs_dead']);
    expect(await jobQueueDepth(handle.db)).toEqual({ queued: 160, dead: 40 });
  });
});
