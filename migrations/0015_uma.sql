-- UMA (modules/uma). The deployment's VASP keys: one row, made on first start. Private keys are
-- raw secp256k1 scalars sealed under the master key; the certificate chains (PEM, leaf first)
-- are public and served at /.well-known/lnurlpubkey. Configured keys (production) are never
-- stored here.
create table uma_vasp_keys (
  id text primary key check (id = 'default'),
  signing_cert_chain text not null,
  signing_key_sealed text not null,
  encryption_cert_chain text not null,
  encryption_key_sealed text not null,
  created_at timestamptz not null
);

-- Nonces of signed UMA messages from other VASPs, kept until their timestamp leaves the
-- accepted window: the primary key refuses a replay on every process at once.
create table uma_nonces (
  vasp_domain text not null,
  nonce text not null,
  expires_at timestamptz not null,
  primary key (vasp_domain, nonce)
);
create index uma_nonces_expiry on uma_nonces (vasp_domain, expires_at);

-- A sender's receiver lookup: what the receiving VASP answered, kept (briefly) for the quote.
create table uma_lookups (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  customer_id uuid not null,
  receiver_uma_address text not null,
  counterparty_domain text not null,
  response json not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (platform_id, id)
);

-- A pay request this Corridor answered as the receiving VASP: the invoice it issued and what the
-- receiver is to get. Pending until the (simulated) Lightning payment arrives.
create table uma_incoming_payments (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  customer_id uuid not null,
  receiver_uma_address text not null,
  sender_identifier text not null,
  sender_vasp_domain text not null,
  currency_code text not null,
  amount bigint not null check (amount > 0),
  amount_msats bigint not null check (amount_msats > 0),
  fee_msats bigint not null check (fee_msats >= 0),
  payment_hash text not null,
  invoice text not null,
  payer_data json not null,
  status text not null check (status in ('PENDING', 'COMPLETED', 'EXPIRED')),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (platform_id, id),
  unique (payment_hash)
);

-- Incoming lnurlp requests find the platforms serving the domain they arrived on.
create index platform_configs_by_uma_domain on platform_configs (lower(uma_domain), platform_id) where uma_domain is not null;
