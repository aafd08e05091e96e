-- Deposits to internal accounts' funding instructions (issue 17 §3): each becomes one INCOMING
-- transaction crediting the account, exactly once per deposit id the rail reported.
create table funding_deposits (
  platform_id uuid not null references platforms (id),
  -- The rail provider's id of the deposit (sandbox: the caller's depositId, or one drawn).
  deposit_id text not null,
  transaction_id uuid not null,
  created_at timestamptz not null,
  primary key (platform_id, deposit_id)
);

-- Deposits the rail provider reported that credited nothing (no account carries the reference,
-- the account is not ACTIVE, another currency, past the balance limit): kept for the operator,
-- who returns the money or credits it by hand. Once per deposit id.
create table unmatched_deposits (
  deposit_id text primary key,
  reference text not null,
  currency text not null,
  amount bigint not null check (amount > 0),
  rail text not null,
  sender jsonb,
  reason text not null check (reason in ('UNKNOWN_REFERENCE', 'ACCOUNT_NOT_ACTIVE', 'CURRENCY_MISMATCH', 'BALANCE_LIMIT')),
  -- The account the reference named, when one did.
  platform_id uuid,
  account_id uuid,
  received_at timestamptz not null
);

-- The rail provider's deposit feed: where the next poll resumes, and the one job that polls
-- next (a run whose id is not this one is a stale duplicate and stops).
create table deposit_feeds (
  name text primary key,
  cursor text,
  job_id uuid,
  updated_at timestamptz not null
);

-- Deposit addresses and Lightning invoices live in the instructions: found by containment.
create index internal_accounts_funding_instructions on internal_accounts using gin (funding_payment_instructions jsonb_path_ops);
