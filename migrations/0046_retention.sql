-- Retention (platform/retention.ts): the hourly purge finds the rows it deletes through an index,
-- a bounded batch at a time, and /metrics counts jobs without reading the finished ones.
--
-- The indexes on tables that may already be large are made only if missing: on a big jobs table,
-- build jobs_done first with CREATE INDEX CONCURRENTLY under the same name, and this migration
-- keeps it instead of holding writes to jobs while it builds.

-- Finished jobs, oldest first: the purge of those past CORRIDOR_JOBS_RETENTION_HOURS.
create index if not exists jobs_done on jobs (updated_at) where status = 'done';
-- Dead jobs are kept (an operator's evidence); /metrics counts them here, with queued and
-- running ones through jobs_due.
create index if not exists jobs_dead on jobs (updated_at) where status = 'dead';
-- One live purge job however many processes start: the database refuses a second one queued or
-- running (the kind is platform/retention.ts's RETENTION_JOB).
create unique index jobs_one_live_retention on jobs (kind) where kind = 'retention.purge' and status in ('queued', 'running');

-- Expired lookups, oldest first; their primary keys lead with the platform.
create index if not exists uma_lookups_expiry on uma_lookups (expires_at);
create index if not exists receiver_lookups_expiry on receiver_lookups (expires_at);
