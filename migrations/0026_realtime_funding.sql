-- A REALTIME_FUNDING payment keeps its funding deadline (the quote's expiresAt, the platform's
-- clock), so money paid in after it is refused even before the expiry job has run (issue 15 §7).
alter table transactions add column funding_deadline timestamptz;

-- The platform's UTC day whose daily volume a quote's execution was counted in (null: not
-- counted, or given back), so a payment that ends before any money left the sender (expired
-- unpaid, cancelled while PENDING, paid the wrong amount) gives its volume back to that day.
alter table quotes add column volume_day date;
