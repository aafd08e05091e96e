-- The rows written before 0028 against its constraints (the same rules the old constraints
-- checked), in a migration of its own: VALIDATE CONSTRAINT takes a SHARE UPDATE EXCLUSIVE lock,
-- so other Corridor processes keep applying ledger transactions while the tables are scanned.
alter table ledger_balances validate constraint ledger_balances_valid;
alter table ledger_transactions validate constraint ledger_transactions_valid;
alter table ledger_entries validate constraint ledger_entries_valid;
