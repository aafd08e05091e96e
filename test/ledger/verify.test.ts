import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemAccountId, verifyLedger, type LedgerAccountRef, type VerifyReport } from '../../src/modules/ledger/index.js';
import type { Db } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { ACH, FEES, FUNDING, healthyBooks, ledger, openLedgerTestDatabase } from '../helpers/ledger-books.js';

/**
 * `verifyLedger` (`corridor ledger verify`) against rows corrupted behind the ledger's back: each
 * class of breach an operator must hear about is reported, by check, subject and a readable detail.
 * Each test corrupts the books of a platform of its own and verifies that platform only.
 */
describe('ledger verify finds every class of breach', () => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => ({ db, drop } = await openLedgerTestDatabase()));
  afterAll(() => drop());


  const books = () => healthyBooks(db, { name: 'verify', batchSize: 3 });

  const verify = (platformId: string, batchSize = 3): Promise<VerifyReport> => verifyLedger(db, { platformId, batchSize });
  const shardsOf = async (platformId: string, ref: Exclude<LedgerAccountRef, { kind: 'INTERNAL_ACCOUNT' }>) =>
    (await sql<{ shard: number; debits_posted: bigint; credits_posted: bigint }>`select shard, debits_posted, credits_posted from ledger_balances where account_id = ${systemAccountId(platformId, ref)} order by shard`.execute(db)).rows;

  /**
   * Writes a post, void or reversal behind ledger_apply()'s back, its entries a copy of `entriesOf`'s:
   * what a second resolution or reversal would look like had its unique index not refused it.
   */
  async function writeCopy(id: string, platformId: string, reference: string, kind: string, target: { pendingId: string } | { reversesId: string }, entriesOf: string): Promise<void> {
    const pendingId = 'pendingId' in target ? target.pendingId : null;
    const reversesId = 'reversesId' in target ? target.reversesId : null;
    await sql`insert into ledger_transactions (id, platform_id, reference, kind, pending_id, reverses_id, fingerprint, created_at)
      values (${id}, ${platformId}, ${reference}, ${kind}, ${pendingId}::uuid, ${reversesId}::uuid, 'f', now())`.execute(db);
    await sql`insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount)
      select ${id}, seq, platform_id, account_id, shard, currency, side, amount from ledger_entries where transaction_id = ${entriesOf}`.execute(db);
  }

  it('a transaction whose debits and credits differ: TRANSACTION_UNBALANCED, with both sums', async () => {
    const books1 = await books();
    // The funding's debit grows by 1 and so does its shard's stored sum: only the transaction is wrong.
    await sql`update ledger_entries set amount = amount + 1 where transaction_id = ${books1.funding} and side = 'D'`.execute(db);
    const funding = systemAccountId(books1.platformId, FUNDING);
    await sql`update ledger_balances set debits_posted = debits_posted + 1 where account_id = ${funding} and debits_posted > 0`.execute(db);
    const report = await verify(books1.platformId);
    expect(report.ok).toBe(false);
    expect(report.breaches).toEqual([{ check: 'TRANSACTION_UNBALANCED', subject: books1.funding, detail: 'USD: debits 10001, credits 10000' }]);
  });

  it('a transaction that lost one side: TRANSACTION_UNBALANCED says which side is missing', async () => {
    const books1 = await books();
    await sql`delete from ledger_entries where transaction_id = ${books1.funding} and side = 'C'`.execute(db);
    const report = await verify(books1.platformId);
    expect(report.breaches).toContainEqual({ check: 'TRANSACTION_UNBALANCED', subject: books1.funding, detail: 'USD: debits 10000, credits 0' });
    // A's stored balance still counts the lost credit.
    expect(report.breaches).toContainEqual(expect.objectContaining({ check: 'BALANCE_MISMATCH', subject: `${books1.a}#0` }));
  });

  it('a stored balance that is not the sum of its postings: BALANCE_MISMATCH, with both', async () => {
    const books1 = await books();
    await sql`update ledger_balances set credits_posted = credits_posted + 1 where account_id = ${books1.b}`.execute(db);
    const report = await verify(books1.platformId);
    // B: credited 1 000 by the transfer, debited 1 000 by its reversal.
    expect(report.breaches).toEqual([
      { check: 'BALANCE_MISMATCH', subject: `${books1.b}#0`, detail: 'debits/credits posted, debits/credits pending: stored 1000/1001/0/0, entries 1000/1000/0/0' },
    ]);
  });

  it('a sharded fee account whose shards do not add up, or lost a shard row', async () => {
    const books1 = await books();
    const shards = await shardsOf(books1.platformId, FEES);
    expect(shards).toHaveLength(4);
    const paid = shards.find((s) => s.credits_posted > 0n)!;
    const other = shards.find((s) => s.shard !== paid.shard)!;
    // The fee moved to another shard: the account's total is right, each shard is not.
    await sql`update ledger_balances set credits_posted = credits_posted - 25 where account_id = ${systemAccountId(books1.platformId, FEES)} and shard = ${paid.shard}`.execute(db);
    await sql`update ledger_balances set credits_posted = credits_posted + 25 where account_id = ${systemAccountId(books1.platformId, FEES)} and shard = ${other.shard}`.execute(db);
    let report = await verify(books1.platformId);
    expect(report.breaches.map((b) => [b.check, b.subject])).toEqual(
      [paid.shard, other.shard].sort((x, y) => x - y).map((shard) => ['BALANCE_MISMATCH', `${systemAccountId(books1.platformId, FEES)}#${shard}`]),
    );
    await sql`update ledger_balances set credits_posted = credits_posted + 25 where account_id = ${systemAccountId(books1.platformId, FEES)} and shard = ${paid.shard}`.execute(db);
    await sql`update ledger_balances set credits_posted = credits_posted - 25 where account_id = ${systemAccountId(books1.platformId, FEES)} and shard = ${other.shard}`.execute(db);
    expect((await verify(books1.platformId)).ok).toBe(true);
    // A shard row with no entries disappears: nothing sums wrong, but a payment that picks that shard fails.
    const unused = shards.find((s) => s.credits_posted === 0n && s.debits_posted === 0n)!;
    await sql`delete from ledger_balances where account_id = ${systemAccountId(books1.platformId, FEES)} and shard = ${unused.shard}`.execute(db);
    report = await verify(books1.platformId);
    expect(report.breaches).toEqual([
      { check: 'SHARDS_MISSING', subject: systemAccountId(books1.platformId, FEES), detail: `PLATFORM_FEES USD has 3 of its 4 shard rows (missing: ${unused.shard})` },
    ]);
  });

  it('a customer balance below zero, even one its postings agree with: NEGATIVE_BALANCE', async () => {
    const books1 = await books();
    // Only a write around ledger_apply() and its CHECK constraint could do this: B pays out 1 it does not have: one minor unit below zero is a breach.
    await sql`alter table ledger_balances drop constraint ledger_balances_valid`.execute(db);
    try {
      const id = uuidv7();
      const settlement = systemAccountId(books1.platformId, ACH);
      const [{ shard }] = (await sql<{ shard: number }>`select min(shard) as shard from ledger_balances where account_id = ${settlement}`.execute(db)).rows as [{ shard: number }];
      await sql`insert into ledger_transactions (id, platform_id, reference, kind, fingerprint, created_at) values (${id}, ${books1.platformId}, 'overdraw', 'POSTED', 'f', now())`.execute(db);
      await sql`insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount) values
        (${id}, 1, ${books1.platformId}, ${books1.b}, 0, 'USD', 'D', 1), (${id}, 2, ${books1.platformId}, ${settlement}, ${shard}, 'USD', 'C', 1)`.execute(db);
      await sql`update ledger_balances set debits_posted = debits_posted + 1 where account_id = ${books1.b}`.execute(db);
      await sql`update ledger_balances set credits_posted = credits_posted + 1 where account_id = ${settlement} and shard = ${shard}`.execute(db);
    } finally {
      await sql`alter table ledger_balances add constraint ledger_balances_valid
        check (ledger_balance_valid(debits_posted, credits_posted, debits_pending, credits_pending, shard, shards, no_overdraft)) not valid`.execute(db);
    }
    const report = await verify(books1.platformId);
    expect(report.breaches).toEqual([{ check: 'NEGATIVE_BALANCE', subject: `${books1.b}#0`, detail: 'available -1' }]);
  });

  it('a hold both posted and voided (neither posted, voided nor open): RESOLVED_TWICE', async () => {
    const books1 = await books();
    // Only without the unique index that makes a second resolution fail could this be written.
    await sql`drop index ledger_transactions_resolution`.execute(db);
    const id = uuidv7();
    try {
      await writeCopy(id, books1.platformId, 'void-1', 'VOID_PENDING', { pendingId: books1.posted }, books1.posted);
      const report = await verify(books1.platformId);
      expect(report.breaches).toContainEqual({ check: 'RESOLVED_TWICE', subject: books1.posted, detail: `hold resolved 2 times: ${[books1.post, id].sort().map((t) => (t === id ? `VOID_PENDING ${t}` : `POST_PENDING ${t}`)).join(', ')}` });
      expect(report.breaches.filter((b) => b.check === 'RESOLVED_TWICE')).toHaveLength(1);
      expect(report.holds).toEqual({ open: 1, posted: 0, voided: 1 });
      expect(report.transactions).toBe(9);
    } finally {
      await sql`delete from ledger_entries where transaction_id = ${id}`.execute(db);
      await sql`delete from ledger_transactions where id = ${id}`.execute(db);
      await sql`create unique index ledger_transactions_resolution on ledger_transactions (pending_id) where pending_id is not null`.execute(db);
    }
  });

  it('a transaction reversed twice, with balances that agree: RESOLVED_TWICE', async () => {
    const books1 = await books();
    // B has money of its own, so a second refund of the transfer can be written with every sum agreeing.
    await withTx(db, (trx) =>
      ledger.transfer(trx, { platformId: books1.platformId, reference: 'fund-b', postings: [{ from: FUNDING, to: { kind: 'INTERNAL_ACCOUNT', id: books1.b }, amount: 5_000n, currency: 'USD' }] }),
    );
    await sql`drop index ledger_transactions_reversal`.execute(db);
    const id = uuidv7();
    try {
      await writeCopy(id, books1.platformId, 'refund-2', 'POSTED', { reversesId: books1.transfer }, books1.reversal);
      await sql`update ledger_balances b set debits_posted = b.debits_posted + e.debits, credits_posted = b.credits_posted + e.credits
        from (select account_id, shard, coalesce(sum(amount) filter (where side = 'D'), 0) as debits, coalesce(sum(amount) filter (where side = 'C'), 0) as credits
              from ledger_entries where transaction_id = ${id} group by account_id, shard) e
        where b.account_id = e.account_id and b.shard = e.shard`.execute(db);
      // ... which the other checks cannot see: each refund mirrors the transfer, each sum agrees.
      const report = await verify(books1.platformId);
      expect(report.breaches).toEqual([{ check: 'RESOLVED_TWICE', subject: books1.transfer, detail: `reversed 2 times: ${[books1.reversal, id].sort().join(', ')}` }]);
    } finally {
      await sql`create unique index ledger_transactions_reversal_restored on ledger_transactions (reverses_id) where reverses_id is not null and reference <> 'refund-2'`.execute(db);
    }
  });

  it('a post that does not match its hold, entries of no transaction or account, a transaction without entries', async () => {
    const books1 = await books();
    await sql`update ledger_entries set amount = amount + 1 where transaction_id = ${books1.post}`.execute(db);
    await sql`delete from ledger_entries where transaction_id = ${books1.open}`.execute(db);
    const stray = uuidv7();
    await sql`insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount) values (${stray}, 1, ${books1.platformId}, ${uuidv7()}, 0, 'USD', 'C', 5)`.execute(db);
    const checks = new Map((await verify(books1.platformId)).breaches.map((b) => [`${b.check} ${b.subject}`, b.detail]));
    expect(checks.get(`RESOLUTION_INVALID ${books1.post}`)).toBe(`does not match PENDING ${books1.posted}`);
    expect(checks.get(`TRANSACTION_WITHOUT_ENTRIES ${books1.open}`)).toBe('PENDING hold-3');
    expect(checks.get(`ENTRY_WITHOUT_TRANSACTION ${stray}`)).toBe('entry 1 names no transaction of its platform');
    expect(checks.get(`ENTRY_WITHOUT_ACCOUNT ${stray}`)).toMatch(/^entry 1 on [0-9a-f-]{36}#0 USD$/);
  });

  it('reads in keyset batches: no query returns more rows than a batch, however large the books', async () => {
    const books1 = await books();
    let largest = 0;
    let queries = 0;
    const counted = db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        queries++;
        largest = Math.max(largest, args.result.rows.length);
        return args.result;
      },
    });
    let progress = 0;
    const report = await verifyLedger(counted, { platformId: books1.platformId, batchSize: 2, onProgress: () => progress++ });
    expect(report.ok).toBe(true);
    expect(report.transactions).toBe(8);
    expect(largest).toBeLessThanOrEqual(2);
    expect(progress).toBeGreaterThanOrEqual(Math.ceil(report.transactions / 2) + Math.ceil(report.balanceRows / 2));
    expect(queries).toBeGreaterThan(progress);
  });
});
