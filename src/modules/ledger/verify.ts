import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';

export type BreachCheck =
  | 'TRANSACTION_UNBALANCED'
  | 'TRANSACTION_WITHOUT_ENTRIES'
  | 'ENTRY_WITHOUT_TRANSACTION'
  | 'ENTRY_WITHOUT_ACCOUNT'
  | 'RESOLUTION_INVALID'
  | 'RESOLVED_TWICE'
  | 'BALANCE_MISMATCH'
  | 'SHARDS_MISSING'
  | 'NEGATIVE_BALANCE';

export interface Breach {
  check: BreachCheck;
  /** The transaction or account (`<uuid>`), or balance row (`<uuid>#<shard>`), concerned. */
  subject: string;
  detail: string;
}

export interface VerifyReport {
  ok: boolean;
  transactions: number;
  balanceRows: number;
  /** Holds by outcome; a hold resolved more than once (RESOLVED_TWICE) is in none of them. */
  holds: { open: number; posted: number; voided: number };
  /** Every breach found, up to `maxBreaches`; `breachCount` counts them all. */
  breaches: Breach[];
  breachCount: number;
}

export interface VerifyOptions {
  /** Only this platform's ledger (uuid). */
  platformId?: string;
  /** Rows read per batch; each batch is one short repeatable-read transaction. Default 1000. */
  batchSize?: number;
  maxBreaches?: number;
  /** Called after each batch, e.g. to print progress. */
  onProgress?: (report: VerifyReport) => void;
}

const NIL = '00000000-0000-0000-0000-000000000000';

interface TransactionBatchRow {
  check: BreachCheck;
  subject: string;
  detail: string;
}

/**
 * Checks every invariant of the ledger (README "Invariants") in keyset batches, so it runs
 * against a production database without loading a table into memory or holding a long
 * snapshot: each batch reads one consistent snapshot of the rows it checks.
 *  1. every transaction has entries, and its debits equal its credits in each currency;
 *  2. every entry belongs to a transaction and to a balance row of its platform and currency;
 *  3. every post/void resolves a hold of its platform with exactly the hold's entries, every
 *     reversal undoes a posted transaction that is not itself a reversal with exactly the
 *     opposite entries, and no hold is resolved, nor transaction reversed, more than once (the
 *     unique indexes that refuse it could have been lost, e.g. in a restore: then balances can
 *     agree with the entries);
 *  4. every stored balance row equals the sums of its entries (posted, pending);
 *  5. no internal account's available balance is negative;
 *  6. every account has all of its shard rows (a hot account's lost shard row would fail the
 *     payments that pick it even when nothing sums wrong).
 */
