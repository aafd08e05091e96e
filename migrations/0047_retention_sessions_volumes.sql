-- Retention (platform/retention.ts) of wallet sessions and daily volumes: the hourly purge finds
-- the rows it deletes through these indexes, oldest first, a bounded batch at a time.
--
-- Made only if missing, as in 0046: on a large table, build the index first with CREATE INDEX
-- CONCURRENTLY under the same name, and this migration keeps it instead of holding writes to
-- the table while it builds.

-- When a session stopped signing: revoked, or else expired (least ignores a null revoked_at).
create index if not exists auth_sessions_ended on auth_sessions (least(expires_at, revoked_at));
-- A day's counters, oldest day first; the primary key leads with the platform and the customer.
create index if not exists daily_volumes_day on daily_volumes (day);
