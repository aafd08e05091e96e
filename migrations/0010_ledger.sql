-- Double-entry ledger (src/modules/ledger/README.md). Accounts hold one currency; balances are
-- TigerBeetle-style (debits/credits, posted/pending) on one row per account, or on several
-- shard rows for the hot system accounts every payment touches. Transactions and entries are
-- append-only; ledger_apply() is the only writer of balances.

create table ledger_accounts (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  kind text not null check (kind in ('INTERNAL_ACCOUNT', 'PLATFORM_FEES', 'SERVICE_FEES', 'FX', 'SETTLEMENT', 'SANDBOX_FUNDING')),
  currency text not null check (currency ~ '^[A-Z]{3,5}$'),
  -- SETTLEMENT only: the rail or network the outside world is reached through.
  rail text check ((kind = 'SETTLEMENT') = (rail is not null)),
  shards smallint not null check (shards between 1 and 256),
  -- TigerBeetle's debits_must_not_exceed_credits: available (credits posted − debits posted −
  -- debits pending) never below zero. Only on unsharded accounts, so one row can enforce it.
  -- Exactly the internal accounts: the outside world and the platform's books may go negative.
  no_overdraft boolean not null check (no_overdraft = (kind = 'INTERNAL_ACCOUNT') and (not no_overdraft or shards = 1)),
  created_at timestamptz not null
);
create unique index ledger_accounts_system on ledger_accounts (platform_id, kind, currency, coalesce(rail, '')) where kind <> 'INTERNAL_ACCOUNT';
create index ledger_accounts_platform on ledger_accounts (platform_id, id);

-- One row per account (shard 0), or per shard of a hot account. platform_id, currency, shards and
-- no_overdraft repeat the account's (never changing) facts, so applying a transaction checks
-- and updates balances without reading ledger_accounts.
create table ledger_balances (
  account_id uuid not null references ledger_accounts (id),
  shard smallint not null,
  platform_id uuid not null,
  currency text not null,
  shards smallint not null,
  no_overdraft boolean not null,
  debits_posted bigint not null default 0 check (debits_posted >= 0),
  credits_posted bigint not null default 0 check (credits_posted >= 0),
  debits_pending bigint not null default 0 check (debits_pending >= 0),
  credits_pending bigint not null default 0 check (credits_pending >= 0),
  updated_at timestamptz not null,
  primary key (account_id, shard),
  check (shard >= 0 and shard < shards),
  constraint ledger_balances_no_overdraft check (not no_overdraft or credits_posted - debits_posted - debits_pending >= 0),
  -- What an internal account shows must fit a JSON number exactly (2^53 − 1).
  constraint ledger_balances_wire_range check (not no_overdraft or credits_posted + credits_pending - debits_posted <= 9007199254740991)
);
create index ledger_balances_platform on ledger_balances (platform_id, account_id);

-- No foreign keys from the hot tables to platforms or accounts: every check would share-lock
-- the same few parent rows from every concurrent payment. `corridor ledger verify` checks them.
create table ledger_transactions (
  id uuid primary key,
  platform_id uuid not null,
  -- The business reference that makes applying idempotent (e.g. quote:<uuid>:hold).
  reference text not null check (length(reference) between 1 and 255),
  kind text not null check (kind in ('POSTED', 'PENDING', 'POST_PENDING', 'VOID_PENDING')),
  -- POST_PENDING / VOID_PENDING: the hold (a PENDING transaction) they resolve.
  pending_id uuid,
  -- A POSTED transaction that undoes an earlier posted one.
  reverses_id uuid,
  -- SHA-256 of what was asked, so reusing a reference for something else is refused.
  fingerprint text not null,
  metadata jsonb,
  created_at timestamptz not null,
  check ((kind in ('POST_PENDING', 'VOID_PENDING')) = (pending_id is not null)),
  check (reverses_id is null or kind = 'POSTED')
);
create unique index ledger_transactions_reference on ledger_transactions (platform_id, reference);
-- A hold is resolved (posted or voided) at most once; a transaction is reversed at most once.
create unique index ledger_transactions_resolution on ledger_transactions (pending_id) where pending_id is not null;
create unique index ledger_transactions_reversal on ledger_transactions (reverses_id) where reverses_id is not null;

