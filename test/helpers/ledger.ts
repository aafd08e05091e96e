import { expect } from 'vitest';
import { verifyLedger, type VerifyReport } from '../../src/modules/ledger/index.js';
import type { Db } from '../../src/platform/db/database.js';

/**
 * Runs `corridor ledger verify`'s checks on the test's database and fails the test on any breach
 * (listing them). Call it after every money flow: `await expectLedgerConsistent(ctx.handle.db)`.
 */
export async function expectLedgerConsistent(db: Db, options: { batchSize?: number } = {}): Promise<VerifyReport> {
  const report = await verifyLedger(db, options);
  expect(report.breaches, 'ledger invariants').toEqual([]);
  expect(report.ok).toBe(true);
  return report;
}
