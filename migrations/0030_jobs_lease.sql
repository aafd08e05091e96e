-- Claims read only what they may take (platform/jobs/worker.ts): due queued jobs through jobs_due (a
-- range of run_at), and, on the poll, running jobs whose lease ran out through this index. One
-- scan with both conditions (an OR) read every waiting job, e.g. each payment's settlement
-- until its day, on every claim.
create index jobs_lease on jobs (locked_until) where status = 'running';