create table ledger_entries (
  transaction_id uuid not null,
  seq smallint not null,
  platform_id uuid not null,
  account_id uuid not null,
  shard smallint not null,
  currency text not null,
  side char(1) not null check (side in ('D', 'C')),
  amount bigint not null check (amount > 0),
  primary key (transaction_id, seq)
);
create index ledger_entries_account on ledger_entries (platform_id, account_id, shard);

-- Applies one ledger transaction in one call (one round trip): the transaction row, the balance
-- changes (x = x + n, conditional for internal accounts) and the entries. Internal accounts'
-- rows are locked in account order, and a hot account's shard is one no other transaction holds
-- (SKIP LOCKED), so concurrent transactions neither deadlock nor queue on shared accounts.
-- Errors carry SQLSTATEs of class CL (mapped in ledger/service.ts):
--   CL001 reference reused for another transaction   CL002 insufficient funds (detail: account)
--   CL003 target is not a hold / not posted          CL004 unknown account (detail: account)
--   CL005 account of another currency or platform    CL006 hold or transaction not found
--   CL007 balance would pass 2^53 − 1 (detail: account)
-- A hold resolved twice or a transaction reversed twice fails on the unique indexes (23505).
-- Explicit lines (POSTED, PENDING): p_accounts/p_sides/p_amounts/p_currencies/p_kinds, sorted by
-- account then side (credits first); p_rails and p_shards open a system account on first use.
-- Derived lines (POST_PENDING, VOID_PENDING, reversal): the target's entries, on their shards.
-- Returns one row with the transaction id and time (account null), then the new sums of every
-- internal account touched.
create function ledger_apply(
  p_platform uuid, p_id uuid, p_reference text, p_kind text, p_target uuid, p_reverse boolean,
  p_fingerprint text, p_metadata jsonb, p_now timestamptz, p_shards smallint,
  p_accounts uuid[], p_sides text[], p_amounts bigint[], p_currencies text[], p_kinds text[], p_rails text[]
) returns table (transaction_id uuid, replayed boolean, created_at timestamptz, account_id uuid, debits_posted bigint, credits_posted bigint, debits_pending bigint, credits_pending bigint)
language plpgsql as $$
#variable_conflict use_column
declare
  v_id uuid;
  v_existing record;
  v_target record;
  v_diag record;
  v_account uuid; v_internal boolean; v_b1 bigint; v_b2 bigint; v_b3 bigint; v_b4 bigint;
  v_shards smallint[];
  v_shard smallint;
  v_n int := coalesce(array_length(p_accounts, 1), 0);
  v_dp bigint; v_cp bigint; v_dq bigint; v_cq bigint;
  i int;
