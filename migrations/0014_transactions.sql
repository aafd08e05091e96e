-- Payments after a quote's execution (issue 15): one row per transaction, its status machine
-- (modules/transactions/status.ts) and the ledger transactions that moved its money.
create table transactions (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  -- One execution per quote: the database refuses a second transaction for the same quote.
  quote_id uuid,
  type text not null check (type in ('OUTGOING', 'INCOMING')),
  status text not null
    check (status in ('CREATED', 'PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED')),
  failure_reason text,
  environment text not null check (environment in ('sandbox', 'production')),
  customer_id uuid not null,
  platform_customer_id text not null,
  source jsonb not null,
  destination jsonb not null,
  -- The internal account the money comes from (ACCOUNT sources on an internal account), for filters.
  source_account_id uuid,
  destination_account_id uuid,
  sending_currency text not null,
  receiving_currency text not null,
  sent_amount bigint not null check (sent_amount >= 0),
  total_sending_amount bigint not null check (total_sending_amount >= 0),
  received_amount bigint not null check (received_amount >= 0),
  fees bigint not null check (fees >= 0),
  platform_fees bigint not null check (platform_fees >= 0),
  -- Decimal string fixed at quote time, never recomputed.
  exchange_rate text not null,
  rate_details jsonb,
  description text,
  remittance_information text,
  purpose_of_payment text,
  payment_instructions jsonb,
  payment_rail text,
  reconciliation_reference text not null,
  -- Ledger transactions (uuids): the hold, its posting or void, and the refund that reversed it.
  hold_id uuid,
  funding_id uuid,
  funded_amount bigint,
  expected_settlement_at timestamptz,
  settled_at timestamptz,
  receipt_delivery_confirmed_at timestamptz,
  refund_reference text,
  refund_status text check (refund_status in ('PENDING', 'COMPLETED', 'FAILED')),
  refund_reason text check (refund_reason in ('TRANSACTION_FAILED', 'USER_CANCELLATION', 'TIMEOUT')),
  refund_initiated_at timestamptz,
  refund_settled_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (platform_id, id),
  check ((status in ('FAILED', 'EXPIRED', 'REJECTED')) = (failure_reason is not null)),
  -- Removed reasons (spec §9.4) can never be stored.
  check (failure_reason is null or failure_reason not in ('EXECUTION_FAILED_POST_DEBIT', 'SETTLEMENT_FAILED', 'TIMEOUT', 'MANUAL_REFUND')),
  check ((refund_status is null) = (refund_reference is null))
);
create unique index transactions_quote on transactions (platform_id, quote_id) where quote_id is not null;
create index transactions_platform_created on transactions (platform_id, created_at, id);
create index transactions_customer on transactions (platform_id, customer_id, id);
create index transactions_reference on transactions (platform_id, reconciliation_reference);

-- Sandbox test clocks: how far a sandbox platform has moved its own time ahead of the real clock.
create table platform_clock_offsets (
  platform_id uuid primary key references platforms (id),
  offset_ms bigint not null check (offset_ms >= 0),
  updated_at timestamptz not null
);
