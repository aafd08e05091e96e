-- Retention (platform/retention.ts) of OTP challenges: the hourly purge (purgeOtpChallenges,
-- wallet-auth/repo.ts) walks challenges oldest first through this index, a bounded batch at a
-- time, and asks otp_challenges_credential whether a later challenge of the same credential
-- superseded each one.
--
-- Made only if missing, as in 0046: on a large table, build the index first with CREATE INDEX
-- CONCURRENTLY under the same name, and this migration keeps it instead of holding writes to
-- the table while it builds.
create index if not exists otp_challenges_created on otp_challenges (created_at);
