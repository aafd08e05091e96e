import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESEAL_BATCH, RESEAL_JOB } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { enqueueJob } from '../../src/platform/jobs/index.js';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { captureStatements, pagesRead } from '../helpers/explain.js';

/**
 * The re-seal job after a key rotation (`corridor identifiers rotate-key`) goes through a
 * platform's customers and owners a batch at a time. A resealed row no longer matches, and a
 * batch that started from the first id again walked past every row already done: n rows read
 * some n²/batch. Here 20 000 customers and owners need nothing and the last RESEAL_BATCH + 50 of
 * each are legacy plaintext: the job's second batch must start where the first ended, reading a
 * few pages (7 here), not the 20 000 rows before them (some 900 pages).
 */
describe.runIf(onPostgres)('the re-seal job on a platform with many customers', () => {
  const DONE = 20_000;
  const TO_SEAL = RESEAL_BATCH + 50;
  let ctx: TestContext;
  let schema: string;

  beforeAll(async () => {
    ctx = await createTestContext();
    const platform = ctx.platform.uuid;
    // Ids in the order the job walks them: the rows to seal after every row that is done.
    await sql`
      insert into customers (id, platform_id, platform_customer_id, customer_type, review_status, uma_address, profile, identifier, created_at, updated_at)
      select (case when g <= ${DONE} then '00000000' else 'ffffffff' end || '-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ${platform}, 'pc-' || g,
             'INDIVIDUAL', 'APPROVED', '$c' || g || '@uma.example', '{}'::jsonb, case when g > ${DONE} then '123-45-6789' end, now(), now()
        from generate_series(1, ${DONE + TO_SEAL}) g`.execute(ctx.handle.db);
    await sql`
      insert into beneficial_owners (id, platform_id, customer_id, roles, ownership_percentage, personal_info, identifier, identifier_sealed, identifier_key_version, kyc_status, created_at, updated_at)
      select (case when g <= ${DONE} then '00000000' else 'ffffffff' end || '-0000-7000-9000-' || lpad(to_hex(g), 12, '0'))::uuid, ${platform},
             '00000000-0000-7000-8000-000000000001', '{UBO}', 25, '{}'::jsonb,
             case when g > ${DONE} then '234-56-7890' end, case when g <= ${DONE} then 'sealed' end, case when g <= ${DONE} then 1 end,
             'UNVERIFIED', now(), now()
        from generate_series(1, ${DONE + TO_SEAL}) g`.execute(ctx.handle.db);
    await sql`analyze customers`.execute(ctx.handle.db);
    await sql`analyze beneficial_owners`.execute(ctx.handle.db);
    schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(ctx.handle.db)).rows[0]!.schema;
  }, 120_000);
  afterAll(async () => {
    await ctx?.close();
  });

  it('seals every legacy row, each batch after the one before', async () => {
    const capture = captureStatements((text) => /from "(customers|beneficial_owners)" inner join "platforms"/.test(text));
    try {
      await withTx(ctx.handle.db, (trx) => enqueueJob(trx, ctx.clock, { kind: RESEAL_JOB, platformId: ctx.platform.uuid, payload: {} }));
      await ctx.jobs.runDue();
    } finally {
      capture.restore();
    }
    const plaintext = await sql<{ customers: number; owners: number }>`
      select (select count(*)::int from customers where identifier is not null) as customers,
             (select count(*)::int from beneficial_owners where identifier is not null) as owners`.execute(ctx.handle.db);
    expect(plaintext.rows[0]).toEqual({ customers: 0, owners: 0 });

    // Two batches of each table: the first reads up to its rows to seal, wherever they are; the second starts after them.
    const customerBatches = capture.statements.filter((s) => s.text.includes('from "customers"'));
    const ownerBatches = capture.statements.filter((s) => s.text.includes('from "beneficial_owners"'));
    expect([customerBatches.length, ownerBatches.length]).toEqual([2, 2]);
    // Read twice, the second counted: the first visit after the job's updates may also prune their old versions.
    for (const second of [customerBatches[1]!, ownerBatches[1]!]) {
      expect(await pagesRead(schema, second, { runs: 2 }), second.text).toBeLessThan(100);
      expect(await pagesRead(schema, second, { plan: 'generic', runs: 2 }), second.text).toBeLessThan(100);
    }
  }, 120_000);
});
