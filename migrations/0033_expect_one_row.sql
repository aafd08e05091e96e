-- A check a statement makes of itself (platform/db/tx.ts): the last statement of a withTx
-- transaction writes its deferred rows and its one deferred UPDATE (a job's checkpoint), which
-- must change exactly one row (else another worker took the job over). Checked in JavaScript, its
-- row count had to come back before COMMIT was sent, a round trip of its own; checked in the
-- statement, a mismatch fails it (SQLSTATE CP001), PostgreSQL skips the COMMIT sent with it and
-- the transaction rolls back, so COMMIT can go in the same write.
create function expect_one_row(changed bigint) returns bigint language plpgsql as $$
begin
  if changed <> 1 then
    raise exception 'a deferred update changed % rows, not one', changed using errcode = 'CP001';
  end if;
  return changed;
end
$$;
