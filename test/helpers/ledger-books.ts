import { expect } from 'vitest';
import { Ledger, openInternalLedgerAccount, verifyLedger, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import { createPlatform } from '../../src/modules/platforms/index.js';
import { systemClock } from '../../src/platform/clock.js';
import type { Db, Tx } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openTestDatabase } from './context.js';

/**
 * What the `corridor ledger verify` tests share: a database of the test file's own, the ledger
 * driven directly (no HTTP: the tests corrupt rows behind its back), and healthy books to corrupt.
 */

/** An account of Corridor's own (not a customer's): what `systemAccountId` names. */
export type SystemAccountRef = Exclude<LedgerAccountRef, { kind: 'INTERNAL_ACCOUNT' }>;

export const FEES: SystemAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };
export const FUNDING: SystemAccountRef = { kind: 'SANDBOX_FUNDING', currency: 'USD' };
export const ACH: SystemAccountRef = { kind: 'SETTLEMENT', rail: 'ACH', currency: 'USD' };

export const usd = (from: LedgerAccountRef, to: LedgerAccountRef, amount: bigint) => ({ from, to, amount, currency: 'USD' });

export const ledger = new Ledger({ clock: systemClock, hotAccountShards: 4, onInternalBalancesChanged: async () => {} });

/** A database of the test file's own, as the ledger's tests use it: its Kysely handle and how to drop it. */
export async function openLedgerTestDatabase(): Promise<{ db: Db; drop: () => Promise<void> }> {
  const { handle, drop } = await openTestDatabase();
  return { db: handle.db, drop };
}

/** A new platform with internal USD accounts of the given number, their ids and ledger refs. */
export async function platformWithAccounts(db: Db, name: string, count: number): Promise<{ platformId: string; ids: string[]; refs: LedgerAccountRef[] }> {
  const platformId = await withTx(db, async (trx) => (await createPlatform(trx, systemClock, { name, environment: 'sandbox' })).platformUuid);
  const ids = Array.from({ length: count }, () => uuidv7());
  for (const id of ids) await withTx(db, (trx) => openInternalLedgerAccount(trx, { id, platformId, currency: 'USD', now: new Date() }));
  return { platformId, ids, refs: ids.map((id): LedgerAccountRef => ({ kind: 'INTERNAL_ACCOUNT', id })) };
}

/**
 * A new platform's books with one of everything verify judges, checked healthy: A funded 10 000,
 * a transfer A → B of 1 000 with a fee of 25, a hold of 500 (and `postedHoldFee` to FEES, a
 * second posting, when given) posted, a hold of 300 voided, a hold of 200 open, the transfer
 * reversed.
 */
export async function healthyBooks(db: Db, options: { name: string; postedHoldFee?: bigint; batchSize: number }) {
  const { platformId, ids, refs } = await platformWithAccounts(db, options.name, 2);
  const [a, b] = ids as [string, string];
  const [A, B] = refs as [LedgerAccountRef, LedgerAccountRef];
  const run = <T>(work: (trx: Tx) => Promise<T>) => withTx(db, work);
  const funding = await run((trx) => ledger.transfer(trx, { platformId, reference: 'fund', postings: [usd(FUNDING, A, 10_000n)] }));
  const transfer = await run((trx) => ledger.transfer(trx, { platformId, reference: 'transfer', postings: [usd(A, B, 1_000n), usd(A, FEES, 25n)] }));
  const holdPostings = [usd(A, ACH, 500n), ...(options.postedHoldFee === undefined ? [] : [usd(A, FEES, options.postedHoldFee)])];
  const posted = await run((trx) => ledger.hold(trx, { platformId, reference: 'hold-1', postings: holdPostings }));
  const post = await run((trx) => ledger.postHold(trx, { platformId, holdId: posted.id, reference: 'post-1' }));
  const voided = await run((trx) => ledger.hold(trx, { platformId, reference: 'hold-2', postings: [usd(A, ACH, 300n)] }));
  await run((trx) => ledger.voidHold(trx, { platformId, holdId: voided.id, reference: 'void-2' }));
  const open = await run((trx) => ledger.hold(trx, { platformId, reference: 'hold-3', postings: [usd(A, ACH, 200n)] }));
  const reversal = await run((trx) => ledger.reverse(trx, { platformId, transactionId: transfer.id, reference: 'refund' }));
  const report = await verifyLedger(db, { platformId, batchSize: options.batchSize });
  expect(report.breaches).toEqual([]);
  expect(report.holds).toEqual({ open: 1, posted: 1, voided: 1 });
  return { platformId, a, b, funding: funding.id, transfer: transfer.id, posted: posted.id, post: post.id, voided: voided.id, open: open.id, reversal: reversal.id };
}
