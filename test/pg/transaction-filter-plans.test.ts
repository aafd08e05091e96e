import { CompiledQuery } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { captureStatements, expectFewPagesRead, pagesRead } from '../helpers/explain.js';
import { call, fundedCustomer, paymentInput, startPayment } from '../helpers/payments.js';

/**
 * GET /transactions filtered by a value few of a large platform's transactions hold (a status,
 * a type, an account, a platformCustomerId) reads the page's rows, not every transaction of the platform
 * (migration 0061). Without an index that leads with the filtered value, the page walks the
 * platform's created_at index and checks each row until the page is full or the platform's rows
 * run out. Each page statement the server sends is run again under EXPLAIN (ANALYZE, BUFFERS),
 * planned for its values and once for any values (a named statement's generic plan), and its
 * rows are those a plain query over the same rows answers.
 */
describe.runIf(onPostgres)('GET /transactions filters on PostgreSQL, on a large platform', () => {
  const ROWS = 20_000;
  const RARE_ACCOUNT = 'InternalAccount:019a0000-0000-7000-8000-00000000abcd';
  const RARE_UMA = '$rare.payee@example.com';
  const RARE_CUSTOMER = 'rare-platform-customer';
  let ctx: TestContext;
  let p: TestPlatform;
  let busyAccount: string;
  let schema: string;
  let capture: ReturnType<typeof captureStatements>;

  beforeAll(async () => {
    ctx = await createTestContext();
    p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 100_000);
    busyAccount = customer.accountId;
    const template = paymentInput(p, customer);
    await startPayment(ctx, template);
    // Copies of the payment, older than it, one a second: nearly all COMPLETED from the busy
    // account to 500 payees, and a few FAILED, PENDING, INCOMING, from or to a dormant account (some from it
    // to itself), to a UMA address or of a rare platformCustomerId.
    // Each copy's record is made once, in FROM: `(jsonb_populate_record(…)).*` in the select list
    // would make it once per column.
    const { rows } = await ctx.handle.db.executeQuery<{ n: number }>(
      CompiledQuery.raw(
        `with made as (
           insert into transactions
           select copy.*
             from (select * from transactions where platform_id = $1) t, generate_series(1, ${ROWS}) g,
                  jsonb_populate_record(null::transactions, to_jsonb(t) || jsonb_build_object(
                    'id', '00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'),
                    'quote_id', null,
                    'reconciliation_reference', 'CRD-' || lpad(to_hex(g), 16, '0'),
                    'created_at', t.created_at - g * interval '1 second',
                    'status', case when g % 4000 = 1 then 'FAILED' when g % 6000 = 2 then 'PENDING' else 'COMPLETED' end,
                    'type', case when g % 5000 = 8 then 'INCOMING' else t.type end,
                    'failure_reason', case when g % 4000 = 1 then 'QUOTE_EXECUTION_FAILED' end,
                    'platform_customer_id', case when g % 5000 = 6 then $3 else t.platform_customer_id end,
                    'source', case when g % 5000 in (3, 7) then t.source || jsonb_build_object('accountId', $2::text) else t.source end,
                    'destination', case
                      when g % 5000 in (4, 7) then jsonb_build_object('destinationType', 'ACCOUNT', 'accountId', $2::text, 'paymentRail', 'BOOK', 'currency', 'USD')
                      when g % 5000 = 5 then jsonb_build_object('destinationType', 'UMA_ADDRESS', 'umaAddress', $4::text, 'currency', 'USD')
                      else t.destination || jsonb_build_object('accountId', 'ExternalAccount:00000000-0000-7000-8000-' || lpad(to_hex(g % 500), 12, '0')) end)) copy
           returning 1)
         select count(*)::int as n from made`,
        [p.uuid, RARE_ACCOUNT, RARE_CUSTOMER, RARE_UMA],
      ),
    );
    expect(rows[0]!.n).toBe(ROWS);
    await ctx.handle.db.executeQuery(CompiledQuery.raw('analyze transactions'));
    schema = (await ctx.handle.db.executeQuery<{ schema: string }>(CompiledQuery.raw('select current_schema() as schema'))).rows[0]!.schema;
    capture = captureStatements((text) => /from "transactions"/.test(text) && /\blimit\b/i.test(text));
  }, 60_000);
  afterEach(() => {
    capture.statements.length = 0;
  });
  afterAll(async () => {
    capture?.restore();
    await ctx?.close();
  });

  /** The ids a plain query over the platform's rows answers, newest first: what the page must hold. */
  const expected = async (where: string, values: readonly unknown[], limit: number) => {
    const { rows } = await ctx.handle.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(`select id from transactions where platform_id = $1 and (${where}) order by created_at desc, id desc limit ${limit}`, [p.uuid, ...values]),
    );
    return rows.map((row) => `Transaction:${row.id}`);
  };

  const pageOf = async (query: string) => {
    const response = await call(ctx, p, 'GET', `/transactions?limit=20&${query}`);
    expect(response.statusCode, response.body).toBe(200);
    const pageStatements = [...capture.statements];
    expect(pageStatements.length).toBeGreaterThan(0);
    return { page: response.json() as { data: Array<{ id: string }>; hasMore: boolean; nextCursor?: string }, pageStatements };
  };


  const uppercased = (id: string) => id.replace(/:(.*)$/, (_, uuid: string) => `:${uuid.toUpperCase()}`);

  for (const [what, query, where, values] of [
    ['status=FAILED', 'status=FAILED', "status = 'FAILED'", []],
    ['status=PENDING (the reconcile poll)', 'status=PENDING', "status = 'PENDING'", []],
    ['type=INCOMING on a platform that nearly only pays out', 'type=INCOMING', "type = 'INCOMING'", []],
    ['the dormant account as sender', `senderAccountIdentifier=${RARE_ACCOUNT}`, "source->>'accountId' = $2", [RARE_ACCOUNT]],
    ['the dormant account as sender, its uuid in upper case', `senderAccountIdentifier=${uppercased(RARE_ACCOUNT)}`, "source->>'accountId' = $2", [RARE_ACCOUNT]],
    ['the dormant account as receiver', `receiverAccountIdentifier=${RARE_ACCOUNT}`, "destination->>'accountId' = $2", [RARE_ACCOUNT]],
    ['the dormant account either way', `accountIdentifier=${RARE_ACCOUNT}`, "source->>'accountId' = $2 or destination->>'accountId' = $2", [RARE_ACCOUNT]],
    ['a UMA address either way', `accountIdentifier=${encodeURIComponent(RARE_UMA)}`, "destination->>'umaAddress' = $2", [RARE_UMA]],
    ['a rare platformCustomerId', `platformCustomerId=${RARE_CUSTOMER}`, 'platform_customer_id = $2', [RARE_CUSTOMER]],
  ] as const) {
    it(`${what}: the page reads its own rows, not the platform's ${ROWS}`, async () => {
      const { page, pageStatements } = await pageOf(query);
      const rows = await expected(where, values, 21);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.length).toBeLessThan(ROWS / 100);
      expect(page.data.map((t) => t.id)).toEqual(rows.slice(0, 20));
      expect(page.hasMore).toBe(rows.length > 20);
      // A page of at most 21 rows, not the walk through the platform's created_at index.
      await expectFewPagesRead(schema, pageStatements);
    });
  }

  for (const [what, query, where, values] of [
    ['status=FAILED', 'status=FAILED', "status = 'FAILED'", []],
    ['the dormant account either way', `accountIdentifier=${RARE_ACCOUNT}`, "source->>'accountId' = $2 or destination->>'accountId' = $2", [RARE_ACCOUNT]],
  ] as const) {
    it(`${what}: a later page, oldest first, reads its own rows too`, async () => {
      const first = await call(ctx, p, 'GET', `/transactions?limit=2&${query}&sortOrder=asc`);
      const { nextCursor } = first.json() as { nextCursor: string };
      capture.statements.length = 0;
      const response = await call(ctx, p, 'GET', `/transactions?limit=2&${query}&sortOrder=asc&cursor=${encodeURIComponent(nextCursor)}`);
      expect(response.statusCode, response.body).toBe(200);
      const oldest = (await expected(where, values, ROWS)).reverse();
      expect((response.json() as { data: Array<{ id: string }> }).data.map((t) => t.id)).toEqual(oldest.slice(2, 4));
      await expectFewPagesRead(schema, [...capture.statements]);
    });
  }

  it('a value nearly every row holds reads only the page too', async () => {
    for (const query of ['status=COMPLETED', `senderAccountIdentifier=${busyAccount}`, `accountIdentifier=${busyAccount}`]) {
      capture.statements.length = 0;
      const { page, pageStatements } = await pageOf(query);
      expect(page.data).toHaveLength(20);
      expect(page.hasMore).toBe(true);
      for (const statement of pageStatements) expect(await pagesRead(schema, statement), statement.text).toBeLessThan(100);
    }
  });
});
