-- The delivery log's total (GET /webhooks/deliveries, unfiltered) from a count kept in the
-- writing transaction, as the other lists' (migration 0034): a count(*) over a platform's
-- deliveries on every page would grow with the log. Every delivery (EVENT, TEST, APPROVAL) is
-- listed, so every row counts, under the table's name.
create trigger webhook_deliveries_count_insert after insert on webhook_deliveries
  referencing new table as changed for each statement execute function platform_row_counts_changed();
create trigger webhook_deliveries_count_delete after delete on webhook_deliveries
  referencing old table as changed for each statement execute function platform_row_counts_changed();

-- The deliveries already there, on slot 0.
insert into platform_row_counts (platform_id, table_name, slot, live, total)
select platform_id, 'webhook_deliveries', 0, count(*), count(*) from webhook_deliveries group by platform_id;
