-- The rows written before 0059 against its constraints (the same rules the old constraints
-- checked), in a migration of its own: VALIDATE CONSTRAINT takes a SHARE UPDATE EXCLUSIVE lock,
-- so other Corridor processes keep quoting and paying while the tables are scanned (about 1 s per
-- million transactions rows, PostgreSQL 15 on 2 vCPU).
alter table transactions validate constraint transactions_valid;
alter table quotes validate constraint quotes_valid;
