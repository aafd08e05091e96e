import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accountBalance,
  findLedgerTransaction,
  Ledger,
  LedgerError,
  openInternalLedgerAccount,
  systemAccountId,
  verifyLedger,
  type LedgerAccountRef,
} from '../../src/modules/ledger/index.js';
import { createPlatform } from '../../src/modules/platforms/index.js';
import { systemClock } from '../../src/platform/clock.js';
import type { Db, DbHandle, Tx } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openDatabaseBefore, openTestDatabase } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/**
 * A reversal is final (migration 0055): reversing a refund would put the refunded payment's money
 * back in force while the payment still shows as reversed. A transaction is reversed once. Both
 * are the database's rules (ledger_apply), and `corridor ledger verify` names books that break
 * them. Both engines.
 */
const ledger = new Ledger({ clock: systemClock, hotAccountShards: 4, onInternalBalancesChanged: async () => {} });
const FUNDING: LedgerAccountRef = { kind: 'SANDBOX_FUNDING', currency: 'USD' };
const FEES: LedgerAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };
const ACH: LedgerAccountRef = { kind: 'SETTLEMENT', rail: 'ACH', currency: 'USD' };
const usd = (from: LedgerAccountRef, to: LedgerAccountRef, amount: bigint) => ({ from, to, amount, currency: 'USD' });

/** A platform whose account A was funded 10 000 and paid B 1 000 with a fee of 25, then refunded. */
async function books(db: Db) {
  const run = <T>(work: (trx: Tx) => Promise<T>) => withTx(db, work);
  const platformId = await run(async (trx) => (await createPlatform(trx, systemClock, { name: 'reversals', environment: 'sandbox' })).platformUuid);
  const [a, b] = [uuidv7(), uuidv7()];
  for (const id of [a, b]) await run((trx) => openInternalLedgerAccount(trx, { id, platformId, currency: 'USD', now: new Date() }));
  const A: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: a };
  const B: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: b };
  await run((trx) => ledger.transfer(trx, { platformId, reference: 'fund', postings: [usd(FUNDING, A, 10_000n)] }));
  const pay = await run((trx) => ledger.transfer(trx, { platformId, reference: 'pay', postings: [usd(A, B, 1_000n), usd(A, FEES, 25n)] }));
  const refund = await run((trx) => ledger.reverse(trx, { platformId, transactionId: pay.id, reference: 'refund' }));
  return { platformId, A, B, pay: pay.id, refund: refund.id };
}

async function refusal(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LedgerError);
  return (error as LedgerError).reason;
}

