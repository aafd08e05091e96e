-- The ledger's CHECK constraints, the same rules, one per hot table, each a call of an immutable
-- function (issue 14 §4, bench/README.md "Ledger: CHECK constraints").
--
-- PostgreSQL (15) reads every CHECK constraint of a table back from its stored node text, plans
-- it and compiles it again for each INSERT or UPDATE statement: nothing of it is cached across
-- statements. A transfer runs five such statements on these tables (its transaction row, three
-- balance rows, its entries), so 13 constraints, 18 kB of node text, were parsed per transfer:
-- 60 µs of the 450–550 µs of PostgreSQL CPU a transfer cost under 32 clients, more than any
-- other single piece of ledger_apply(). A call of a function with the columns as arguments is a
-- short node text (1 kB for the balances), and the function's body is compiled once per
-- connection. The rules are unchanged. The new constraints hold for every row written from now
-- on; the rows already there, which the old constraints checked, are checked again by 0029
-- (VALIDATE CONSTRAINT, which lets payments go on meanwhile, where adding a checked constraint
-- here would hold the tables' exclusive lock for the whole scan).

-- Balance rows: sums never negative, the shard within the account's shards, and for internal
-- accounts (no_overdraft) available never below zero and total within 2^53 − 1 (what the wire
-- carries as a JSON number exactly). ledger_apply() refuses such a change before it is made
-- (CL002, CL007); this is the database's own guarantee behind it.
create function ledger_balance_valid(
  debits_posted bigint, credits_posted bigint, debits_pending bigint, credits_pending bigint,
  shard smallint, shards smallint, no_overdraft boolean
) returns boolean language plpgsql immutable parallel safe as $$
begin
  return debits_posted >= 0 and credits_posted >= 0 and debits_pending >= 0 and credits_pending >= 0
     and shard >= 0 and shard < shards
     and (not no_overdraft or (credits_posted - debits_posted - debits_pending >= 0
                               and credits_posted + credits_pending - debits_posted <= 9007199254740991));
end
$$;

-- Transactions: a reference of 1–255 characters, a known kind, a hold named exactly by posts
-- and voids, and only POSTED transactions reversing another. Not strict: pending_id and
-- reverses_id are null on most rows.
create function ledger_transaction_valid(reference text, kind text, pending_id uuid, reverses_id uuid)
returns boolean language plpgsql immutable parallel safe as $$
begin
  return length(reference) between 1 and 255
     and kind in ('POSTED', 'PENDING', 'POST_PENDING', 'VOID_PENDING')
     and (kind in ('POST_PENDING', 'VOID_PENDING')) = (pending_id is not null)
     and (reverses_id is null or kind = 'POSTED');
end
$$;

-- Entries: a debit or a credit of a positive amount.
create function ledger_entry_valid(side char(1), amount bigint)
returns boolean language plpgsql immutable parallel safe as $$
begin
  return side in ('D', 'C') and amount > 0;
end
$$;

alter table ledger_balances
  drop constraint ledger_balances_debits_posted_check,
  drop constraint ledger_balances_credits_posted_check,
  drop constraint ledger_balances_debits_pending_check,
  drop constraint ledger_balances_credits_pending_check,
  drop constraint ledger_balances_check,
  drop constraint ledger_balances_no_overdraft,
  drop constraint ledger_balances_wire_range,
  add constraint ledger_balances_valid
    check (ledger_balance_valid(debits_posted, credits_posted, debits_pending, credits_pending, shard, shards, no_overdraft)) not valid;

alter table ledger_transactions
  drop constraint ledger_transactions_reference_check,
  drop constraint ledger_transactions_kind_check,
  drop constraint ledger_transactions_check,
  drop constraint ledger_transactions_check1,
  add constraint ledger_transactions_valid check (ledger_transaction_valid(reference, kind, pending_id, reverses_id)) not valid;

alter table ledger_entries
  drop constraint ledger_entries_side_check,
  drop constraint ledger_entries_amount_check,
  add constraint ledger_entries_valid check (ledger_entry_valid(side, amount)) not valid;
