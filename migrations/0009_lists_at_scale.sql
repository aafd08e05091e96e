-- Requests whose cost does not grow with the size of a table (docs/development.md, "Request
-- paths at scale").

-- Row counts kept in the same transaction as the change, for list totals without count(*).
-- Each platform's count is spread over slots (one per backend, by pid), so concurrent writers
-- rarely touch the same row; a count is the sum of a platform's slots for a table.
create table platform_row_counts (
  platform_id uuid not null references platforms (id),
  table_name text not null,
  slot smallint not null,
  -- Rows not soft-deleted (deleted_at is null), and all rows.
  live bigint not null default 0,
  total bigint not null default 0,
  primary key (platform_id, table_name, slot)
);

create function platform_row_counts_add() returns trigger language plpgsql as $$
begin
  insert into platform_row_counts as c (platform_id, table_name, slot, live, total)
  select platform_id, TG_TABLE_NAME, pg_backend_pid() % 64,
         sum(case when deleted_at is null then 1 else 0 end), count(*)
    from changed group by platform_id
  on conflict (platform_id, table_name, slot)
  do update set live = c.live + excluded.live, total = c.total + excluded.total;
  return null;
end $$;

create function platform_row_counts_remove() returns trigger language plpgsql as $$
begin
  insert into platform_row_counts as c (platform_id, table_name, slot, live, total)
  select platform_id, TG_TABLE_NAME, pg_backend_pid() % 64,
         -sum(case when deleted_at is null then 1 else 0 end), -count(*)
    from changed group by platform_id
  on conflict (platform_id, table_name, slot)
  do update set live = c.live + excluded.live, total = c.total + excluded.total;
  return null;
end $$;

-- A soft delete (or undelete) moves one row in or out of `live`.
create function platform_row_counts_liveness() returns trigger language plpgsql as $$
begin
  insert into platform_row_counts as c (platform_id, table_name, slot, live, total)
  values (new.platform_id, TG_TABLE_NAME, pg_backend_pid() % 64, case when new.deleted_at is null then 1 else -1 end, 0)
  on conflict (platform_id, table_name, slot)
  do update set live = c.live + excluded.live;
  return null;
end $$;

create trigger customers_count_insert after insert on customers
  referencing new table as changed for each statement execute function platform_row_counts_add();
create trigger customers_count_delete after delete on customers
  referencing old table as changed for each statement execute function platform_row_counts_remove();
create trigger customers_count_liveness after update of deleted_at on customers
  for each row when ((old.deleted_at is null) <> (new.deleted_at is null)) execute function platform_row_counts_liveness();

insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, 'customers', 0, count(*) filter (where deleted_at is null), count(*) from customers group by platform_id;

-- Without statistics (a new table, or autovacuum off) the planner believes `deleted_at is null`
-- keeps 0.5 % of rows, so any partial index on live rows looks tiny and a page query would read
-- all of a platform's customers through any of them and sort them, or look a platformCustomerId
-- up by reading all live customers. So each partial index also requires the column its own
-- queries constrain, which no other query implies: the uniqueness indexes their column, the page
-- index `id` (every page query, the first too, bounds `id` below its cursor).
drop index customers_platform_customer_id_live;
create unique index customers_platform_customer_id_live on customers (platform_id, platform_customer_id)
  where deleted_at is null and platform_customer_id is not null;
drop index customers_uma_address_live;
create unique index customers_uma_address_live on customers (platform_id, lower(uma_address))
  where deleted_at is null and uma_address is not null;
create index customers_live_page on customers (platform_id, id desc) where deleted_at is null and id is not null;
