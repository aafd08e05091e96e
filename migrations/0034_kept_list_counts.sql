-- List totals of transactions, documents, verifications, customers' internal accounts and
-- external accounts from counts kept in the writing transaction (platform_row_counts, migration
-- 0009), as customers' are: a count(*) over a platform's rows on every page grows with the
-- platform (docs/development.md, "Request paths at scale"). Where a table holds two lists a count
-- has a name of its own in table_name.

-- A count of the changed rows (the transition table `changed`) under `name` for each platform,
-- `sign` 1 for inserted rows, -1 for deleted ones; `live` leaves out soft-deleted rows.
create function platform_row_counts_apply(name text, sign int, platform uuid, live bigint, total bigint) returns void
language sql as $$
  insert into platform_row_counts as c (platform_id, table_name, slot, live, total)
  values (platform, name, pg_backend_pid() % 64, sign * live, sign * total)
  on conflict (platform_id, table_name, slot)
  do update set live = c.live + excluded.live, total = c.total + excluded.total;
$$;

-- Transactions, documents, verifications: every row under the table's name (none is soft-deleted).
create function platform_row_counts_changed() returns trigger language plpgsql as $$
begin
  perform platform_row_counts_apply(TG_TABLE_NAME, case when TG_OP = 'INSERT' then 1 else -1 end, platform_id, n, n)
     from (select platform_id, count(*) as n from changed group by platform_id) s;
  return null;
end $$;
create trigger transactions_count_insert after insert on transactions
  referencing new table as changed for each statement execute function platform_row_counts_changed();
create trigger transactions_count_delete after delete on transactions
  referencing old table as changed for each statement execute function platform_row_counts_changed();
create trigger documents_count_insert after insert on documents
  referencing new table as changed for each statement execute function platform_row_counts_changed();
create trigger documents_count_delete after delete on documents
  referencing old table as changed for each statement execute function platform_row_counts_changed();
create trigger verifications_count_insert after insert on verifications
  referencing new table as changed for each statement execute function platform_row_counts_changed();
create trigger verifications_count_delete after delete on verifications
  referencing old table as changed for each statement execute function platform_row_counts_changed();

-- Internal accounts: the customers' (GET /customers/internal-accounts); the platform's own are
-- one per currency and listed whole.
create function internal_accounts_count_changed() returns trigger language plpgsql as $$
begin
  perform platform_row_counts_apply('internal_accounts', case when TG_OP = 'INSERT' then 1 else -1 end, platform_id, n, n)
     from (select platform_id, count(*) as n from changed where customer_id is not null group by platform_id) s;
  return null;
end $$;
create trigger internal_accounts_count_insert after insert on internal_accounts
  referencing new table as changed for each statement execute function internal_accounts_count_changed();
create trigger internal_accounts_count_delete after delete on internal_accounts
  referencing old table as changed for each statement execute function internal_accounts_count_changed();

-- External accounts: the customers' (`external_accounts`) and the platform's own
-- (`external_accounts:platform`) are two lists; a deletion is soft (deleted_at).
create function external_accounts_count_name(customer_id uuid) returns text language sql immutable as $$
  select case when customer_id is null then 'external_accounts:platform' else 'external_accounts' end
$$;
create function external_accounts_count_changed() returns trigger language plpgsql as $$
begin
  perform platform_row_counts_apply(name, case when TG_OP = 'INSERT' then 1 else -1 end, platform_id, live, total)
     from (select platform_id, external_accounts_count_name(customer_id) as name,
                  count(*) filter (where deleted_at is null) as live, count(*) as total
             from changed group by 1, 2) s;
  return null;
end $$;
create function external_accounts_count_liveness() returns trigger language plpgsql as $$
begin
  perform platform_row_counts_apply(external_accounts_count_name(new.customer_id), 1, new.platform_id,
                                    case when new.deleted_at is null then 1 else -1 end, 0);
  return null;
end $$;
create trigger external_accounts_count_insert after insert on external_accounts
  referencing new table as changed for each statement execute function external_accounts_count_changed();
create trigger external_accounts_count_delete after delete on external_accounts
  referencing old table as changed for each statement execute function external_accounts_count_changed();
create trigger external_accounts_count_liveness after update of deleted_at on external_accounts
  for each row when ((old.deleted_at is null) <> (new.deleted_at is null)) execute function external_accounts_count_liveness();

-- The rows already there, on slot 0.
insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, 'transactions', 0, count(*), count(*) from transactions group by platform_id;
insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, 'documents', 0, count(*), count(*) from documents group by platform_id;
insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, 'verifications', 0, count(*), count(*) from verifications group by platform_id;
insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, 'internal_accounts', 0, count(*), count(*) from internal_accounts where customer_id is not null group by platform_id;
insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, external_accounts_count_name(customer_id), 0, count(*) filter (where deleted_at is null), count(*)
  from external_accounts group by 1, 2;
