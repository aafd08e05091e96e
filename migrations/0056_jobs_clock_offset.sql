-- A sandbox clock advanced while one of its platform's jobs runs moves that job's retry too
-- (platform/platform-clock.ts, platform/jobs/worker.ts).
--
-- An advance moved only queued jobs. A running job writes its retry after the advance, computed
-- from the platform's time it read before it: the advance was lost to it, and a settlement due in
-- a day, advanced a day meanwhile, came a day late instead of at once. Now a job carries its
-- platform's clock offset while it runs: the claim records the offset (in the statement that
-- claims, so an advance that commits later finds the job running), an advance adds itself to its
-- platform's running jobs (as it moves the queued ones), and the UPDATE that writes a retry moves
-- it back by what the offset grew beyond the one its time counts from (the claim's for a time of
-- the shared clock, none for one of the platform's: RetryJobAt). Both writes take the job's row
-- lock, so whichever comes second sees the first. A platform never advanced keeps offset 0: its
-- retries are written as before.
alter table jobs add column clock_offset_ms bigint not null default 0;

-- Otherwise jobs_claim is 0045's.
create or replace function jobs_claim(
  p_expired boolean, p_kinds text[], p_now timestamptz, p_lease_until timestamptz, p_limit integer, p_skip_platforms uuid[],
  -- Each limited kind's share, and what runs of each kind per platform in the claiming worker.
  p_limited_kinds text[], p_limits integer[], p_running_kinds text[], p_running_platforms uuid[], p_running_counts integer[],
  -- The jobs the claiming worker runs itself.
  p_own_jobs uuid[]
) returns setof jobs
language plpgsql
set plan_cache_mode = force_generic_plan
-- Without bitmap or sequential scans the reads go along an index in order and stop at the
-- limit. No JIT: the statements are small, and a disabled plan's cost (were it the only one)
-- made the planner JIT-compile the UPDATE, 0.5 s a claim.
set enable_bitmapscan = off
set enable_seqscan = off
set jit = off
as $$
declare
  v_ids uuid[];
  v_kinds text[];
  v_platforms uuid[];
  v_run_ats timestamptz[];
begin
  if p_expired then
    select array_agg(d.id), array_agg(d.kind), array_agg(d.platform_id), array_agg(d.run_at)
      into v_ids, v_kinds, v_platforms, v_run_ats
      from (select j.id, j.kind, j.platform_id, j.run_at from jobs j
             where j.status = 'running' and j.locked_until < p_now and j.kind = any(p_kinds)
               and j.id <> all(p_own_jobs)
               and (j.platform_id is null or j.platform_id <> all(p_skip_platforms))
             order by j.locked_until
             limit p_limit
             for update of j skip locked) d;
  else
    select array_agg(d.id), array_agg(d.kind), array_agg(d.platform_id), array_agg(d.run_at)
      into v_ids, v_kinds, v_platforms, v_run_ats
      from (select j.id, j.kind, j.platform_id, j.run_at from jobs j
             where j.status = 'queued' and j.run_at <= p_now and j.kind = any(p_kinds)
               and (j.platform_id is null or j.platform_id <> all(p_skip_platforms))
             order by j.run_at
             limit p_limit
             for update of j skip locked) d;
  end if;
  if v_ids is null then
    return;
  end if;
  return query
    update jobs j
       set status = 'running', attempts = j.attempts + 1, locked_until = p_lease_until, updated_at = p_now,
           -- The platform's offset as this statement sees it: an advance committed since adds itself to the running job.
           clock_offset_ms = coalesce((select o.offset_ms from platform_clock_offsets o where o.platform_id = j.platform_id), 0)
     where j.id = any(array(
       select r.id from (
         select d.id, d.platform_id,
                row_number() over (partition by d.kind, d.platform_id order by d.run_at, d.id) as place,
                -- A limited kind: its share less what runs; any other kind: no limit beyond the batch.
                coalesce(
                  (select l.share from unnest(p_limited_kinds, p_limits) as l(kind, share) where l.kind = d.kind)
                    - coalesce((select rn.n from unnest(p_running_kinds, p_running_platforms, p_running_counts) as rn(kind, platform_id, n)
                                 where rn.kind = d.kind and rn.platform_id = d.platform_id), 0),
                  p_limit
                ) as room
           from unnest(v_ids, v_kinds, v_platforms, v_run_ats) as d(id, kind, platform_id, run_at)
       ) r
       where r.platform_id is null or r.place <= r.room))
    returning j.*;
end
$$;
