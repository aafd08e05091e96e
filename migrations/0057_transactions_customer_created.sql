-- GET /transactions pages in created_at order, ties by id (a payment's id is minted with its quote,
-- its row when the quote is executed: modules/transactions/repo.ts, listTransactions). Filtered to
-- one customer, the page walked (platform_id, customer_id, id) in id order; now it needs the
-- customer's rows in created_at order, or it walks the platform's created_at index filtering by
-- customer (every row of a large platform for a customer with few payments). The new index serves
-- every lookup the old one did (the same leading columns). On a large table it can be built
-- beforehand, concurrently (docs/development.md, Upgrading).
create index if not exists transactions_customer_created on transactions (platform_id, customer_id, created_at, id);
drop index if exists transactions_customer;
