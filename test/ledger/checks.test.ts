import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { openTestDatabase } from '../helpers/context.js';

/**
 * The database's own guarantees behind ledger_apply() (migration 0028: one CHECK per hot table,
 * calling ledger_balance_valid / ledger_transaction_valid / ledger_entry_valid): a write that
 * goes around the ledger is refused all the same.
 */
describe('ledger CHECK constraints', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  const platform = '0192f0a0-0000-7000-8000-000000000001';
  const internal = '0192f0a0-0000-7000-8000-000000000002';
  const hot = '0192f0a0-0000-7000-8000-000000000003';

  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
    const db = handle.db;
    await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${platform}, 'checks', 'sandbox', now(), now())`.execute(db);
    await sql`insert into ledger_accounts (id, platform_id, kind, currency, rail, shards, no_overdraft, created_at) values
      (${internal}, ${platform}, 'INTERNAL_ACCOUNT', 'USD', null, 1, true, now()),
      (${hot}, ${platform}, 'PLATFORM_FEES', 'USD', null, 2, false, now())`.execute(db);
    await sql`insert into ledger_balances (account_id, shard, platform_id, currency, shards, no_overdraft, credits_posted, updated_at) values
      (${internal}, 0, ${platform}, 'USD', 1, true, 100, now()), (${hot}, 0, ${platform}, 'USD', 2, false, 0, now()), (${hot}, 1, ${platform}, 'USD', 2, false, 0, now())`.execute(db);
  });
  afterAll(() => drop());

  /** Runs `statement` in a transaction that is rolled back: answers the error, if any. */
  async function attempt(statement: ReturnType<typeof sql>): Promise<string | undefined> {
    try {
      await withTx(handle.db, async (trx) => {
        await statement.execute(trx);
        throw new Error('rollback');
      });
    } catch (error) {
      const message = (error as Error).message;
      return message === 'rollback' ? undefined : message;
    }
    return undefined;
  }
  const refused = (check: string) => expect.stringMatching(new RegExp(`check constraint "${check}"`));

  it('balance rows: no sum below zero, shard within the account, internal accounts never overdrawn nor past 2^53 − 1', async () => {
    const balances = refused('ledger_balances_valid');
    expect(await attempt(sql`update ledger_balances set debits_posted = 101 where account_id = ${internal}`)).toEqual(balances);
    expect(await attempt(sql`update ledger_balances set debits_pending = 101 where account_id = ${internal}`)).toEqual(balances);
    expect(await attempt(sql`update ledger_balances set credits_posted = 9007199254740992 where account_id = ${internal}`)).toEqual(balances);
    for (const column of ['debits_posted', 'credits_posted', 'debits_pending', 'credits_pending']) {
      expect(await attempt(sql`update ledger_balances set ${sql.ref(column)} = -1 where account_id = ${hot} and shard = 0`)).toEqual(balances);
    }
    expect(await attempt(sql`update ledger_balances set shard = 2 where account_id = ${hot} and shard = 1`)).toEqual(balances);
    expect(await attempt(sql`update ledger_balances set shard = -1 where account_id = ${hot} and shard = 1`)).toEqual(balances);
    // Allowed: spending exactly what is there; a system account below zero (the platform's books) or past 2^53 − 1.
    expect(await attempt(sql`update ledger_balances set debits_posted = 60, debits_pending = 40 where account_id = ${internal}`)).toBeUndefined();
    expect(await attempt(sql`update ledger_balances set debits_posted = 5, credits_posted = 9007199254740992 where account_id = ${hot} and shard = 0`)).toBeUndefined();
  });

  it('transactions: reference of 1–255 characters, a known kind, a hold named exactly by posts and voids, reversals only POSTED', async () => {
    const transactions = refused('ledger_transactions_valid');
    const insert = (reference: string, kind: string, pendingId: string | null, reversesId: string | null) =>
      attempt(sql`insert into ledger_transactions (id, platform_id, reference, kind, pending_id, reverses_id, fingerprint, created_at)
        values (gen_random_uuid(), ${platform}, ${reference}, ${kind}, ${pendingId}::uuid, ${reversesId}::uuid, 'f', now())`);
    const other = '0192f0a0-0000-7000-8000-0000000000ff';
    expect(await insert('', 'POSTED', null, null)).toEqual(transactions);
    expect(await insert('x'.repeat(256), 'POSTED', null, null)).toEqual(transactions);
    expect(await insert('r', 'REFUND', null, null)).toEqual(transactions);
    expect(await insert('r', 'POST_PENDING', null, null)).toEqual(transactions);
    expect(await insert('r', 'VOID_PENDING', null, null)).toEqual(transactions);
    expect(await insert('r', 'POSTED', other, null)).toEqual(transactions);
    expect(await insert('r', 'PENDING', null, other)).toEqual(transactions);
    expect(await insert('x'.repeat(255), 'POSTED', null, null)).toBeUndefined();
    expect(await insert('r', 'POST_PENDING', other, null)).toBeUndefined();
    expect(await insert('r', 'POSTED', null, other)).toBeUndefined();
  });

  it('entries: a debit or a credit of a positive amount', async () => {
    const entries = refused('ledger_entries_valid');
    const insert = (side: string, amount: number) =>
      attempt(sql`insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount)
        values (gen_random_uuid(), 1, ${platform}, ${internal}, 0, 'USD', ${side}, ${amount})`);
    expect(await insert('X', 1)).toEqual(entries);
    expect(await insert('D', 0)).toEqual(entries);
    expect(await insert('C', -1)).toEqual(entries);
    expect(await insert('D', 1)).toBeUndefined();
    expect(await insert('C', 7)).toBeUndefined();
  });
});
