import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemAccountId, verifyLedger, type LedgerAccountRef, type VerifyReport } from '../../src/modules/ledger/index.js';
import type { Db, Tx } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { ACH, FEES, FUNDING, healthyBooks, ledger, openLedgerTestDatabase, usd } from '../helpers/ledger-books.js';

/**
 * Each of `corridor ledger verify`'s checks (README "Invariants") against the one corruption only
 * it can see, on either engine — the other checks' sums agree — and healthy books it must not
 * flag: the exact finding is asserted, so a check that went blind, or one that reports a breach
 * twice or of the wrong kind, fails here. Each test corrupts a platform of its own.
 */
describe('ledger verify: each check sees its own corruption', () => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ db, drop } = await openLedgerTestDatabase()));
  afterAll(() => drop());

  const run = <T>(work: (trx: Tx) => Promise<T>) => withTx(db, work);
  const verify = (platformId: string, options: { batchSize?: number; maxBreaches?: number } = {}): Promise<VerifyReport> =>
    verifyLedger(db, { platformId, batchSize: 2, ...options });

  const books = () => healthyBooks(db, { name: 'verify rules', postedHoldFee: 5n, batchSize: 2 });

  /** Moves an entry's amount and its balance row's stored sum together: only the transaction is then wrong. */
  const entryOf = async (transactionId: string, accountId: string) =>
    (await sql<{ seq: number; shard: number; side: string }>`select seq, shard, side from ledger_entries where transaction_id = ${transactionId} and account_id = ${accountId}`.execute(db)).rows[0]!;

  /** A write the balance CHECK would refuse, as an operator's manual fix around the ledger could make it. */
  async function withoutBalanceCheck(work: () => Promise<unknown>): Promise<void> {
    await sql`alter table ledger_balances drop constraint ledger_balances_valid`.execute(db);
    try {
      await work();
    } finally {
      await sql`alter table ledger_balances add constraint ledger_balances_valid
        check (ledger_balance_valid(debits_posted, credits_posted, debits_pending, credits_pending, shard, shards, no_overdraft)) not valid`.execute(db);
    }
  }

  it('credits that exceed the debits: TRANSACTION_UNBALANCED, as debits that exceed the credits are', async () => {
    const k = await books();
    await sql`update ledger_entries set amount = amount + 1 where transaction_id = ${k.funding} and side = 'C'`.execute(db);
    await sql`update ledger_balances set credits_posted = credits_posted + 1 where account_id = ${k.a}`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'TRANSACTION_UNBALANCED', subject: k.funding, detail: 'USD: debits 10000, credits 10001' }]);
  });

  it('a breach in a later batch is reported once, not once per batch before it', async () => {
    const k = await books();
    // The open hold is the 7th of 8 transactions: batches of 2 read three before its own.
    const settlement = systemAccountId(k.platformId, ACH);
    const { shard } = await entryOf(k.open, settlement);
    await sql`update ledger_entries set amount = amount + 1 where transaction_id = ${k.open} and account_id = ${settlement}`.execute(db);
    await sql`update ledger_balances set credits_pending = credits_pending + 1 where account_id = ${settlement} and shard = ${shard}`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'TRANSACTION_UNBALANCED', subject: k.open, detail: 'USD: debits 200, credits 201' }]);
    expect(report.breachCount).toBe(1);
  });

  it('maxBreaches caps the list, breachCount counts them all', async () => {
    const k = await books();
    for (const id of [k.funding, k.transfer, k.open]) await sql`update ledger_entries set amount = amount + 1 where transaction_id = ${id} and side = 'C'`.execute(db);
    const all = await verify(k.platformId);
    expect(all.breachCount).toBeGreaterThan(3);
    expect(all.breaches).toHaveLength(all.breachCount);
    const capped = await verify(k.platformId, { maxBreaches: 2 });
    expect(capped.breaches).toEqual(all.breaches.slice(0, 2));
    expect(capped.breachCount).toBe(all.breachCount);
    expect(capped.ok).toBe(false);
  });

  it('an entry moved to another platform: ENTRY_WITHOUT_TRANSACTION (its transaction is not of that platform)', async () => {
    const k = await books();
    const other = await books();
    const { seq } = await entryOf(k.transfer, k.b);
    await sql`update ledger_entries set platform_id = ${other.platformId} where transaction_id = ${k.transfer} and seq = ${seq}`.execute(db);
    const report = await verify(other.platformId);
    expect(report.breaches).toContainEqual({ check: 'ENTRY_WITHOUT_TRANSACTION', subject: k.transfer, detail: `entry ${seq} names no transaction of its platform` });
  });

  it('an entry in a currency its account does not hold, or on a shard it does not have: ENTRY_WITHOUT_ACCOUNT', async () => {
    const k = await books();
    const toB = await entryOf(k.transfer, k.b);
    await sql`update ledger_entries set currency = 'EUR' where transaction_id = ${k.transfer} and seq = ${toB.seq}`.execute(db);
    let report = await verify(k.platformId);
    expect(report.breaches).toContainEqual({ check: 'ENTRY_WITHOUT_ACCOUNT', subject: k.transfer, detail: `entry ${toB.seq} on ${k.b}#0 EUR` });

    const k2 = await books();
    // A has one balance row (shard 0): an entry on its shard 1 is on no balance row.
    const fromA = await entryOf(k2.funding, k2.a);
    await sql`update ledger_entries set shard = 1 where transaction_id = ${k2.funding} and seq = ${fromA.seq}`.execute(db);
    report = await verify(k2.platformId);
    expect(report.breaches).toContainEqual({ check: 'ENTRY_WITHOUT_ACCOUNT', subject: k2.funding, detail: `entry ${fromA.seq} on ${k2.a}#1 USD` });
  });

  it("a post naming another platform's hold: RESOLUTION_INVALID, its target is of no transaction of its platform", async () => {
    const k = await books();
    const other = await books();
    await sql`update ledger_transactions set pending_id = ${other.open} where id = ${k.post}`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toContainEqual({ check: 'RESOLUTION_INVALID', subject: k.post, detail: 'names no transaction of its platform' });
  });

  it('a hold whose kind was changed after it was posted: RESOLUTION_INVALID, though the entries still mirror it', async () => {
    const k = await books();
    await sql`update ledger_transactions set kind = 'POSTED' where id = ${k.posted}`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toContainEqual({ check: 'RESOLUTION_INVALID', subject: k.post, detail: `does not match POSTED ${k.posted}` });
  });

  it('a post that lost one of its hold’s postings (still balanced, each of its entries one of the hold’s): RESOLUTION_INVALID', async () => {
    const k = await books();
    const A: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: k.a };
    const B: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: k.b };
    await run((trx) => ledger.transfer(trx, { platformId: k.platformId, reference: 'fund-b', postings: [usd(FUNDING, B, 100n)] }));
    // A pays 500 to ACH and B 5 in fees: four entries, one per account and side.
    const hold = await run((trx) => ledger.hold(trx, { platformId: k.platformId, reference: 'hold-4', postings: [usd(A, ACH, 500n), usd(B, FEES, 5n)] }));
    const post = await run((trx) => ledger.postHold(trx, { platformId: k.platformId, holdId: hold.id, reference: 'post-4' }));
    // The post keeps A's posting only, with every balance row following it: what it has, the hold has too.
    const fees = systemAccountId(k.platformId, FEES);
    const fee = await entryOf(post.id, fees);
    await sql`delete from ledger_entries where transaction_id = ${post.id} and account_id in (${fees}, ${k.b})`.execute(db);
    await sql`update ledger_balances set credits_posted = credits_posted - 5, credits_pending = credits_pending + 5 where account_id = ${fees} and shard = ${fee.shard}`.execute(db);
    await sql`update ledger_balances set debits_posted = debits_posted - 5, debits_pending = debits_pending + 5 where account_id = ${k.b}`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'RESOLUTION_INVALID', subject: post.id, detail: `does not match PENDING ${hold.id}` }]);
  });

  it('a posted hold refunded (a reversal of a POST_PENDING) is sound', async () => {
    const k = await books();
    await run((trx) => ledger.reverse(trx, { platformId: k.platformId, transactionId: k.post, reference: 'refund-post' }));
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([]);
    expect(report.holds).toEqual({ open: 1, posted: 1, voided: 1 });
  });

  it('a reversal of a reversal, written around the ledger: RESOLUTION_INVALID', async () => {
    const k = await books();
    const id = uuidv7();
    await sql`insert into ledger_transactions (id, platform_id, reference, kind, reverses_id, fingerprint, created_at)
      values (${id}, ${k.platformId}, 'refund-of-refund', 'POSTED', ${k.reversal}, 'f', now())`.execute(db);
    // Exactly the opposite of the refund (the transfer's own entries), with every balance row following it.
    await sql`insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount)
      select ${id}, seq, platform_id, account_id, shard, currency, side, amount from ledger_entries where transaction_id = ${k.transfer}`.execute(db);
    await sql`update ledger_balances b set debits_posted = b.debits_posted + e.debits, credits_posted = b.credits_posted + e.credits
      from (select account_id, shard, coalesce(sum(amount) filter (where side = 'D'), 0) as debits, coalesce(sum(amount) filter (where side = 'C'), 0) as credits
            from ledger_entries where transaction_id = ${id} group by account_id, shard) e
      where b.account_id = e.account_id and b.shard = e.shard`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'RESOLUTION_INVALID', subject: id, detail: `reverses ${k.reversal}, itself the reversal of ${k.transfer}` }]);
  });

  it("a balance row whose overdraft rule differs from its account's: BALANCE_MISMATCH", async () => {
    const k = await books();
    await sql`update ledger_balances set no_overdraft = false where account_id = ${k.a}`.execute(db);
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'BALANCE_MISMATCH', subject: `${k.a}#0`, detail: 'platform/currency/shards/no_overdraft differ from the account' }]);
  });

  it('a customer balance held below zero by a pending debit: NEGATIVE_BALANCE (available counts holds)', async () => {
    const k = await books();
    // B (0 after the refund) holds 1 it does not have; every sum agrees with the entries.
    const id = uuidv7();
    const settlement = systemAccountId(k.platformId, ACH);
    const [{ shard }] = (await sql<{ shard: number }>`select min(shard) as shard from ledger_balances where account_id = ${settlement}`.execute(db)).rows as [{ shard: number }];
    await withoutBalanceCheck(async () => {
      await sql`insert into ledger_transactions (id, platform_id, reference, kind, fingerprint, created_at) values (${id}, ${k.platformId}, 'overhold', 'PENDING', 'f', now())`.execute(db);
      await sql`insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount) values
        (${id}, 1, ${k.platformId}, ${k.b}, 0, 'USD', 'D', 1), (${id}, 2, ${k.platformId}, ${settlement}, ${shard}, 'USD', 'C', 1)`.execute(db);
      await sql`update ledger_balances set debits_pending = debits_pending + 1 where account_id = ${k.b}`.execute(db);
      await sql`update ledger_balances set credits_pending = credits_pending + 1 where account_id = ${settlement} and shard = ${shard}`.execute(db);
    });
    const report = await verify(k.platformId);
    expect(report.breaches).toEqual([{ check: 'NEGATIVE_BALANCE', subject: `${k.b}#0`, detail: 'available -1' }]);
    expect(report.holds).toEqual({ open: 2, posted: 1, voided: 1 });
  });

  it('every balance row is judged, the last batch included, and a lost last shard row is named', async () => {
    const k = await books();
    const rows = (await sql<{ account_id: string; shard: number }>`select account_id, shard from ledger_balances where platform_id = ${k.platformId} order by account_id, shard`.execute(db)).rows;
    // Batches of 2 over A, B and the 4 shards of each system account: the last row is in a batch of its own.
    expect(rows.length).toBeGreaterThan(12);
    const last = rows.at(-1)!;
    await sql`update ledger_balances set credits_posted = credits_posted + 1 where account_id = ${last.account_id} and shard = ${last.shard}`.execute(db);
    let report = await verify(k.platformId);
    expect(report.breaches).toEqual([expect.objectContaining({ check: 'BALANCE_MISMATCH', subject: `${last.account_id}#${last.shard}` })]);
    expect(report.balanceRows).toBe(rows.length);
    await sql`update ledger_balances set credits_posted = credits_posted - 1 where account_id = ${last.account_id} and shard = ${last.shard}`.execute(db);

    // A system account's last shard row (shard 3) lost.
    const funding = systemAccountId(k.platformId, FUNDING);
    await sql`delete from ledger_balances where account_id = ${funding} and shard = 3`.execute(db);
    report = await verify(k.platformId);
    expect(report.breaches).toContainEqual({ check: 'SHARDS_MISSING', subject: funding, detail: 'SANDBOX_FUNDING USD has 3 of its 4 shard rows (missing: 3)' });
  });
});
