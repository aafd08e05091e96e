-- Transfers on the platform's own behalf (issue 15): a quote from a platform-owned internal
-- account without `source.customerId`, or REALTIME_FUNDING without `customerId`, has no sending
-- customer, and its transaction has none either. Both customer columns are absent together.
alter table transactions alter column customer_id drop not null;
alter table transactions alter column platform_customer_id drop not null;
alter table transactions add constraint transactions_customer_pair check ((customer_id is null) = (platform_customer_id is null));
