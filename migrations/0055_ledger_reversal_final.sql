-- A reversal is final, and verify reads one platform's transactions through an index.
--
-- ledger_apply() as in 0053, but a reversal cannot itself be reversed (CL003, NOT_REVERSIBLE).
-- Reversing the refund of a payment put the payment's money back under a new reference, with
-- the payment still marked reversed: the books then show a transaction both undone and in
-- force, and the refund's reversal could be reversed in turn, each under a reference of its
-- own. A correction of a refund is a new transfer, whose reason the books show. A transaction
-- is reversed at most once already (ledger_transactions_reversal, and the target's row lock of
-- 0041 for two at once); `corridor ledger verify` reports a reversal of a reversal written
-- before this migration as RESOLUTION_INVALID. Also: a target is named only by a post, a void
-- or a reversal, a reversal is POSTED, and a call without a target has lines (22023 otherwise:
-- service.ts never calls it so, but a direct call wrote a transfer of a hold's entries with the
-- hold left open, or a transaction without entries).
--
-- ledger_transactions_platform: `corridor ledger verify --platform` reads that platform's
-- transactions in id order. Through the primary key it read every platform's transactions
-- (filtering out the others', of a large ledger almost all); with this index, which verify's
-- statements now name the platform for (verify.ts), only the platform's
-- (test/pg/ledger-platform-index.test.ts). Made only if missing, as in 0046 and
-- 0054: on a large table, build it first with CREATE INDEX CONCURRENTLY under the same name, and
-- this migration keeps it instead of holding writes to the table while it builds.
create index if not exists ledger_transactions_platform on ledger_transactions (platform_id, id);

create or replace function ledger_apply(
  p_platform uuid, p_id uuid, p_reference text, p_kind text, p_target uuid, p_reverse boolean,
  p_fingerprint text, p_metadata jsonb, p_now timestamptz, p_shards smallint,
  p_accounts uuid[], p_sides text[], p_amounts bigint[], p_currencies text[], p_kinds text[], p_rails text[]
) returns table (transaction_id uuid, replayed boolean, created_at timestamptz, account_id uuid, debits_posted bigint, credits_posted bigint, debits_pending bigint, credits_pending bigint, balance_updated_at timestamptz)
language plpgsql
-- Generic plans for every statement inside: the same few shapes run for every payment, and
-- re-planning them per call (custom plans) cost more than their execution.
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
declare
  v_id uuid;
  v_existing record;
  v_target record;
  v_diag record;
  v_account uuid; v_internal boolean; v_b1 bigint; v_b2 bigint; v_b3 bigint; v_b4 bigint; v_at timestamptz;
  v_shards smallint[];
  v_shard smallint;
  v_n int := coalesce(array_length(p_accounts, 1), 0);
  v_dp bigint; v_cp bigint; v_dq bigint; v_cq bigint;
  i int;
begin
  -- A target is named by a post, a void or a reversal, and by nothing else: a POSTED or PENDING
  -- call with a target would copy the target's entries as a new transfer or hold, unresolved.
  -- Without a target the lines are the transaction's: none would be a transaction without entries.
  if (p_target is not null) <> (p_reverse or p_kind in ('POST_PENDING', 'VOID_PENDING')) or (p_reverse and p_kind <> 'POSTED')
     or (p_target is null and v_n = 0) then
    raise exception 'ledger_apply: a % call % a target and % lines', p_kind, case when p_target is null then 'without' else 'with' end, v_n using errcode = '22023';
  end if;
  if p_target is not null then
    -- One resolution (or reversal) of a target at a time: a repeat under the same reference,
    -- e.g. the same job run by two processes, waits here for the first and then replays it.
    -- Without the lock it could pass the reference check before the first had inserted its row
    -- and then fail on the resolution/reversal index instead (23505: HOLD_NOT_PENDING).
    select t.id, t.platform_id, t.kind, t.reverses_id into v_target from ledger_transactions t where t.id = p_target for no key update;
  end if;

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
    return query select v_existing.id, true, v_existing.created_at, null::uuid, null::bigint, null::bigint, null::bigint, null::bigint, null::timestamptz;
    return query
      select v_existing.id, true, null::timestamptz, b.account_id, b.debits_posted, b.credits_posted, b.debits_pending, b.credits_pending, b.updated_at
      from ledger_balances b
      where b.no_overdraft and b.account_id in (select e.account_id from ledger_entries e where e.transaction_id = v_existing.id);
    return;
  end if;
  transaction_id := p_id; replayed := false; created_at := p_now; account_id := null;
  debits_posted := null; credits_posted := null; debits_pending := null; credits_pending := null; balance_updated_at := null;
  return next;

  if p_target is not null then
    if v_target.id is null or v_target.platform_id <> p_platform then
      raise exception 'ledger transaction % not found', p_target using errcode = 'CL006', detail = p_target::text;
    end if;
    if (p_reverse and v_target.kind not in ('POSTED', 'POST_PENDING')) or (not p_reverse and v_target.kind <> 'PENDING') then
      raise exception 'ledger transaction % is a % transaction', p_target, v_target.kind using errcode = 'CL003', detail = p_target::text;
    end if;
    if p_reverse and v_target.reverses_id is not null then
      raise exception 'ledger transaction % is the reversal of %: a reversal is final', p_target, v_target.reverses_id using errcode = 'CL003', detail = p_target::text;
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
           debits_pending = b.debits_pending + v_dq, credits_pending = b.credits_pending + v_cq,
           -- Evaluated on the row as locked: the later of this call's time and the last change's.
           updated_at = greatest(b.updated_at, p_now)
     where b.account_id = p_accounts[i] and b.shard = v_shards[i] and b.platform_id = p_platform and b.currency = p_currencies[i]
       and (not b.no_overdraft or ((b.credits_posted + v_cp) - (b.debits_posted + v_dp) - (b.debits_pending + v_dq) >= 0
                                   and (b.credits_posted + v_cp) + (b.credits_pending + v_cq) - (b.debits_posted + v_dp) <= 9007199254740991))
    returning b.account_id, b.no_overdraft, b.debits_posted, b.credits_posted, b.debits_pending, b.credits_pending, b.updated_at
      into v_account, v_internal, v_b1, v_b2, v_b3, v_b4, v_at;
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
      debits_posted := v_b1; credits_posted := v_b2; debits_pending := v_b3; credits_pending := v_b4; balance_updated_at := v_at;
      return next;
    end if;
  end loop;

  insert into ledger_entries (transaction_id, seq, platform_id, account_id, shard, currency, side, amount)
  select p_id, s.n, p_platform, p_accounts[s.n], v_shards[s.n], p_currencies[s.n], p_sides[s.n], p_amounts[s.n]
  from generate_series(1, v_n) as s(n);
end
$$;
