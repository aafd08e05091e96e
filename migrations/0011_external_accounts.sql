-- External bank accounts and crypto wallets that money is paid to (customer's or platform's own).
create table external_accounts (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  -- null: the platform's own account.
  customer_id uuid references customers (id),
  account_type text not null,
  currency text not null,
  status text not null check (status in ('PENDING', 'ACTIVE', 'PENDING_OWNERSHIP_VERIFICATION', 'UNVERIFIED', 'UNDER_REVIEW', 'INACTIVE')),
  ownership_type text check (ownership_type in ('FIRST_PARTY', 'THIRD_PARTY')),
  platform_account_id text,
  default_uma_deposit_account boolean not null default false,
  -- The accountInfo as returned (with paymentRails on bank accounts).
  account_info jsonb not null,
  -- SHA-256 of the fields that name the destination: two live accounts of one owner may not share it.
  identity_sha256 text not null check (identity_sha256 ~ '^[0-9a-f]{64}$'),
  beneficiary_verification_status text not null
    check (beneficiary_verification_status in ('MATCHED', 'PARTIAL_MATCH', 'NOT_MATCHED', 'UNSUPPORTED', 'CHECKED_BY_RECEIVING_FI', 'PENDING')),
  beneficiary_verified_name text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  -- Deleted accounts stay for the payments that name them, and are invisible to the API.
  deleted_at timestamptz
);
create index external_accounts_platform_live on external_accounts (platform_id, id) where deleted_at is null;
create index external_accounts_customer_live on external_accounts (platform_id, customer_id, id) where deleted_at is null;
create unique index external_accounts_identity_live
  on external_accounts (platform_id, coalesce(customer_id, '00000000-0000-0000-0000-000000000000'::uuid), identity_sha256)
  where deleted_at is null;
create unique index external_accounts_default_uma
  on external_accounts (platform_id, customer_id) where default_uma_deposit_account and deleted_at is null;

-- The one outstanding ownership challenge of an account; a new challenge replaces it.
create table external_account_challenges (
  platform_id uuid not null references platforms (id),
  account_id uuid not null references external_accounts (id),
  method text not null check (method in ('WALLET_SIGNATURE', 'LIVENESS')),
  message_to_sign text,
  -- LIVENESS: SHA-256 of the secret token in the verification link; the token itself is never stored.
  token_sha256 text unique check (token_sha256 ~ '^[0-9a-f]{64}$'),
  expires_at timestamptz not null,
  created_at timestamptz not null,
  primary key (platform_id, account_id),
  check ((method = 'WALLET_SIGNATURE') = (message_to_sign is not null)),
  check ((method = 'LIVENESS') = (token_sha256 is not null))
);
