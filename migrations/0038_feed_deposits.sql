-- The production rail provider's deposit feed is global: one provider deposit id credits at most
-- once across every platform (funding_deposits is keyed per platform, and stays so for the
-- sandbox's simulated deposits, whose ids are the caller's). The primary key is the guarantee.
create table feed_deposits (
  deposit_id text primary key,
  -- The credit: the INCOMING transaction of the platform whose reference the deposit carried.
  platform_id uuid not null references platforms (id),
  transaction_id uuid not null,
  created_at timestamptz not null
);

-- Existing production credits, each id once: where one id was credited on several platforms
-- (possible before this table), the earliest credit is the id's.
insert into feed_deposits (deposit_id, platform_id, transaction_id, created_at)
select distinct on (fd.deposit_id) fd.deposit_id, fd.platform_id, fd.transaction_id, fd.created_at
  from funding_deposits fd
  join transactions t on t.platform_id = fd.platform_id and t.id = fd.transaction_id
 where t.environment = 'production'
 order by fd.deposit_id, fd.created_at, fd.platform_id;

-- unmatched_deposits: new reasons, what the operator needs to know, and whether the feed credited
-- the id after all (re-listed): such a row is closed, nothing is left to credit by hand.
alter table unmatched_deposits drop constraint unmatched_deposits_reason_check;
alter table unmatched_deposits add constraint unmatched_deposits_reason_check check (reason in (
  'UNKNOWN_REFERENCE', 'ACCOUNT_NOT_ACTIVE', 'CURRENCY_MISMATCH', 'BALANCE_LIMIT',
  -- The id was credited already, and is listed again with another reference, currency, amount or rail.
  'CONFLICTING_DEPOSIT',
  -- More than the ledger takes in one posting (2^53 - 1 minor units).
  'AMOUNT_OUT_OF_RANGE',
  -- Any other refusal of the credit (the ledger's): `detail` says which.
  'REFUSED'
));
alter table unmatched_deposits add column detail text;
-- The credit of this deposit id: the first one (CONFLICTING_DEPOSIT), or the one that closed the row.
alter table unmatched_deposits add column credited_platform_id uuid;
alter table unmatched_deposits add column credited_transaction_id uuid;
alter table unmatched_deposits add column resolved_at timestamptz;

-- Rows kept before a later listing of the same id credited it: closed by that credit.
update unmatched_deposits u
   set resolved_at = f.created_at, credited_platform_id = f.platform_id, credited_transaction_id = f.transaction_id
  from feed_deposits f
 where f.deposit_id = u.deposit_id and u.received_at <= f.created_at;

-- Ids credited on a second platform before this table: a later credit (the first of them) is
-- shown to the operator as conflicting, in place of whatever row the id had.
insert into unmatched_deposits as u (deposit_id, reference, currency, amount, rail, sender, reason, platform_id, account_id, received_at, detail, credited_platform_id, credited_transaction_id)
select distinct on (fd.deposit_id)
       fd.deposit_id, t.reconciliation_reference, t.receiving_currency, t.received_amount, coalesce(t.payment_rail, 'UNKNOWN'), null, 'CONFLICTING_DEPOSIT',
       fd.platform_id, t.destination_account_id, fd.created_at,
       'credited a second time, on this platform (transaction ' || t.id || '), before migration 0038', f.platform_id, f.transaction_id
  from funding_deposits fd
  join feed_deposits f on f.deposit_id = fd.deposit_id and f.platform_id <> fd.platform_id
  join transactions t on t.platform_id = fd.platform_id and t.id = fd.transaction_id
 where t.environment = 'production'
 order by fd.deposit_id, fd.created_at, fd.platform_id
on conflict (deposit_id) do update
   set reference = excluded.reference, currency = excluded.currency, amount = excluded.amount, rail = excluded.rail, sender = null,
       reason = excluded.reason, platform_id = excluded.platform_id, account_id = excluded.account_id, received_at = excluded.received_at,
       detail = excluded.detail, credited_platform_id = excluded.credited_platform_id, credited_transaction_id = excluded.credited_transaction_id, resolved_at = null;
