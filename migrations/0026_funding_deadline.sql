-- A REALTIME_FUNDING payment keeps its funding deadline (the quote's expiresAt, the platform's
-- clock), so money paid in after it is refused even before the expiry job has run (issue 15 §7).
alter table transactions add column funding_deadline timestamptz;
