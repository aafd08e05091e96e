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
  no_overdraft boolean not null check (not no_overdraft or shards = 1),
  created_at timestamptz not null
);
create unique index ledger_accounts_system on ledger_accounts (platform_id, kind, currency, coalesce(rail, '')) where kind <> 'INTERNAL_ACCOUNT';
create index ledger_accounts_platform on ledger_accounts (platform_id, id);

create table ledger_balances (
  platform_id uuid not null,
  account_id uuid not null references ledger_accounts (id),
  shard smallint not null,
  no_overdraft boolean not null,
  debits_posted bigint not null default 0 check (debits_posted >= 0),
  credits_posted bigint not null default 0 check (credits_posted >= 0),
  debits_pending bigint not null default 0 check (debits_pending >= 0),
  credits_pending bigint not null default 0 check (credits_pending >= 0),
  updated_at timestamptz not null,
  primary key (account_id, shard),
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
create index ledger_transactions_open_holds on ledger_transactions (platform_id, id) where kind = 'PENDING';

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

-- Applies one ledger transaction: the transaction row, its entries and the balance changes, in
-- one call (one round trip), locking balance rows in account order so concurrent transactions
-- never deadlock on them. Errors carry SQLSTATEs of class CL (mapped in ledger/repo.ts):
--   CL001 reference reused for another transaction   CL002 insufficient funds (detail: account)
--   CL003 target is not a hold / not posted          CL004 unknown account (detail: account)
--   CL005 account of another currency or platform    CL006 hold or transaction not found
--   CL007 balance would pass 2^53 − 1 (detail: account)
-- A hold resolved twice or a transaction reversed twice fails on the unique indexes (23505).
-- Explicit lines (POSTED, PENDING): p_accounts/p_sides/p_amounts/p_currencies, sorted by account
-- then side; p_kinds/p_rails describe system accounts to open on first use. Derived lines
-- (POST_PENDING, VOID_PENDING, reversal): taken from p_target's entries. Returns one row with
-- the transaction id and time (account null), then the new sums of every internal account touched.
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
  v_account record;
  v_shards smallint[];
  v_shard smallint;
  v_dp bigint; v_cp bigint; v_dq bigint; v_cq bigint;
  v_ok boolean;
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
      select v_existing.id, true, null::timestamptz, b.account_id, sum(b.debits_posted)::bigint, sum(b.credits_posted)::bigint, sum(b.debits_pending)::bigint, sum(b.credits_pending)::bigint
      from ledger_balances b join ledger_accounts a on a.id = b.account_id
      where b.account_id in (select e.account_id from ledger_entries e where e.transaction_id = v_existing.id) and a.kind = 'INTERNAL_ACCOUNT'
      group by b.account_id;
    return;
  end if;

  if p_target is not null then
    select t.id, t.platform_id, t.kind into v_target from ledger_transactions t where t.id = p_target;
    if v_target.id is null or v_target.platform_id <> p_platform then
      raise exception 'ledger transaction % not found', p_target using errcode = 'CL006', detail = p_target::text;
    end if;
    if (p_reverse and v_target.kind not in ('POSTED', 'POST_PENDING')) or (not p_reverse and v_target.kind <> 'PENDING') then
      raise exception 'ledger transaction % is a % transaction', p_target, v_target.kind using errcode = 'CL003', detail = p_target::text;
    end if;
    -- A reversal swaps sides; a resolution repeats the hold's lines, on the shards that hold them.
    select array_agg(d.account_id order by d.account_id, d.side), array_agg(d.side order by d.account_id, d.side),
           array_agg(d.amount order by d.account_id, d.side), array_agg(d.currency order by d.account_id, d.side),
           array_agg(d.shard order by d.account_id, d.side)
      into p_accounts, p_sides, p_amounts, p_currencies, v_shards
      from (select e.account_id, e.shard, e.amount, e.currency,
                   (case when p_reverse then (case e.side when 'D' then 'C' else 'D' end) else e.side end)::text as side
              from ledger_entries e where e.transaction_id = p_target) d;
  else
    v_shards := array_fill(null::smallint, array[coalesce(array_length(p_accounts, 1), 0)]);
    for i in 1 .. coalesce(array_length(p_accounts, 1), 0) loop
      select a.platform_id, a.currency, a.shards into v_account from ledger_accounts a where a.id = p_accounts[i];
      if not found then
        if p_kinds[i] = 'INTERNAL_ACCOUNT' then
          raise exception 'ledger account % does not exist', p_accounts[i] using errcode = 'CL004', detail = p_accounts[i]::text;
        end if;
        insert into ledger_accounts (id, platform_id, kind, currency, rail, shards, no_overdraft, created_at)
        values (p_accounts[i], p_platform, p_kinds[i], p_currencies[i], p_rails[i], p_shards, false, p_now)
        on conflict do nothing;
        insert into ledger_balances (platform_id, account_id, shard, no_overdraft, updated_at)
        select p_platform, p_accounts[i], s, false, p_now from generate_series(0, p_shards - 1) s
        on conflict do nothing;
        select a.platform_id, a.currency, a.shards into v_account from ledger_accounts a where a.id = p_accounts[i];
      end if;
      if v_account.platform_id <> p_platform or v_account.currency <> p_currencies[i] then
        raise exception 'ledger account % is not a % account of this platform', p_accounts[i], p_currencies[i] using errcode = 'CL005', detail = p_accounts[i]::text;
      end if;
      -- Each connection keeps to one shard of a hot account, so concurrent payments spread out.
      v_shards[i] := case when v_account.shards = 1 then 0 else pg_backend_pid() % v_account.shards end;
    end loop;
  end if;

  for i in 1 .. coalesce(array_length(p_accounts, 1), 0) loop
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
     where b.account_id = p_accounts[i] and b.shard = v_shards[i]
       and (not b.no_overdraft or ((b.credits_posted + v_cp) - (b.debits_posted + v_dp) - (b.debits_pending + v_dq) >= 0
                                   and (b.credits_posted + v_cp) + (b.credits_pending + v_cq) - (b.debits_posted + v_dp) <= 9007199254740991))
    returning true into v_ok;
    if v_ok is null then
      if v_dp + v_dq > 0 then
        raise exception 'insufficient funds in ledger account %', p_accounts[i] using errcode = 'CL002', detail = p_accounts[i]::text;
      end if;
      raise exception 'ledger account % would hold more than 2^53 - 1', p_accounts[i] using errcode = 'CL007', detail = p_accounts[i]::text;
    end if;
    v_ok := null;
  end loop;

  insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount)
  select p_id, s.n, p_platform, p_accounts[s.n], v_shards[s.n], p_currencies[s.n], p_sides[s.n], p_amounts[s.n]
  from generate_series(1, coalesce(array_length(p_accounts, 1), 0)) as s(n);

  return query select p_id, false, p_now, null::uuid, null::bigint, null::bigint, null::bigint, null::bigint;
  return query
    select p_id, false, null::timestamptz, b.account_id, sum(b.debits_posted)::bigint, sum(b.credits_posted)::bigint, sum(b.debits_pending)::bigint, sum(b.credits_pending)::bigint
    from ledger_balances b join ledger_accounts a on a.id = b.account_id
    where b.account_id = any(p_accounts) and a.kind = 'INTERNAL_ACCOUNT'
    group by b.account_id;
end
$$;

-- Every internal account gets its ledger account; the balance columns move to the ledger.
insert into ledger_accounts (id, platform_id, kind, currency, rail, shards, no_overdraft, created_at)
select id, platform_id, 'INTERNAL_ACCOUNT', currency, null, 1, true, created_at from internal_accounts;
insert into ledger_balances (platform_id, account_id, shard, no_overdraft, updated_at)
select platform_id, id, 0, true, created_at from internal_accounts;
alter table internal_accounts drop column balance;
alter table internal_accounts drop column total_balance;
