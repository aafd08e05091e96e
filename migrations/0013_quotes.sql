-- Exchange rates, quotes and the daily volume counters (issue 15; modules/rates, modules/quotes).

-- One cache window (5 minutes) of one rate provider's table: the first process to ask stores it,
-- every process prices with the stored row. Not tenant data: rates are the same for everyone.
create table exchange_rate_windows (
  provider text not null,
  window_start timestamptz not null,
  as_of timestamptz not null,
  -- {"EUR": "0.866", ...}: units per US dollar, decimal strings.
  rates jsonb not null,
  fetched_at timestamptz not null,
  primary key (provider, window_start)
);

-- A quote fixes the rate, every fee and both amounts at creation; execution never recomputes them.
create table quotes (
  id uuid primary key,
  -- No foreign keys on this hot table (as the ledger's): every check would share-lock the parents.
  platform_id uuid not null,
  -- The sending customer; null: the platform itself.
  customer_id uuid,
  -- The request's source and destination as the API shows them.
  source jsonb not null,
  destination jsonb not null,
  source_kind text not null check (source_kind in ('INTERNAL_ACCOUNT', 'EXTERNAL_ACCOUNT', 'REALTIME_FUNDING')),
  source_account_id uuid,
  source_account_type text,
  destination_kind text not null check (destination_kind in ('INTERNAL_ACCOUNT', 'EXTERNAL_ACCOUNT')),
  destination_account_id uuid not null,
  payment_rail text,
  sending_currency text not null,
  receiving_currency text not null,
  locked_side text not null check (locked_side in ('SENDING', 'RECEIVING')),
  locked_amount bigint not null check (locked_amount > 0),
  sent_amount bigint not null check (sent_amount > 0),
  service_fees bigint not null check (service_fees >= 0),
  platform_fees bigint not null check (platform_fees >= 0),
  total_sending_amount bigint not null,
  received_amount bigint not null check (received_amount > 0),
  -- Exact decimal string, receiving units per sending unit.
  exchange_rate text not null,
  rate_details jsonb not null,
  rate_window_start timestamptz not null,
  payment_instructions jsonb,
  -- Embedded-wallet source: the challenge whose payloadToSign the execute stamp signs.
  signed_request_id uuid,
  lookup_id text,
  description text,
  remittance_information text,
  purpose_of_payment text,
  sender_customer_info jsonb,
  transaction_id uuid not null unique,
  expires_at timestamptz not null,
  executed_at timestamptz,
  created_at timestamptz not null,
  check (total_sending_amount = sent_amount + service_fees + platform_fees)
);
create index quotes_platform on quotes (platform_id, id);

-- Volume a customer has executed per day and currency: one row, grown by a conditional upsert
-- that refuses to pass the limit, so concurrent executions can never overshoot it.
create table daily_volumes (
  platform_id uuid not null,
  customer_id uuid not null,
  day date not null,
  currency text not null,
  amount bigint not null check (amount >= 0),
  primary key (platform_id, customer_id, day, currency)
);