describe('reversals', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
  });
  afterAll(() => drop());

  it('a reversal is not reversible, a transaction is reversed once, and a refusal changes nothing', async () => {
    const db = handle.db;
    const k = await books(db);
    const reverse = (transactionId: string, reference: string) => withTx(db, (trx) => ledger.reverse(trx, { platformId: k.platformId, transactionId, reference }));
    expect(await refusal(reverse(k.refund, 'refund-of-refund'))).toBe('NOT_REVERSIBLE');
    expect(await refusal(reverse(k.pay, 'refund-again'))).toBe('NOT_REVERSIBLE');
    // The refund's own reference replays it.
    expect(await reverse(k.pay, 'refund')).toMatchObject({ id: k.refund, replayed: true });

    expect((await accountBalance(db, k.platformId, k.A)).available).toBe(10_000n);
    expect((await accountBalance(db, k.platformId, k.B)).available).toBe(0n);
    expect(await findLedgerTransaction(db, k.platformId, { reference: 'refund-of-refund' })).toBeUndefined();
    const refund = await findLedgerTransaction(db, k.platformId, { id: k.refund });
    expect(refund).toMatchObject({ reversesId: k.pay });
    expect(refund?.reversedBy).toBeUndefined();

    // The same for a posted hold: its post is reversible once, the reversal not at all.
    const hold = await withTx(db, (trx) => ledger.hold(trx, { platformId: k.platformId, reference: 'hold', postings: [usd(k.A, ACH, 300n)] }));
    const post = await withTx(db, (trx) => ledger.postHold(trx, { platformId: k.platformId, holdId: hold.id, reference: 'post' }));
    const back = await reverse(post.id, 'post-refund');
    expect(await refusal(reverse(back.id, 'post-refund-of-refund'))).toBe('NOT_REVERSIBLE');
    expect(await refusal(reverse(hold.id, 'hold-refund'))).toBe('NOT_REVERSIBLE');
    expect((await accountBalance(db, k.platformId, k.A)).available).toBe(10_000n);
    await expectLedgerConsistent(db);
  });

  it('ledger_apply takes a target only for a post, a void or a reversal', async () => {
    const db = handle.db;
    const k = await books(db);
    const apply = (kind: string, target: string | null, reverse: boolean) =>
      withTx(db, (trx) =>
        sql`select * from ledger_apply(${k.platformId}::uuid, ${uuidv7()}::uuid, ${`direct-${kind}-${reverse}`}, ${kind}, ${target}::uuid, ${reverse},
              'f', null, now(), 4::smallint, '{}'::uuid[], '{}'::text[], '{}'::bigint[], '{}'::text[], '{}'::text[], '{}'::text[])`.execute(trx),
      ).then(
        () => 'applied',
        (e: { code?: string }) => e.code,
      );
    const hold = await withTx(db, (trx) => ledger.hold(trx, { platformId: k.platformId, reference: 'hold', postings: [usd(k.A, ACH, 300n)] }));
    // A transfer or a hold naming a hold copied its entries: posted them (or held them again), the hold still open.
    expect(await apply('POSTED', hold.id, false)).toBe('22023');
    expect(await apply('PENDING', hold.id, false)).toBe('22023');
    expect(await apply('PENDING', k.pay, true)).toBe('22023');
    expect(await apply('POST_PENDING', null, false)).toBe('22023');
    expect(await apply('POSTED', null, true)).toBe('22023');
    // No target and no lines: a transaction without entries.
    expect(await apply('POSTED', null, false)).toBe('22023');
    await expectLedgerConsistent(db);
  });

  it('verify judges a system account whose lifetime sums are near 2^63 instead of failing', async () => {
    const db = handle.db;
    const k = await books(db);
    const fees = systemAccountId(k.platformId, FEES);
    const { rows } = await sql<{ shard: number }>`select shard from ledger_entries where transaction_id = ${k.pay} and account_id = ${fees}`.execute(db);
    const shard = rows[0]!.shard;
    // As a restore or a manual fix could leave it; the CHECK allows it on a system account.
    await sql`update ledger_balances set debits_posted = 9223372036854775807, debits_pending = 1000 where account_id = ${fees} and shard = ${shard}`.execute(db);
    try {
      const report = await verifyLedger(db, { platformId: k.platformId });
      expect(report.breaches).toEqual([expect.objectContaining({ check: 'BALANCE_MISMATCH', subject: `${fees}#${shard}` })]);
    } finally {
      await sql`update ledger_balances set debits_posted = 25, debits_pending = 0 where account_id = ${fees} and shard = ${shard}`.execute(db);
    }
    await expectLedgerConsistent(db);
  });
});

describe('migration 0055 on books that hold a reversal of a reversal', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ handle, drop } = await openDatabaseBefore(55));
  }, 120_000);
  afterAll(() => drop());

  it('applies over it; verify names it before and after; no further one is written', async () => {
    const db = handle.db;
    const k = await books(db);
    const reverse = (transactionId: string, reference: string) => withTx(db, (trx) => ledger.reverse(trx, { platformId: k.platformId, transactionId, reference }));
    // Before 0055 the ledger wrote it: the payment's money moved again, the payment still reversed.
    const again = await reverse(k.refund, 'refund-of-refund');
    expect((await accountBalance(db, k.platformId, k.B)).available).toBe(1_000n);
    const expected = [{ check: 'RESOLUTION_INVALID', subject: again.id, detail: `reverses ${k.refund}, itself the reversal of ${k.pay}` }];
    expect((await verifyLedger(db, { platformId: k.platformId, batchSize: 2 })).breaches).toEqual(expected);

    expect(await migrate(db, listMigrations().filter((m) => m.version === 55))).toEqual(['0055_ledger_reversal_final']);
    expect((await verifyLedger(db, { batchSize: 1 })).breaches).toEqual(expected);
    expect(await refusal(reverse(again.id, 'third'))).toBe('NOT_REVERSIBLE');
  });
});
