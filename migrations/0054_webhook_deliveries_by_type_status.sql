-- GET /webhooks/deliveries?eventType=…&status=…: each of the two indexes serves one filter and
-- leaves the other to be checked row by row, so a rare pair (the FAILED deliveries of a type
-- that almost always succeeds) read every delivery of that type, or every FAILED one, before a
-- page was full. This one reads only the rows of the page.
--
-- Made only if missing, as in 0046: on a large table, build the index first with CREATE INDEX
-- CONCURRENTLY under the same name, and this migration keeps it instead of holding writes to
-- the table while it builds.
create index if not exists webhook_deliveries_by_type_status on webhook_deliveries (platform_id, event_type, status, id);
