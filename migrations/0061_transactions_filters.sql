-- GET /transactions filtered by status, by type, by an account identifier or by platformCustomerId
-- (modules/transactions/repo.ts, listTransactions): no index led with these, so a page walked the
-- platform's (platform_id, created_at, id) index checking each row, and a value few rows hold
-- (status FAILED or PENDING, the reconcile poll; a dormant account's statement) read every
-- transaction of the platform before the page was known to be complete. Each index below leads
-- with the platform and the filtered value and ends in the page's order, so a page reads only its
-- own rows, whatever the plan's estimates: the value's rows come in order, the first limit + 1 are
-- the page. The account expressions are exactly those `accountIdIs` and `umaAddressIs` compare,
-- one index per alternative of `accountAlternatives` (each read on its own): an account id in
-- lower case (ids take their uuid in either case), a UMA address as stored (only rows with one:
-- most payments have none).
--
-- The status index makes every status UPDATE non-HOT (each index of the table gets a new entry):
-- its cost on the payment path is in bench/README.md, "Transaction list filters at scale".
--
-- Made only if missing, as in 0054 and 0057: on a large table, build each index first with CREATE
-- INDEX CONCURRENTLY under the same name (docs/development.md, Upgrading), and this migration keeps
-- it instead of holding writes to the table while it builds.
create index if not exists transactions_status_created on transactions (platform_id, status, created_at, id);
-- A type's own walk too: a platform that almost only pays out lists its few INCOMING payments.
-- The type never changes, so this one costs an insert a few µs and leaves updates as they are.
create index if not exists transactions_type_created on transactions (platform_id, type, created_at, id);
create index if not exists transactions_platform_customer_created on transactions (platform_id, platform_customer_id, created_at, id);
create index if not exists transactions_source_account on transactions (platform_id, lower(source->>'accountId'), created_at, id);
create index if not exists transactions_destination_account on transactions (platform_id, lower(destination->>'accountId'), created_at, id);
create index if not exists transactions_source_uma on transactions (platform_id, (source->>'umaAddress'), created_at, id)
  where source->>'umaAddress' is not null;
create index if not exists transactions_destination_uma on transactions (platform_id, (destination->>'umaAddress'), created_at, id)
  where destination->>'umaAddress' is not null;
