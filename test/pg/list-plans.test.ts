import { CompiledQuery } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { captureStatements, expectFewPagesRead } from '../helpers/explain.js';
import { validSamples } from '../helpers/external-accounts.js';
import { runRead } from '../../src/platform/db/pipelined-reads.js';

/**
 * A list page reads its own platform's rows, however many newer rows other platforms wrote
 * (platform/db/platform-page.ts). Two platforms of equal size, one's rows all older than the
 * other's: the planner, told by the statistics that each holds half the table, could walk the
 * primary key from the newest id down and meet every row of the newer platform before the first
 * of the older one's page. Each page statement the server runs is caught on its way to
 * PostgreSQL and run again under EXPLAIN (ANALYZE, BUFFERS): what it read is counted in pages of
 * the table and its indexes, not timed.
 */
describe.runIf(onPostgres)('list pages on PostgreSQL whatever other platforms hold', () => {
  const ROWS = 10_000;
  let ctx: TestContext;
  let newer: TestPlatform;
  let schema: string;
  let capture: ReturnType<typeof captureStatements>;

  beforeAll(async () => {
    ctx = await createTestContext();
    newer = await ctx.newPlatform();
    const get = (platform: TestPlatform, path: string) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: platform.auth } });
    for (const platform of [ctx.platform, newer]) {
      const created = await ctx.app.inject({
        method: 'POST',
        url: `${BASE}/customers`,
        headers: { authorization: platform.auth },
        payload: { customerType: 'INDIVIDUAL', fullName: 'Template' },
      });
      expect(created.statusCode).toBe(201);
      const customerId = (created.json() as { id: string }).id;
      expect((await get(platform, '/customers/internal-accounts')).statusCode).toBe(200);
      const post = (path: string, payload: object) => ctx.app.inject({ method: 'POST', url: `${BASE}${path}`, headers: { authorization: platform.auth }, payload });
      expect((await post('/customers/external-accounts', { customerId, ...validSamples(ctx.clock.now()).USD_ACCOUNT })).statusCode).toBe(201);
      expect((await post('/verifications', { customerId })).statusCode).toBe(200);
    }
    // Copies of each platform's customer with its account (and ledger account), external account,
    // verification and a token: the older platform's ids all below the newer one's (uuidv7 ids
    // lead with their time), half the rows each.
    const copy = async (platformId: string, idPrefix: string) => {
      const { rows } = await ctx.handle.db.executeQuery<{ n: number }>(
        CompiledQuery.raw(
          `with made as (
                 insert into customers
                 select (jsonb_populate_record(null::customers, to_jsonb(s) || jsonb_build_object(
                          'id', ${idPrefix} || lpad(to_hex(g), 12, '0'),
                          'platform_customer_id', 'copy-' || g,
                          'uma_address', '$copy' || g || '@example.com'))).*
                   from (select * from customers where platform_id = $1 limit 1) s, generate_series(1, ${ROWS}) g
                 returning id, platform_id),
               accounts as (
                 insert into internal_accounts
                 select (jsonb_populate_record(null::internal_accounts, to_jsonb(a) || jsonb_build_object(
                          'id', m.id, 'customer_id', m.id, 'funding_reference', a.funding_reference || '-' || m.id))).*
                   from made m, (select * from internal_accounts where platform_id = $1 and customer_id is not null limit 1) a
                 returning id, platform_id),
               ledger as (
                 insert into ledger_accounts
                 select (jsonb_populate_record(null::ledger_accounts, to_jsonb(l) || jsonb_build_object('id', m.id))).*
                   from made m, (select * from ledger_accounts where platform_id = $1 and kind = 'INTERNAL_ACCOUNT' limit 1) l
                 returning id),
               balances as (
                 insert into ledger_balances
                 select (jsonb_populate_record(null::ledger_balances, to_jsonb(b) || jsonb_build_object('account_id', l.id))).*
                   from ledger l, (select * from ledger_balances where platform_id = $1 and no_overdraft limit 1) b
                 returning 1),
               external as (
                 insert into external_accounts
                 select (jsonb_populate_record(null::external_accounts, to_jsonb(e) || jsonb_build_object(
                          'id', m.id, 'customer_id', m.id, 'identity_sha256', encode(sha256(m.id::text::bytea), 'hex')))).*
                   from made m, (select * from external_accounts where platform_id = $1 limit 1) e
                 returning 1),
               verifications as (
                 insert into verifications
                 select (jsonb_populate_record(null::verifications, to_jsonb(v) || jsonb_build_object('id', m.id, 'customer_id', m.id))).*
                   from made m, (select * from verifications where platform_id = $1 limit 1) v
                 returning 1),
               tokens as (
                 insert into api_tokens
                 select (jsonb_populate_record(null::api_tokens, to_jsonb(t) || jsonb_build_object('id', m.id, 'client_id', md5(m.id::text)))).*
                   from made m, (select * from api_tokens where platform_id = $1 limit 1) t
                 returning 1)
              select (select count(*) from made)::int as n`,
          [platformId],
        ),
      );
      expect(rows[0]!.n).toBe(ROWS);
    };
    await copy(ctx.platform.uuid, `'00000000-0000-7000-8000-'`);
    await copy(newer.uuid, `'ffffffff-0000-7000-8000-'`);
    await ctx.handle.db.executeQuery(CompiledQuery.raw('analyze customers, internal_accounts, external_accounts, verifications, api_tokens'));
    schema = (await ctx.handle.db.executeQuery<{ schema: string }>(CompiledQuery.raw('select current_schema() as schema'))).rows[0]!.schema;
    capture = captureStatements((text) => /\blimit\b/i.test(text));
  });
  afterEach(() => {
    capture.statements.length = 0;
  });
  afterAll(async () => {
    capture?.restore();
    await ctx?.close();
  });

  for (const [what, path, table] of [
    ['customers', '/customers?limit=20', 'customers'],
    ['customers, deleted ones too', '/customers?limit=20&isIncludingDeleted=true', 'customers'],
    ['internal accounts', '/customers/internal-accounts?limit=20', 'internal_accounts'],
    ['external accounts', '/customers/external-accounts?limit=20', 'external_accounts'],
    ['verifications', '/verifications?limit=20', 'verifications'],
    ['tokens', '/tokens?limit=20', 'api_tokens'],
  ] as const) {
    it(`${what}: the older platform's page reads its own rows, not the newer platform's ${ROWS}`, async () => {
      const response = await ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth } });
      expect(response.statusCode, response.body).toBe(200);
      const page = response.json() as { data: Array<{ id: string }>; hasMore: boolean };
      expect(page.data).toHaveLength(20);
      expect(page.hasMore).toBe(true);
      // 21 rows of one platform: a few index pages and the heap pages holding them. The walk
      // through the newer platform's rows reads thousands.
      await expectFewPagesRead(schema, capture.statements.filter((s) => new RegExp(`from "${table}"`).test(s.text)));
    });
  }

  it(`webhook deliveries filtered by type and status read the page's rows, not the ${ROWS} of either filter alone`, async () => {
    // One type's deliveries all FAILED, another's all SUCCEEDED: the FAILED ones of the second
    // type are none, and neither the type's index nor the status's alone finds that quickly.
    const delivered = (type: string, status: string, idPrefix: string) =>
      ctx.handle.db.executeQuery(
        CompiledQuery.raw(
          `insert into webhook_deliveries (platform_id, id, kind, event_type, status, created_at, updated_at)
           select $1, (${idPrefix} || lpad(to_hex(g), 12, '0'))::uuid, 'EVENT', '${type}', '${status}', now(), now() from generate_series(1, ${ROWS}) g`,
          [ctx.platform.uuid],
        ),
      );
    await delivered('OUTGOING_PAYMENT.FAILED', 'FAILED', `'00000000-0000-7000-8001-'`);
    await delivered('OUTGOING_PAYMENT.COMPLETED', 'SUCCEEDED', `'00000000-0000-7000-8002-'`);
    await ctx.handle.db.executeQuery(CompiledQuery.raw('analyze webhook_deliveries'));
    const response = await ctx.app.inject({
      method: 'GET',
      url: `${BASE}/webhooks/deliveries?limit=20&eventType=OUTGOING_PAYMENT.COMPLETED&status=FAILED`,
      headers: { authorization: ctx.platform.auth },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as { data: unknown[] }).data).toEqual([]);
    await expectFewPagesRead(schema, capture.statements.filter((s) => /from "webhook_deliveries"/.test(s.text)));
  });

  it('the pipelined reads plan each statement once per connection, never per execution', async () => {
    for (let i = 0; i < 12; i++) {
      const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?limit=20`, headers: { authorization: ctx.platform.auth } });
      expect(response.statusCode).toBe(200);
    }
    // Asked often enough to meet every pipelined connection (they take turns): each answers for its own statements.
    const plans = new Map<string, { generic: number; custom: number }>();
    for (let i = 0; i < 8; i++) {
      const rows = await runRead<{ pid: number; statement: string; generic_plans: string; custom_plans: string }>(
        ctx.handle.db,
        CompiledQuery.raw("select pg_backend_pid() as pid, statement, generic_plans, custom_plans from pg_prepared_statements where statement like '%from \"customers\"%' and statement not like '%pg_prepared_statements%'"),
      );
      for (const row of rows) plans.set(`${row.pid}: ${row.statement}`, { generic: Number(row.generic_plans), custom: Number(row.custom_plans) });
    }
    expect(plans.size).toBeGreaterThan(0);
    // Under PostgreSQL's default the first five executions of every statement are planned afresh,
    // and every one after them while the generic plan looks dearer (it does with these tables).
    for (const [statement, counts] of plans) expect(counts, statement).toEqual({ generic: expect.any(Number), custom: 0 });
    expect([...plans.values()].reduce((sum, c) => sum + c.generic, 0)).toBeGreaterThanOrEqual(12);
  });
});
