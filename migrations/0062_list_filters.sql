-- List pages filtered by a value few rows hold (issue 13 §3, as 0061 for GET /transactions): each
-- list below pages its platform's rows in id order along an index that leads with platform_id
-- alone, so a filter on another column was checked row by row in that walk, and a value few rows
-- hold (the review queue, the few BUSINESS customers of a consumer platform, a rare region or
-- currency, a deleted customer's platformCustomerId) read every row of the platform before the
-- page was known to be complete. Each index below leads with the platform and the filtered value
-- and ends in the list's id order, so the value's rows come in page order and the first limit + 1
-- are the page, for a plan made for the value and for a generic one (the pipelined reads' plans):
-- the queries name the value as bounds and order by it (`oneValue`, platform/db/platform-page.ts),
-- so that only these indexes give a page's order.
--
-- These tables are written rarely next to transactions: each index costs one index tuple per
-- insert. Columns that never change after insert (customer_type, the accounts' currency and type)
-- leave updates HOT as they were; an update that changes region, or a verification's status (a
-- few times in its life), now writes a new entry in every index of its table (non-HOT).
--
-- Made only if missing, as in 0054, 0057 and 0061: on a large table, build each index first with
-- CREATE INDEX CONCURRENTLY under the same name (docs/development.md, Upgrading), and this
-- migration keeps it instead of holding writes to the table while it builds.

-- GET /verifications?verificationStatus=PENDING_MANUAL_REVIEW: the review queue, a few rows among
-- every verification the platform ever ran.
create index if not exists verifications_status on verifications (platform_id, status, id desc);

-- GET /customers by customerType or region. Not partial: the same index serves the live list
-- (checking deleted_at on rows of the value only) and isIncludingDeleted=true.
create index if not exists customers_type_page on customers (platform_id, customer_type, id desc);
create index if not exists customers_region_page on customers (platform_id, region, id desc);
-- GET /customers?isIncludingDeleted=true by platformCustomerId or umaAddress: the unique indexes
-- hold live customers only, so a deleted customer's value walked every customer of the platform.
create index if not exists customers_platform_customer_id_page on customers (platform_id, platform_customer_id, id desc);
create index if not exists customers_uma_address_page on customers (platform_id, lower(uma_address), id desc);

-- GET /customers/external-accounts and /platform/external-accounts by currency, live accounts
-- only as the lists are. The predicate names currency, which every query of this index
-- constrains, so that without statistics no other query mistakes it for a small index (0009).
create index if not exists external_accounts_currency_live on external_accounts (platform_id, currency, id)
  where deleted_at is null and currency is not null;

-- GET /customers/internal-accounts by currency or type (a customer's accounts, one per currency
-- and type: a rare currency's are a few among every customer's).
create index if not exists internal_accounts_currency_page on internal_accounts (platform_id, currency, id desc);
create index if not exists internal_accounts_type_page on internal_accounts (platform_id, type, id desc);
