-- platform_row_counts_apply() (migration 0034) in plpgsql instead of SQL, same body.
--
-- Every insert into transactions, documents, verifications, internal_accounts, external_accounts
-- and webhook_deliveries calls it from its count trigger. A SQL-language function that is not
-- inlined (this one writes) is parsed and planned again on every call; a plpgsql body is compiled
-- once per connection and its INSERT keeps a cached plan. Measured with bench/statement-cpu.mjs
-- (one-row INSERT into a table with this trigger, 20,000 executions, PostgreSQL 15): the trigger
-- cost 110–117 µs of PostgreSQL CPU per insert with the SQL body, 55–70 µs with this one. Each
-- payment inserts a transaction row, and each webhook a delivery row.
create or replace function platform_row_counts_apply(name text, sign int, platform uuid, live bigint, total bigint) returns void
language plpgsql as $$
begin
  insert into platform_row_counts as c (platform_id, table_name, slot, live, total)
  values (platform, name, pg_backend_pid() % 64, sign * live, sign * total)
  on conflict (platform_id, table_name, slot)
  do update set live = c.live + excluded.live, total = c.total + excluded.total;
end $$;
