-- Customers. Type-specific profile fields live in `profile` (never filtered on); the
-- identifier is kept apart because it is write-only and must never reach a response.
create table customers (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  platform_customer_id text not null,
  customer_type text not null check (customer_type in ('INDIVIDUAL', 'BUSINESS')),
  -- kycStatus of an individual, kybStatus of a business.
  review_status text not null check (review_status in ('UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'HOLD')),
  region text,
  currencies text[],
  email text,
  phone_number text,
  uma_address text not null,
  profile jsonb not null,
  identifier text,
  terms_version text,
  terms_accepted_at timestamptz,
  terms_ip_address text,
  terms_acceptance_method text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz
);
create unique index customers_platform_customer_id_live on customers (platform_id, platform_customer_id) where deleted_at is null;
create unique index customers_uma_address_live on customers (platform_id, lower(uma_address)) where deleted_at is null;
create index customers_platform_id_desc on customers (platform_id, id desc);

-- Per-platform onboarding switches; a platform without a row uses the defaults.
create table customer_settings (
  platform_id uuid primary key references platforms (id),
  sandbox_auto_approve boolean not null,
  updated_at timestamptz not null
);

create table beneficial_owners (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  customer_id uuid not null references customers (id),
  roles text[] not null,
  ownership_percentage integer not null check (ownership_percentage between 0 and 100),
  personal_info jsonb not null,
  identifier text not null,
  kyc_status text not null check (kyc_status in ('UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'HOLD')),
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index beneficial_owners_customer on beneficial_owners (platform_id, customer_id, id desc);

-- Verification documents' metadata (files belong to the documents issue).
create table documents (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  holder_type text not null check (holder_type in ('Customer', 'BeneficialOwner')),
  holder_id uuid not null,
  document_type text not null,
  side text check (side in ('FRONT', 'BACK')),
  country text not null,
  document_number text,
  issuing_authority text,
  file_name text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index documents_holder on documents (platform_id, holder_id, id);

create table verifications (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  customer_id uuid not null references customers (id),
  status text not null check (status in ('RESOLVE_ERRORS', 'PENDING_MANUAL_REVIEW', 'IN_PROGRESS', 'APPROVED', 'REJECTED', 'READY_FOR_VERIFICATION')),
  errors jsonb not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index verifications_platform on verifications (platform_id, id desc);
create index verifications_customer on verifications (platform_id, customer_id, id desc);

-- Balances are owned by the ledger; they start at zero here.
create table internal_accounts (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  customer_id uuid references customers (id),
  type text not null check (type in ('INTERNAL_FIAT', 'INTERNAL_CRYPTO', 'EMBEDDED_WALLET')),
  currency text not null,
  status text not null check (status in ('PENDING', 'ACTIVE', 'CLOSED', 'FROZEN', 'FAILED')),
  balance bigint not null default 0,
  total_balance bigint not null default 0,
  funding_payment_instructions jsonb not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index internal_accounts_customer_unique on internal_accounts (customer_id, type, currency) where customer_id is not null;
create unique index internal_accounts_platform_unique on internal_accounts (platform_id, type, currency) where customer_id is null;
create index internal_accounts_platform on internal_accounts (platform_id, id desc);

-- CSV imports: the file is kept until the job has read every row, so a crash resumes it.
create table customer_import_jobs (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  status text not null check (status in ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
  csv text,
  total integer not null,
  processed integer not null default 0,
  successful integer not null default 0,
  failed integer not null default 0,
  errors jsonb not null default '[]',
  created_at timestamptz not null,
  updated_at timestamptz not null,
  completed_at timestamptz
);
