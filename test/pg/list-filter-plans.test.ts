import { CompiledQuery } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { captureStatements, expectFewPagesRead } from '../helpers/explain.js';
import { validSamples } from '../helpers/external-accounts.js';
import { encodeCursor } from '../../src/platform/pagination.js';

/**
 * A list page filtered by a value few of a large platform's rows hold reads the page's rows, not
 * every row of the platform (migration 0062, as 0061 for GET /transactions): the review queue,
 * a rare customerType or region, a deleted customer's platformCustomerId or UMA address, a rare
 * currency or type of account. Without an index that leads with the filtered value, the page walks
 * the platform's id index and checks each row until the page is full or the rows run out. Each
 * page statement the server sends is run again under EXPLAIN (ANALYZE, BUFFERS), planned for its
 * values and once for any values (the pipelined reads' generic plans), and its rows are those a
 * plain query over the same rows answers.
 */
describe.runIf(onPostgres)('list filters on PostgreSQL, on a large platform', () => {
  const ROWS = 20_000;
  const RARE_ID = 'rare-deleted-customer';
  const RARE_UMA = '$Rare.Deleted@example.com';
  let ctx: TestContext;
  let schema: string;
  let capture: ReturnType<typeof captureStatements>;

  beforeAll(async () => {
    ctx = await createTestContext();
    const p = ctx.platform;
    const post = (path: string, payload: object) => ctx.app.inject({ method: 'POST', url: `${BASE}${path}`, headers: { authorization: p.auth }, payload });
    const created = await post('/customers', { customerType: 'INDIVIDUAL', fullName: 'Template', region: 'US' });
    expect(created.statusCode, created.body).toBe(201);
    const customerId = (created.json() as { id: string }).id;
    expect((await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/internal-accounts`, headers: { authorization: p.auth } })).statusCode).toBe(200);
    expect((await post('/customers/external-accounts', { customerId, ...validSamples(ctx.clock.now()).USD_ACCOUNT })).statusCode).toBe(201);
    expect((await post('/verifications', { customerId })).statusCode).toBe(200);
    // Copies of the customer with its internal (and ledger) account, external account and
    // verification, one a second older than it (each id of its created_at's millisecond, as
    // uuidv7 makes them): nearly all alike, and a few BUSINESS, of a rare region, deleted
    // under one platformCustomerId and UMA address, under manual review, of a rare currency or type.
    const { rows } = await ctx.handle.db.executeQuery<{ n: number }>(
      CompiledQuery.raw(
        `with made as (
               insert into customers
               select (jsonb_populate_record(null::customers, to_jsonb(s) || jsonb_build_object(
                        'id', substr(h.ms, 1, 8) || '-' || substr(h.ms, 9, 4) || '-7000-8000-' || lpad(to_hex(g), 12, '0'),
                        'created_at', s.created_at - g * interval '1 second',
                        'customer_type', case when g % 5000 = 1 then 'BUSINESS' else s.customer_type end,
                        'region', case when g % 4000 = 2 then 'IS' else s.region end,
                        'deleted_at', case when g % 5000 = 3 then s.created_at end,
                        'platform_customer_id', case when g % 5000 = 3 then $2 else 'copy-' || g end,
                        'uma_address', case when g % 5000 = 3 then $3 else '$copy' || g || '@example.com' end))).*
                 from (select * from customers where platform_id = $1 limit 1) s, generate_series(1, ${ROWS}) g,
                      lpad(to_hex(floor(extract(epoch from s.created_at) * 1000)::bigint - g * 1000), 12, '0') as h(ms)
               returning id, ('x' || right(id::text, 12))::bit(48)::bigint as g),
             accounts as (
               insert into internal_accounts
               select (jsonb_populate_record(null::internal_accounts, to_jsonb(a) || jsonb_build_object(
                        'id', m.id, 'customer_id', m.id, 'funding_reference', a.funding_reference || '-' || m.id,
                        'currency', case when m.g % 4000 = 1 then 'EUR' else a.currency end,
                        'type', case when m.g % 5000 = 2 then 'EMBEDDED_WALLET' else a.type end))).*
                 from made m, (select * from internal_accounts where platform_id = $1 and customer_id is not null limit 1) a
               returning id),
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
                        'id', m.id, 'customer_id', m.id, 'identity_sha256', encode(sha256(m.id::text::bytea), 'hex'),
                        'currency', case when m.g % 4000 = 1 then 'EUR' else e.currency end))).*
                 from made m, (select * from external_accounts where platform_id = $1 limit 1) e
               returning 1),
             verifications as (
               insert into verifications
               select (jsonb_populate_record(null::verifications, to_jsonb(v) || jsonb_build_object(
                        'id', m.id, 'customer_id', m.id,
                        'status', case when m.g % 4000 = 1 then 'PENDING_MANUAL_REVIEW' else 'APPROVED' end))).*
                 from made m, (select * from verifications where platform_id = $1 limit 1) v
               returning 1)
            select (select count(*) from made)::int as n`,
        [p.uuid, RARE_ID, RARE_UMA],
      ),
    );
    expect(rows[0]!.n).toBe(ROWS);
    await ctx.handle.db.executeQuery(CompiledQuery.raw('analyze customers, internal_accounts, external_accounts, verifications'));
    schema = (await ctx.handle.db.executeQuery<{ schema: string }>(CompiledQuery.raw('select current_schema() as schema'))).rows[0]!.schema;
    capture = captureStatements((text) => /\blimit\b/i.test(text));
  }, 60_000);
  afterEach(() => {
    capture.statements.length = 0;
  });
  afterAll(async () => {
    capture?.restore();
    await ctx?.close();
  });

  /** The ids a plain query over the platform's rows answers, newest first: what the page must hold. */
  const expected = async (type: string, table: string, where: string, values: readonly unknown[]) => {
    const { rows } = await ctx.handle.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(`select id from ${table} where platform_id = $1 and (${where}) order by id desc limit 21`, [ctx.platform.uuid, ...values]),
    );
    return rows.map((row) => `${type}:${row.id}`);
  };

  /** The page of `path` holds what a plain query answers and read only its own rows' pages, planned for its values and for any. */
  const expectOwnRows = async (path: string, type: string, table: string, where: string, values: readonly unknown[]) => {
    const response = await ctx.app.inject({ method: 'GET', url: `${BASE}${path}&limit=20`, headers: { authorization: ctx.platform.auth } });
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json() as { data: Array<{ id: string }>; hasMore: boolean };
    const rows = await expected(type, table, where, values);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(ROWS / 100);
    expect(page.data.map((row) => row.id)).toEqual(rows.slice(0, 20));
    expect(page.hasMore).toBe(rows.length > 20);
    // A page of at most 21 rows: a few index pages and the heap pages holding them. The walk
    // through the platform's id index reads every one of its ${ROWS} rows' pages.
    await expectFewPagesRead(schema, capture.statements.filter((s) => new RegExp(`from "${table}"`).test(s.text)));
  };

  for (const [what, path, type, table, where, values] of [
    ['the review queue', '/verifications?verificationStatus=PENDING_MANUAL_REVIEW', 'Verification', 'verifications', "status = 'PENDING_MANUAL_REVIEW'", []],
    ['BUSINESS customers of a consumer platform', '/customers?customerType=BUSINESS', 'Customer', 'customers', "customer_type = 'BUSINESS' and deleted_at is null", []],
    ['BUSINESS customers, deleted ones too', '/customers?customerType=BUSINESS&isIncludingDeleted=true', 'Customer', 'customers', "customer_type = 'BUSINESS'", []],
    ['customers of a rare region', '/customers?region=IS', 'Customer', 'customers', "region = 'IS' and deleted_at is null", []],
    ["a deleted customer's platformCustomerId", `/customers?platformCustomerId=${RARE_ID}&isIncludingDeleted=true`, 'Customer', 'customers', 'platform_customer_id = $2', [RARE_ID]],
    ["a deleted customer's UMA address", `/customers?umaAddress=${encodeURIComponent(RARE_UMA.toLowerCase())}&isIncludingDeleted=true`, 'Customer', 'customers', 'uma_address = $2', [RARE_UMA]],
    ['external accounts of a rare currency', '/customers/external-accounts?currency=EUR', 'ExternalAccount', 'external_accounts', "currency = 'EUR' and deleted_at is null", []],
    ['internal accounts of a rare currency', '/customers/internal-accounts?currency=EUR', 'InternalAccount', 'internal_accounts', "currency = 'EUR' and customer_id is not null", []],
    ['internal accounts of a rare type', '/customers/internal-accounts?type=EMBEDDED_WALLET', 'InternalAccount', 'internal_accounts', "type = 'EMBEDDED_WALLET' and customer_id is not null", []],
  ] as const) {
    it(`${what}: the page reads its own rows, not the platform's ${ROWS}`, async () => {
      await expectOwnRows(path, type, table, where, values);
    });
  }

  it(`customers created recently (a sync since its last run): the page stops at their ids, not reading the platform's ${ROWS}`, async () => {
    const { rows } = await ctx.handle.db.executeQuery<{ since: string }>(
      CompiledQuery.raw(`select to_json(max(created_at) - interval '10.5 seconds') #>> '{}' as since from customers where platform_id = $1`, [ctx.platform.uuid]),
    );
    const since = new Date(rows[0]!.since).toISOString();
    await expectOwnRows(`/customers?createdAfter=${encodeURIComponent(since)}`, 'Customer', 'customers', 'created_at >= $2 and deleted_at is null', [since]);
  });

  it('a value nearly every row holds reads only the page too, halfway down the list as well', async () => {
    // A cursor halfway down: the page starts at the cursor inside the value's rows, not at their newest.
    const { rows } = await ctx.handle.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(`select id from customers where platform_id = $1 and right(id::text, 12) = lpad(to_hex(${ROWS / 2}), 12, '0')`, [ctx.platform.uuid]),
    );
    const halfway = encodeCursor(rows[0]!.id);
    for (const [path, table] of [
      ['/verifications?verificationStatus=APPROVED', 'verifications'],
      ['/customers?customerType=INDIVIDUAL', 'customers'],
      ['/customers?region=US&isIncludingDeleted=true', 'customers'],
      ['/customers/internal-accounts?type=INTERNAL_FIAT', 'internal_accounts'],
      [`/verifications?verificationStatus=APPROVED&cursor=${halfway}`, 'verifications'],
      [`/customers?customerType=INDIVIDUAL&cursor=${halfway}`, 'customers'],
      [`/customers/external-accounts?currency=USD&cursor=${halfway}`, 'external_accounts'],
      [`/customers/internal-accounts?currency=USD&cursor=${halfway}`, 'internal_accounts'],
    ] as const) {
      capture.statements.length = 0;
      const response = await ctx.app.inject({ method: 'GET', url: `${BASE}${path}&limit=20`, headers: { authorization: ctx.platform.auth } });
      expect(response.statusCode, response.body).toBe(200);
      expect((response.json() as { data: unknown[] }).data, path).toHaveLength(20);
      await expectFewPagesRead(schema, capture.statements.filter((s) => new RegExp(`from "${table}"`).test(s.text)));
    }
  });
});
