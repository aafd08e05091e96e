-- Every balance update in ledger_apply() names its row completely (platform, account, shard).
-- The planner may reach it through ledger_balances_platform (platform_id, account_id) rather
-- than the primary key, and for a hot account that index leads to all of its shards (64 rows,
-- each with the versions left by every payment): the fee update cost ~2 ms where one row costs
-- ~0.04 ms (bench/README.md). With the shard in the index every path leads to exactly one row.
-- The balance reads (platform, accounts) use it as they used the old one.
create index ledger_balances_platform_shard on ledger_balances (platform_id, account_id, shard);
drop index ledger_balances_platform;