begin
  insert into ledger_transactions (id, platform_id, reference, kind, pending_id, reverses_id, fingerprint, metadata, created_at)
  values (p_id, p_platform, p_reference, p_kind,
          case when p_kind in ('POST_PENDING', 'VOID_PENDING') then p_target end,
          case when p_reverse then p_target end,
          p_fingerprint, p_metadata, p_now)
  on conflict (platform_id, reference) do nothing
  returning id into v_id;

  if v_id is null then
    select t.id, t.fingerprint, t.created_at into v_existing from ledger_transactions t where t.platform_id = p_platform and t.reference = p_reference;
    if v_existing.fingerprint <> p_fingerprint then
      raise exception 'ledger reference % was used for another transaction', p_reference using errcode = 'CL001', detail = v_existing.id::text;
    end if;
    return query select v_existing.id, true, v_existing.created_at, null::uuid, null::bigint, null::bigint, null::bigint, null::bigint;
    return query
      select v_existing.id, true, null::timestamptz, b.account_id, b.debits_posted, b.credits_posted, b.debits_pending, b.credits_pending
      from ledger_balances b
      where b.no_overdraft and b.account_id in (select e.account_id from ledger_entries e where e.transaction_id = v_existing.id);
    return;
  end if;
  return query select p_id, false, p_now, null::uuid, null::bigint, null::bigint, null::bigint, null::bigint;

  if p_target is not null then
    select t.id, t.platform_id, t.kind into v_target from ledger_transactions t where t.id = p_target;
    if v_target.id is null or v_target.platform_id <> p_platform then
      raise exception 'ledger transaction % not found', p_target using errcode = 'CL006', detail = p_target::text;
    end if;
    if (p_reverse and v_target.kind not in ('POSTED', 'POST_PENDING')) or (not p_reverse and v_target.kind <> 'PENDING') then
      raise exception 'ledger transaction % is a % transaction', p_target, v_target.kind using errcode = 'CL003', detail = p_target::text;
    end if;
    -- A reversal swaps sides; a resolution repeats the hold's lines; both on the original shards.
    select array_agg(d.account_id order by d.account_id, d.side), array_agg(d.side order by d.account_id, d.side),
           array_agg(d.amount order by d.account_id, d.side), array_agg(d.currency order by d.account_id, d.side),
           array_agg(d.shard order by d.account_id, d.side)
      into p_accounts, p_sides, p_amounts, p_currencies, v_shards
      from (select e.account_id, e.shard, e.amount, e.currency,
                   (case when p_reverse then (case e.side when 'D' then 'C' else 'D' end) else e.side end)::text as side
              from ledger_entries e where e.transaction_id = p_target) d;
    v_n := coalesce(array_length(p_accounts, 1), 0);
  else
    v_shards := array_fill(0::smallint, array[v_n]);
    for i in 1 .. v_n loop
      continue when p_kinds[i] = 'INTERNAL_ACCOUNT';
      -- A hot account: this connection's own shard if no other transaction holds it, else the
      -- first free one; wait only when every shard is taken.
      v_shard := null;
      select b.shard into v_shard from ledger_balances b
       where b.account_id = p_accounts[i] and b.shard = pg_backend_pid() % p_shards
       for update skip locked;
      if v_shard is null then
        select b.shard into v_shard from ledger_balances b
         where b.account_id = p_accounts[i]
         order by (b.shard - pg_backend_pid() % b.shards + b.shards) % b.shards
         limit 1 for update skip locked;
      end if;
      if v_shard is null then
        select b.shards into v_shard from ledger_balances b where b.account_id = p_accounts[i] limit 1;
        if v_shard is null then
          -- First use: open it (another transaction may be opening it too).
          insert into ledger_accounts (id, platform_id, kind, currency, rail, shards, no_overdraft, created_at)
          values (p_accounts[i], p_platform, p_kinds[i], p_currencies[i], p_rails[i], p_shards, false, p_now)
          on conflict do nothing;
          insert into ledger_balances (account_id, shard, platform_id, currency, shards, no_overdraft, updated_at)
          select p_accounts[i], s, p_platform, p_currencies[i], p_shards, false, p_now from generate_series(0, p_shards - 1) s
          on conflict do nothing;
          v_shard := p_shards;
        end if;
        v_shard := pg_backend_pid() % v_shard;
      end if;
      v_shards[i] := v_shard;
    end loop;
  end if;

  for i in 1 .. v_n loop
    v_dp := 0; v_cp := 0; v_dq := 0; v_cq := 0;
    if p_kind = 'POSTED' then
      if p_sides[i] = 'D' then v_dp := p_amounts[i]; else v_cp := p_amounts[i]; end if;
    elsif p_kind = 'PENDING' then
      if p_sides[i] = 'D' then v_dq := p_amounts[i]; else v_cq := p_amounts[i]; end if;
    elsif p_kind = 'POST_PENDING' then
      if p_sides[i] = 'D' then v_dp := p_amounts[i]; v_dq := -p_amounts[i]; else v_cp := p_amounts[i]; v_cq := -p_amounts[i]; end if;
    else
      if p_sides[i] = 'D' then v_dq := -p_amounts[i]; else v_cq := -p_amounts[i]; end if;
    end if;
    update ledger_balances b
       set debits_posted = b.debits_posted + v_dp, credits_posted = b.credits_posted + v_cp,
           debits_pending = b.debits_pending + v_dq, credits_pending = b.credits_pending + v_cq, updated_at = p_now
     where b.account_id = p_accounts[i] and b.shard = v_shards[i] and b.platform_id = p_platform and b.currency = p_currencies[i]
       and (not b.no_overdraft or ((b.credits_posted + v_cp) - (b.debits_posted + v_dp) - (b.debits_pending + v_dq) >= 0
                                   and (b.credits_posted + v_cp) + (b.credits_pending + v_cq) - (b.debits_posted + v_dp) <= 9007199254740991))
    returning b.account_id, b.no_overdraft, b.debits_posted, b.credits_posted, b.debits_pending, b.credits_pending
      into v_account, v_internal, v_b1, v_b2, v_b3, v_b4;
    if v_account is null then
      select b.platform_id, b.currency into v_diag from ledger_balances b where b.account_id = p_accounts[i] and b.shard = v_shards[i];
      if v_diag.platform_id is null then
        raise exception 'ledger account % does not exist', p_accounts[i] using errcode = 'CL004', detail = p_accounts[i]::text;
      elsif v_diag.platform_id <> p_platform or v_diag.currency <> p_currencies[i] then
        raise exception 'ledger account % is not a % account of this platform', p_accounts[i], p_currencies[i] using errcode = 'CL005', detail = p_accounts[i]::text;
      elsif v_dp + v_dq > 0 then
        raise exception 'insufficient funds in ledger account %', p_accounts[i] using errcode = 'CL002', detail = p_accounts[i]::text;
      end if;
      raise exception 'ledger account % would hold more than 2^53 - 1', p_accounts[i] using errcode = 'CL007', detail = p_accounts[i]::text;
    end if;
    -- Lines are sorted by account: the last line of an internal account carries its new sums.
    if v_internal and (i = v_n or p_accounts[i + 1] <> p_accounts[i]) then
      transaction_id := p_id; replayed := false; created_at := null; account_id := v_account;
      debits_posted := v_b1; credits_posted := v_b2; debits_pending := v_b3; credits_pending := v_b4;
      return next;
    end if;
  end loop;

  insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount)
  select p_id, s.n, p_platform, p_accounts[s.n], v_shards[s.n], p_currencies[s.n], p_sides[s.n], p_amounts[s.n]
  from generate_series(1, v_n) as s(n);
end
$$;

-- Every internal account gets its ledger account; the balance columns move to the ledger.
insert into ledger_accounts (id, platform_id, kind, currency, rail, shards, no_overdraft, created_at)
select id, platform_id, 'INTERNAL_ACCOUNT', currency, null, 1, true, created_at from internal_accounts;
insert into ledger_balances (account_id, shard, platform_id, currency, shards, no_overdraft, updated_at)
select id, 0, platform_id, currency, 1, true, created_at from internal_accounts;
alter table internal_accounts drop column balance;
alter table internal_accounts drop column total_balance;

-- The reference that ties a bank deposit to its account (funding instructions), unique.
alter table internal_accounts add column funding_reference text;
update internal_accounts set funding_reference = coalesce(
  replace(funding_payment_instructions -> 0 -> 'accountOrWalletInfo' ->> 'reference', '-', ''),
  'CDR' || upper(substr(replace(id::text, '-', ''), 20, 13)));
alter table internal_accounts alter column funding_reference set not null;
create unique index internal_accounts_funding_reference on internal_accounts (funding_reference);
