import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemAccountId, verifyLedger, type LedgerAccountRef, type VerifyReport } from '../../src/modules/ledger/index.js';
import type { Db, Tx } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { onPostgres } from '../helpers/context.js';
import { ACH, FEES, FUNDING, ledger, openLedgerTestDatabase, platformWithAccounts, usd } from '../helpers/ledger-books.js';

/**
 * Fault injection: healthy books, then one corruption at a time by direct SQL, written as a broken
 * restore, a bad manual fix or a bug could leave it (triggers and foreign keys off, a CHECK or a
 * unique index dropped inside the corrupting transaction). `corridor ledger verify` must name each,
 * and nothing on the healthy books around it.
 */
describe.runIf(onPostgres)('ledger verify under fault injection (PostgreSQL)', () => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ db, drop } = await openLedgerTestDatabase()));
  afterAll(() => drop());

  const FX_USD: LedgerAccountRef = { kind: 'FX', currency: 'USD' };
  const FX_EUR: LedgerAccountRef = { kind: 'FX', currency: 'EUR' };
  const SEPA: LedgerAccountRef = { kind: 'SETTLEMENT', rail: 'SEPA_INSTANT', currency: 'EUR' };

  /** Books of one platform: funding, transfers with fees, holds posted, voided and open, a refund, a cross-currency payment. */
  async function books() {
    const { platformId, ids, refs } = await platformWithAccounts(db, 'faults', 3);
    const [a, b, c] = ids as [string, string, string];
    const [A, B] = refs as [LedgerAccountRef, LedgerAccountRef];
    const run = <T>(work: (trx: Tx) => Promise<T>) => withTx(db, work);
    await run((trx) => ledger.transfer(trx, { platformId, reference: 'fund', postings: [usd(FUNDING, A, 10_000n)] }));
    const transfer = await run((trx) => ledger.transfer(trx, { platformId, reference: 'transfer', postings: [usd(A, B, 1_000n), usd(A, FEES, 25n)] }));
    for (let i = 0; i < 3; i++) await run((trx) => ledger.transfer(trx, { platformId, reference: `fee-${i}`, postings: [usd(A, FEES, 10n)] }));
    const posted = await run((trx) => ledger.hold(trx, { platformId, reference: 'hold-1', postings: [usd(A, ACH, 500n), usd(A, FEES, 5n)] }));
    const post = await run((trx) => ledger.postHold(trx, { platformId, holdId: posted.id, reference: 'post-1' }));
    const voided = await run((trx) => ledger.hold(trx, { platformId, reference: 'hold-2', postings: [usd(A, ACH, 300n)] }));
    const voiding = await run((trx) => ledger.voidHold(trx, { platformId, holdId: voided.id, reference: 'void-2' }));
    const open = await run((trx) => ledger.hold(trx, { platformId, reference: 'hold-3', postings: [usd(A, ACH, 200n)] }));
    const fx = await run((trx) =>
      ledger.hold(trx, { platformId, reference: 'fx', postings: [usd(A, FX_USD, 1_000n), { from: FX_EUR, to: SEPA, amount: 920n, currency: 'EUR' }] }),
    );
    const refund = await run((trx) => ledger.reverse(trx, { platformId, transactionId: transfer.id, reference: 'refund' }));
    const report = await verify(platformId);
    expect(report.breaches).toEqual([]);
    expect(report.holds).toEqual({ open: 2, posted: 1, voided: 1 });
    return { platformId, a, b, c, transfer: transfer.id, posted: posted.id, post: post.id, voided: voided.id, voiding: voiding.id, open: open.id, fx: fx.id, refund: refund.id };
  }

  const verify = (platformId: string | undefined, batchSize = 2): Promise<VerifyReport> => verifyLedger(db, { ...(platformId ? { platformId } : {}), batchSize });
  /** Runs a corruption as an operator's manual fix would: triggers and foreign keys off. */
  const corrupt = (work: (trx: Tx) => Promise<unknown>) =>
    withTx(db, async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await work(trx);
    });
  const entry = async (transactionId: string, accountId: string) =>
    (await sql<{ seq: number; shard: number }>`select seq, shard from ledger_entries where transaction_id = ${transactionId} and account_id = ${accountId}`.execute(db)).rows[0]!;
  const found = (report: VerifyReport, check: string, subject: string) => report.breaches.some((b) => b.check === check && b.subject.startsWith(subject));

  for (const column of ['debits_posted', 'credits_posted', 'debits_pending', 'credits_pending'] as const) {
    it(`a balance row's ${column} off by one: BALANCE_MISMATCH`, async () => {
      const k = await books();
      // ACH's shard of the open hold has every sum but credits_posted; A has every sum but credits_pending.
      const target = column === 'credits_pending' ? systemAccountId(k.platformId, ACH) : k.a;
      const shard = (await entry(k.open, target)).shard;
      await corrupt((trx) => sql`update ledger_balances set ${sql.ref(column)} = ${sql.ref(column)} + 1 where account_id = ${target} and shard = ${shard}`.execute(trx));
      const report = await verify(k.platformId);
      expect(report.breaches).toEqual([expect.objectContaining({ check: 'BALANCE_MISMATCH', subject: `${target}#${shard}` })]);
    });
  }

  it('a posting deleted, duplicated, moved to another account, currency or shard', async () => {
    const k = await books();
    const bEntry = await entry(k.transfer, k.b);
    await corrupt((trx) => sql`delete from ledger_entries where transaction_id = ${k.transfer} and seq = ${bEntry.seq}`.execute(trx));
    let report = await verify(k.platformId);
    expect(found(report, 'TRANSACTION_UNBALANCED', k.transfer)).toBe(true);
    expect(found(report, 'BALANCE_MISMATCH', `${k.b}#0`)).toBe(true);

    const k2 = await books();
    await corrupt((trx) => sql`insert into ledger_entries select transaction_id, 99, platform_id, account_id, shard, currency, side, amount from ledger_entries where transaction_id = ${k2.fx} and seq = 1`.execute(trx));
    report = await verify(k2.platformId);
    expect(found(report, 'TRANSACTION_UNBALANCED', k2.fx)).toBe(true);

    const k3 = await books();
    await corrupt((trx) => sql`update ledger_entries set account_id = ${k3.c} where transaction_id = ${k3.transfer} and account_id = ${k3.b}`.execute(trx));
    report = await verify(k3.platformId);
    expect(found(report, 'BALANCE_MISMATCH', `${k3.b}#0`)).toBe(true);
    expect(found(report, 'BALANCE_MISMATCH', `${k3.c}#0`)).toBe(true);

    const k4 = await books();
    await corrupt((trx) => sql`update ledger_entries set currency = 'EUR' where transaction_id = ${k4.transfer} and account_id = ${k4.b}`.execute(trx));
    report = await verify(k4.platformId);
    expect(found(report, 'TRANSACTION_UNBALANCED', k4.transfer)).toBe(true);
    expect(found(report, 'ENTRY_WITHOUT_ACCOUNT', k4.transfer)).toBe(true);

    const k5 = await books();
    const fees5 = systemAccountId(k5.platformId, FEES);
    const shard5 = (await entry(k5.transfer, fees5)).shard;
    await corrupt((trx) => sql`update ledger_entries set shard = ${(shard5 + 1) % 4} where transaction_id = ${k5.transfer} and account_id = ${fees5}`.execute(trx));
    report = await verify(k5.platformId);
    expect(found(report, 'BALANCE_MISMATCH', `${fees5}#${shard5}`)).toBe(true);
    expect(found(report, 'BALANCE_MISMATCH', `${fees5}#${(shard5 + 1) % 4}`)).toBe(true);
  });

  it('a transaction that does not balance in one currency only, its balance rows agreeing', async () => {
    const k = await books();
    const sepa = systemAccountId(k.platformId, SEPA);
    const { shard } = await entry(k.fx, sepa);
    await corrupt(async (trx) => {
      await sql`update ledger_entries set amount = amount + 1 where transaction_id = ${k.fx} and account_id = ${sepa}`.execute(trx);
      await sql`update ledger_balances set credits_pending = credits_pending + 1 where account_id = ${sepa} and shard = ${shard}`.execute(trx);
    });
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'TRANSACTION_UNBALANCED', subject: k.fx, detail: 'EUR: debits 920, credits 921' }]);
  });

  it('a POST_PENDING whose target is not a PENDING: RESOLUTION_INVALID', async () => {
    const k = await books();
    await corrupt((trx) => sql`update ledger_transactions set pending_id = ${k.transfer} where id = ${k.post}`.execute(trx));
    const report = await verify(k.platformId);
    expect(found(report, 'RESOLUTION_INVALID', k.post)).toBe(true);
  });

  it('a hold whose kind was changed after it was posted: RESOLUTION_INVALID', async () => {
    const k = await books();
    await corrupt((trx) => sql`update ledger_transactions set kind = 'POSTED' where id = ${k.posted}`.execute(trx));
    const report = await verify(k.platformId);
    expect(found(report, 'RESOLUTION_INVALID', k.post)).toBe(true);
  });

  it('a negative customer balance whose entries agree: NEGATIVE_BALANCE', async () => {
    const k = await books();
    await withTx(db, async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await sql`alter table ledger_balances drop constraint ledger_balances_valid`.execute(trx);
      await sql`update ledger_balances set debits_posted = debits_posted + 100000 where account_id = ${k.c}`.execute(trx);
      await sql`insert into ledger_transactions (id, platform_id, reference, kind, fingerprint, created_at) values (${uuidv7()}, ${k.platformId}, 'overdraft', 'POSTED', 'f', now())`.execute(trx);
      await sql`insert into ledger_entries select id, 1, platform_id, ${k.c}, 0, 'USD', 'D', 100000 from ledger_transactions where platform_id = ${k.platformId} and reference = 'overdraft'`.execute(trx);
      await sql`insert into ledger_entries select id, 2, platform_id, ${systemAccountId(k.platformId, FUNDING)}, 0, 'USD', 'C', 100000 from ledger_transactions where platform_id = ${k.platformId} and reference = 'overdraft'`.execute(trx);
      await sql`update ledger_balances set credits_posted = credits_posted + 100000 where account_id = ${systemAccountId(k.platformId, FUNDING)} and shard = 0`.execute(trx);
      await sql`alter table ledger_balances add constraint ledger_balances_valid check (ledger_balance_valid(debits_posted, credits_posted, debits_pending, credits_pending, shard, shards, no_overdraft)) not valid`.execute(trx);
    });
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'NEGATIVE_BALANCE', subject: `${k.c}#0`, detail: 'available -100000' }]);
  });

  it('a balance row of a deleted account; missing shard rows', async () => {
    const k = await books();
    await corrupt((trx) => sql`delete from ledger_accounts where id = ${k.c}`.execute(trx));
    let report = await verify(k.platformId);
    expect(found(report, 'BALANCE_MISMATCH', `${k.c}#0`)).toBe(true);

    const k2 = await books();
    const fees = systemAccountId(k2.platformId, FEES);
    await corrupt((trx) => sql`delete from ledger_balances where account_id = ${fees}`.execute(trx));
    report = await verify(k2.platformId);
    expect(found(report, 'SHARDS_MISSING', fees)).toBe(true);
    expect(found(report, 'ENTRY_WITHOUT_ACCOUNT', k2.transfer)).toBe(true);
  });

  it("an entry whose platform differs from its account's, verified for either platform and for all", async () => {
    const k = await books();
    const other = await books();
    await corrupt((trx) => sql`update ledger_entries set platform_id = ${other.platformId} where transaction_id = ${k.transfer} and account_id = ${k.b}`.execute(trx));
    for (const platformId of [k.platformId, other.platformId, undefined]) {
      const report = await verify(platformId);
      expect(report.ok, `verify ${platformId ?? 'all'}`).toBe(false);
    }
    const all = await verify(undefined);
    expect(found(all, 'ENTRY_WITHOUT_TRANSACTION', k.transfer)).toBe(true);
    expect(found(all, 'BALANCE_MISMATCH', `${k.b}#0`)).toBe(true);
  });

  it('a hold posted twice, a hold posted and voided (their unique index lost in a restore): RESOLVED_TWICE', async () => {
    const k = await books();
    await sql`drop index ledger_transactions_resolution`.execute(db);
    const copies: string[] = [];
    try {
      for (const kind of ['POST_PENDING', 'VOID_PENDING']) {
        const id = uuidv7();
        copies.push(id);
        await sql`insert into ledger_transactions (id, platform_id, reference, kind, pending_id, fingerprint, created_at) values (${id}, ${k.platformId}, ${`again-${kind}`}, ${kind}, ${k.posted}, 'f', now())`.execute(db);
        await sql`insert into ledger_entries select ${id}, seq, platform_id, account_id, shard, currency, side, amount from ledger_entries where transaction_id = ${k.posted}`.execute(db);
        const report = await verify(k.platformId);
        expect(found(report, 'RESOLVED_TWICE', k.posted), kind).toBe(true);
      }
    } finally {
      for (const id of copies) {
        await sql`delete from ledger_entries where transaction_id = ${id}`.execute(db);
        await sql`delete from ledger_transactions where id = ${id}`.execute(db);
      }
      await sql`create unique index ledger_transactions_resolution on ledger_transactions (pending_id) where pending_id is not null`.execute(db);
    }
  });

  it('no false breach while payments go on: every batch reads one snapshot', async () => {
    const k = await books();
    const A: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: k.a };
    let stop = false;
    let writes = 0;
    const writer = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const hold = await withTx(db, (trx) => ledger.hold(trx, { platformId: k.platformId, reference: `w${n}-${i}`, postings: [{ from: A, to: ACH, amount: 1n, currency: 'USD' }, { from: A, to: FEES, amount: 1n, currency: 'USD' }] }));
        await withTx(db, (trx) => (i % 2 ? ledger.postHold(trx, { platformId: k.platformId, holdId: hold.id, reference: `w${n}-${i}-r` }) : ledger.voidHold(trx, { platformId: k.platformId, holdId: hold.id, reference: `w${n}-${i}-r` })));
        await withTx(db, (trx) => ledger.transfer(trx, { platformId: k.platformId, reference: `w${n}-${i}-t`, postings: [{ from: FUNDING, to: A, amount: 3n, currency: 'USD' }, { from: FX_EUR, to: SEPA, amount: 2n, currency: 'EUR' }] }));
        writes++;
        // Paced so the books stay small enough for a verify in batches of one to be quick.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const writers = [0, 1, 2].map(writer);
    try {
      // Verify runs until the writers have written a dozen times meanwhile (how many rounds that takes is the machine's).
      for (let round = 0; (round < 2 || writes < 12) && round < 500; round++) {
        for (const batchSize of [1, 100_000]) {
          const report = await verifyLedger(db, { platformId: k.platformId, batchSize });
          expect(report.breaches, `round ${round}, batch ${batchSize}`).toEqual([]);
        }
      }
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    expect(writes).toBeGreaterThanOrEqual(12);
  }, 120_000);

  it('finishes while payments are written faster than it reads: transactions begun after it are not waited for', async () => {
    const k = await books();
    const A: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: k.a };
    let written = 0;
    // Two new transactions for every batch read: the newest id moves faster than the keyset.
    const racing = db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (written >= 400) throw new Error('verify is still chasing the newest transaction');
        for (let i = 0; i < 2; i++) {
          written++;
          await withTx(db, (trx) => ledger.transfer(trx, { platformId: k.platformId, reference: `race-${written}`, postings: [{ from: FUNDING, to: A, amount: 1n, currency: 'USD' }] }));
        }
        return args.result;
      },
    });
    const report = await verifyLedger(racing, { platformId: k.platformId, batchSize: 1 });
    expect(report.breaches).toEqual([]);
    // The 12 of the books, and at most the few written in the millisecond the check began.
    expect(report.transactions).toBeGreaterThanOrEqual(12);
    expect(report.transactions).toBeLessThan(20);
  }, 60_000);
});
