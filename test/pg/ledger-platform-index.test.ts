import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, openInternalLedgerAccount, verifyLedger, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import { createPlatform } from '../../src/modules/platforms/index.js';
import { systemClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { onPostgres, openTestDatabase } from '../helpers/context.js';
import { captureStatements, expectFewPagesRead, pagesRead } from '../helpers/explain.js';

/**
 * `corridor ledger verify --platform` reads that platform's transactions, not every platform's
 * (migration 0055's ledger_transactions_platform, and verify's statements naming the platform as
 * a plain condition). An older platform holds 10 000 transactions, all of lower ids than the
 * small platform verified: walked through the primary key, every batch of the small platform's
 * first met all of the older one's. Each statement verify sends is run again under EXPLAIN
 * (ANALYZE, BUFFERS), planned for its values and once for any values (the generic plan its named
 * statement ends up on after a few batches); what it read is counted in pages, not timed. Before,
 * the first batch read ~170 pages on its generic plan, the whole older platform.
 */
describe.runIf(onPostgres)('ledger verify --platform reads its platform only (PostgreSQL)', () => {
  const OLDER_TRANSACTIONS = 10_000;
  let handle: DbHandle;
  let schema: string;
  let drop: () => Promise<void>;
  const ledger = new Ledger({ clock: systemClock, hotAccountShards: 4, onInternalBalancesChanged: async () => {} });

  beforeAll(async () => {
    const database = await openTestDatabase();
    ({ handle, drop } = database);
    schema = database.schema!;
  });
  afterAll(() => drop());

  it('the transaction batches of a small platform read a few pages, however many transactions an older platform has', async () => {
    const db = handle.db;
    const olderId = await withTx(db, async (trx) => (await createPlatform(trx, systemClock, { name: 'older', environment: 'sandbox' })).platformUuid);
    // Ids below every uuidv7 of today: the older platform's transactions come first in the primary key.
    await sql`insert into ledger_transactions (id, platform_id, reference, kind, fingerprint, created_at)
              select ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, ${olderId}::uuid, 'old-' || g, 'POSTED', 'f', now()
              from generate_series(1, ${OLDER_TRANSACTIONS}) g`.execute(db);
    const small = await withTx(db, async (trx) => (await createPlatform(trx, systemClock, { name: 'small', environment: 'sandbox' })).platformUuid);
    const a = uuidv7();
    await withTx(db, (trx) => openInternalLedgerAccount(trx, { id: a, platformId: small, currency: 'USD', now: new Date() }));
    const A: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: a };
    for (let i = 0; i < 12; i++) {
      await withTx(db, (trx) => ledger.transfer(trx, { platformId: small, reference: `fund-${i}`, postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: A, amount: 100n, currency: 'USD' }] }));
    }
    await sql`analyze ledger_transactions`.execute(db);

    const capture = captureStatements((text) => text.includes('from ledger_transactions t'));
    const report = await verifyLedger(db, { platformId: small, batchSize: 5 }).finally(() => capture.restore());
    expect(report.breaches).toEqual([]);
    expect(report.transactions).toBe(12);
    const batches = capture.statements.filter((s) => s.text.includes('left join lateral'));
    expect(batches.length).toBeGreaterThanOrEqual(3);
    await expectFewPagesRead(schema, batches, 30);
    // Each batch's checks look its few rows up one by one: pages by the batch, not by the ledger.
    // (PostgreSQL keeps this statement on custom plans: its generic plan is priced higher.)
    const checks = capture.statements.filter((s) => s.text.includes('with range_tx'));
    expect(checks.length).toBe(batches.length);
    for (const statement of checks) expect(await pagesRead(schema, statement)).toBeLessThan(200);
  });
});