export async function verifyLedger(db: Db, options: VerifyOptions = {}): Promise<VerifyReport> {
  const batch = options.batchSize ?? 1000;
  const maxBreaches = options.maxBreaches ?? 1000;
  const report: VerifyReport = { ok: true, transactions: 0, balanceRows: 0, holds: { open: 0, posted: 0, voided: 0 }, breaches: [], breachCount: 0 };
  const platform = options.platformId ?? null;
  // Conditions present or absent rather than `(${x} is null or …)`: the statements are named
  // (platform/db/named-statements.ts), so after a few batches PostgreSQL runs them on a generic
  // plan, which cannot reach one platform's rows through an index for a condition that may be
  // true of every row. One platform is named and ordered by as a list page names it
  // (platform/db/platform-page.ts), so that its (platform_id, …) index is the only way to the
  // batch's order: walked by id and filtered, --platform read every older platform's rows first.
  const ofPlatform = (column: string) => (platform === null ? sql`` : sql`and ${sql.ref(column)} = any(array[${platform}::uuid])`);
  const platformFirst = (column: string) => (platform === null ? sql`` : sql`${sql.ref(column)}, `);
  const above = (column: string, bound: string | null) => (bound === null ? sql`` : sql`and ${sql.ref(column)} > ${bound}::uuid`);
  const atMost = (column: string, bound: string | null) => (bound === null ? sql`` : sql`and ${sql.ref(column)} <= ${bound}::uuid`);
  const breach = (b: Breach) => {
    report.ok = false;
    report.breachCount++;
    if (report.breaches.length < maxBreaches) report.breaches.push(b);
  };

  // 1–3: transactions in id order; the entries checked are those whose transaction id falls in
  // (after, last], so entries of no transaction are caught too (the last range is open-ended).
  // Transactions written after the check began are not waited for: with payments going on at least
  // as fast as batches are read, the keyset would otherwise chase the newest id and never finish.
  // The walk ends at the newest id there was when it began (the primary key's last entry, whatever
  // the writers' clocks say); later ones are still checked where they fall in the last range.
  const { rows: newestRows } = await sql<{ id: string }>`select id from ledger_transactions order by id desc limit 1`.execute(db);
  const newest = newestRows[0]?.id ?? NIL;
  let after = NIL;
  for (let first = true; ; first = false) {
    const done = await withTx(
      db,
      async (trx) => {
        // One row per transaction, with a hold's resolutions: two or more of them are RESOLVED_TWICE.
        const ids = await sql<{ id: string; kind: string; resolution: string | null; resolutions: number; resolved_by: string | null }>`
          select t.id, t.kind, r.kind as resolution, coalesce(r.n, 0)::int as resolutions, r.resolved_by from ledger_transactions t
          left join lateral (
            select min(x.kind) as kind, count(*) as n, string_agg(x.kind || ' ' || x.id, ', ' order by x.id) as resolved_by
            from ledger_transactions x where t.kind = 'PENDING' and x.pending_id = t.id) r on true
          where t.id > ${after}::uuid ${ofPlatform('t.platform_id')} and t.id <= ${newest}::uuid
          order by ${platformFirst('t.platform_id')}t.id limit ${batch}`.execute(trx);
        const last = ids.rows.length === batch ? ids.rows[ids.rows.length - 1]!.id : null;
        const lower = first ? null : after;
        const found = await sql<TransactionBatchRow>`
          with range_tx as (
            select * from ledger_transactions t
            where t.id > ${after}::uuid ${atMost('t.id', last)} ${ofPlatform('t.platform_id')}
          ), range_entries as (
            select * from ledger_entries e
            where true ${above('e.transaction_id', lower)} ${atMost('e.transaction_id', last)} ${ofPlatform('e.platform_id')}
          )
          select 'TRANSACTION_UNBALANCED' as "check", e.transaction_id::text as subject,
                 e.currency || ': debits ' || coalesce(sum(e.amount) filter (where e.side = 'D'), 0) || ', credits ' || coalesce(sum(e.amount) filter (where e.side = 'C'), 0) as detail
            from range_entries e group by e.transaction_id, e.currency
            having coalesce(sum(e.amount) filter (where e.side = 'D'), 0) <> coalesce(sum(e.amount) filter (where e.side = 'C'), 0)
          union all
          select 'TRANSACTION_WITHOUT_ENTRIES', t.id::text, t.kind || ' ' || t.reference
            from range_tx t where not exists (select 1 from ledger_entries e where e.transaction_id = t.id)
          union all
          select 'ENTRY_WITHOUT_TRANSACTION', e.transaction_id::text, 'entry ' || e.seq || ' names no transaction of its platform'
            from range_entries e where not exists (select 1 from ledger_transactions t where t.id = e.transaction_id and t.platform_id = e.platform_id)
          union all
          select 'ENTRY_WITHOUT_ACCOUNT', e.transaction_id::text, 'entry ' || e.seq || ' on ' || e.account_id || '#' || e.shard || ' ' || e.currency
            from range_entries e
            where not exists (
              select 1 from ledger_balances b join ledger_accounts a on a.id = b.account_id
              where b.account_id = e.account_id and b.shard = e.shard and b.platform_id = e.platform_id and a.platform_id = e.platform_id and a.currency = e.currency)
          union all
          select 'RESOLVED_TWICE', t.id::text, 'reversed ' || count(*) || ' times: ' || string_agg(r.id::text, ', ' order by r.id)
            from range_tx t join ledger_transactions r on r.reverses_id = t.id
            group by t.id having count(*) > 1
          union all
          select 'RESOLUTION_INVALID', t.id::text,
                 case when h.id is null then 'names no transaction of its platform'
                      when t.reverses_id is not null and h.reverses_id is not null then 'reverses ' || h.id || ', itself the reversal of ' || h.reverses_id
                      else 'does not match ' || h.kind || ' ' || h.id end
            from range_tx t
            left join ledger_transactions h on h.id = coalesce(t.pending_id, t.reverses_id) and h.platform_id = t.platform_id
            where (t.pending_id is not null or t.reverses_id is not null)
              and (h.id is null
                or (t.pending_id is not null and h.kind <> 'PENDING')
                or (t.reverses_id is not null and h.kind not in ('POSTED', 'POST_PENDING'))
                -- A reversal is final (migration 0055): reversing it put the money it gave back in force again.
                or (t.reverses_id is not null and h.reverses_id is not null)
                or exists (
                  (select e.account_id, e.shard, e.currency, e.amount, e.side from ledger_entries e where e.transaction_id = t.id
                   except all
                   select o.account_id, o.shard, o.currency, o.amount,
                          case when t.reverses_id is null then o.side when o.side = 'D' then 'C' else 'D' end
                     from ledger_entries o where o.transaction_id = h.id)
                  union all
                  (select o.account_id, o.shard, o.currency, o.amount,
                          case when t.reverses_id is null then o.side when o.side = 'D' then 'C' else 'D' end
                     from ledger_entries o where o.transaction_id = h.id
                   except all
                   select e.account_id, e.shard, e.currency, e.amount, e.side from ledger_entries e where e.transaction_id = t.id)))`.execute(trx);
        for (const row of found.rows) breach(row);
        report.transactions += ids.rows.length;
        for (const row of ids.rows) {
          if (row.kind !== 'PENDING') continue;
          if (row.resolutions > 1) {
            breach({ check: 'RESOLVED_TWICE', subject: row.id, detail: `hold resolved ${row.resolutions} times: ${row.resolved_by}` });
            continue;
          }
          if (row.resolution === 'POST_PENDING') report.holds.posted++;
          else if (row.resolution === 'VOID_PENDING') report.holds.voided++;
          else report.holds.open++;
        }
        if (last !== null) after = last;
        return last === null;
      },
      { isolation: 'repeatable read' },
    );
    options.onProgress?.(report);
    if (done) break;
  }

  // 4–5: balance rows in key order, each compared with the sums of its entries.
  let afterAccount = NIL;
  let afterShard = -1;
  for (;;) {
    const rows = await withTx(
      db,
      async (trx) =>
        (
          await sql<{ account_id: string; shard: number; kind: string | null; facts: string | null; mismatch: string | null; available: string }>`
          with b as (
            select * from ledger_balances
            where (account_id, shard) > (${afterAccount}::uuid, ${afterShard}::smallint) ${ofPlatform('platform_id')}
            order by ${platformFirst('platform_id')}account_id, shard limit ${batch}
          )
          select b.account_id, b.shard, a.kind,
                 case when (b.platform_id, b.currency, b.shards, b.no_overdraft) is distinct from (a.platform_id, a.currency, a.shards, a.no_overdraft)
                      then 'platform/currency/shards/no_overdraft differ from the account' end as facts,
                 case when (b.debits_posted, b.credits_posted, b.debits_pending, b.credits_pending) is distinct from (s.dp, s.cp, s.dq, s.cq)
                      then 'stored ' || b.debits_posted || '/' || b.credits_posted || '/' || b.debits_pending || '/' || b.credits_pending ||
                           ', entries ' || s.dp || '/' || s.cp || '/' || s.dq || '/' || s.cq end as mismatch,
                 -- numeric: a system account's lifetime sums may be near 2^63, past which bigint arithmetic fails (22003).
                 (b.credits_posted::numeric - b.debits_posted - b.debits_pending)::text as available
          from b
          left join ledger_accounts a on a.id = b.account_id
          cross join lateral (
            select coalesce(sum(e.amount) filter (where e.side = 'D' and t.kind in ('POSTED', 'POST_PENDING')), 0) as dp,
                   coalesce(sum(e.amount) filter (where e.side = 'C' and t.kind in ('POSTED', 'POST_PENDING')), 0) as cp,
                   coalesce(sum(case when t.kind = 'PENDING' then e.amount when t.kind in ('POST_PENDING', 'VOID_PENDING') then -e.amount else 0 end)
                              filter (where e.side = 'D'), 0) as dq,
                   coalesce(sum(case when t.kind = 'PENDING' then e.amount when t.kind in ('POST_PENDING', 'VOID_PENDING') then -e.amount else 0 end)
                              filter (where e.side = 'C'), 0) as cq
            from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
            where e.platform_id = b.platform_id and e.account_id = b.account_id and e.shard = b.shard
          ) s
          order by b.account_id, b.shard`.execute(trx)
        ).rows,
      { isolation: 'repeatable read' },
    );
    for (const row of rows) {
      const subject = `${row.account_id}#${row.shard}`;
      if (row.kind === null) breach({ check: 'BALANCE_MISMATCH', subject, detail: 'balance row of no ledger account' });
      else if (row.facts) breach({ check: 'BALANCE_MISMATCH', subject, detail: row.facts });
      if (row.mismatch) breach({ check: 'BALANCE_MISMATCH', subject, detail: `debits/credits posted, debits/credits pending: ${row.mismatch}` });
      if (row.kind === 'INTERNAL_ACCOUNT' && BigInt(row.available) < 0n) breach({ check: 'NEGATIVE_BALANCE', subject, detail: `available ${row.available}` });
    }
    report.balanceRows += rows.length;
    options.onProgress?.(report);
    if (rows.length < batch) break;
    afterAccount = rows[rows.length - 1]!.account_id;
    afterShard = rows[rows.length - 1]!.shard;
  }

  // 6: accounts in id order, each with the shard rows it lacks.
  let afterAccountId = NIL;
  for (;;) {
    const { rows } = await sql<{ id: string; kind: string; currency: string; shards: number; missing: string }>`
      select a.id, a.kind, a.currency, a.shards,
             array_to_string(array(select s from generate_series(0, a.shards - 1) s
                                   where not exists (select 1 from ledger_balances b where b.account_id = a.id and b.shard = s) order by s), ', ') as missing
      from ledger_accounts a
      where a.id > ${afterAccountId}::uuid ${ofPlatform('a.platform_id')}
      order by ${platformFirst('a.platform_id')}a.id limit ${batch}`.execute(db);
    for (const row of rows) {
      if (row.missing === '') continue;
      const present = row.shards - row.missing.split(', ').length;
      breach({ check: 'SHARDS_MISSING', subject: row.id, detail: `${row.kind} ${row.currency} has ${present} of its ${row.shards} shard rows (missing: ${row.missing})` });
    }
    options.onProgress?.(report);
    if (rows.length < batch) break;
    afterAccountId = rows[rows.length - 1]!.id;
  }
  return report;
}
