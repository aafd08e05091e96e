import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { captureStatements, expectFewPagesRead } from '../helpers/explain.js';

/**
 * POST /uma/utxo-callback/{paymentId} finds the incoming UMA payment by its id alone (the URL
 * names no platform, and the route runs before any signature is checked), where the table's
 * primary key leads with platform_id (migration 0063, uma_incoming_payments_id). Two platforms
 * hold 10 000 incoming payments each; the callback for one of them is caught on its way to
 * PostgreSQL and run again under EXPLAIN (ANALYZE, BUFFERS), planned for its values and once for
 * any values: what it read is counted in pages. Without the index it read the whole primary
 * key (123 pages here, growing with every payment ever received) or the whole table.
 */
describe.runIf(onPostgres)('UMA callbacks on PostgreSQL whatever the incoming payments table holds', () => {
  const ROWS = 10_000;
  let ctx: TestContext;
  let schema: string;

  beforeAll(async () => {
    ctx = await createTestContext();
    const other = await ctx.newPlatform();
    for (const [platformId, idPrefix] of [
      [ctx.platform.uuid, '00000000-0000-7000-8000-'],
      [other.uuid, 'ffffffff-0000-7000-8000-'],
    ] as const) {
      await ctx.handle.db.executeQuery(
        CompiledQuery.raw(
          `insert into uma_incoming_payments (platform_id, id, customer_id, receiver_uma_address, sender_identifier, sender_vasp_domain,
             currency_code, amount, amount_msats, fee_msats, payment_hash, invoice, payer_data, status, created_at, expires_at)
           select $1, ($2 || lpad(to_hex(g), 12, '0'))::uuid, gen_random_uuid(), '$receiver@example.com', '$sender@vasp.example', 'vasp.example',
             'USD', 100, 100000, 0, md5($2 || g), 'lnbcrt' || md5($2 || g), '{}'::json, 'COMPLETED', now(), now() + interval '1 hour'
             from generate_series(1, ${ROWS}) g`,
          [platformId, idPrefix],
        ),
      );
    }
    await ctx.handle.db.executeQuery(CompiledQuery.raw('analyze uma_incoming_payments'));
    schema = (await ctx.handle.db.executeQuery<{ schema: string }>(CompiledQuery.raw('select current_schema() as schema'))).rows[0]!.schema;
  }, 60_000);
  afterAll(async () => {
    await ctx?.close();
  });

  it(`a post-transaction callback finds its payment in a few pages, not a walk of ${2 * ROWS} payments`, async () => {
    const capture = captureStatements((text) => /from "uma_incoming_payments"/.test(text));
    try {
      // A payment of the newer platform, whose rows come last in the primary key; the body is
      // refused after the lookup, which is all this test is about.
      const response = await ctx.app.inject({ method: 'POST', url: '/uma/utxo-callback/ffffffff-0000-7000-8000-000000001388', payload: {} });
      expect(response.statusCode, response.body).not.toBe(404);
    } finally {
      capture.restore();
    }
    await expectFewPagesRead(schema, capture.statements, 20);
  });
});
