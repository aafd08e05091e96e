-- Tenancy: every later row belongs to one platform.
create table platforms (
  id uuid primary key,
  name text not null,
  environment text not null check (environment in ('sandbox', 'production')),
  created_at timestamptz not null,
  updated_at timestamptz not null
);

create table api_tokens (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  name text not null,
  permissions text[] not null,
  client_id text not null unique,
  secret_hash bytea not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz
);
create index api_tokens_platform_live on api_tokens (platform_id, id desc) where deleted_at is null;

create table platform_configs (
  id uuid primary key,
  platform_id uuid not null unique references platforms (id),
  uma_domain text,
  proxy_uma_subdomain text,
  webhook_endpoint text,
  is_regulated_financial_institution boolean not null default false,
  supported_currencies jsonb not null,
  embedded_wallet_config jsonb,
  card_tokenization_2fa_config jsonb,
  fee_configs jsonb not null default '[]',
  created_at timestamptz not null,
  updated_at timestamptz not null
);

-- Idempotency-Key: the response is stored in the same transaction as the change it reports.
create table idempotency_keys (
  platform_id uuid not null references platforms (id),
  key text not null,
  request_hash text not null,
  status_code integer,
  response_body jsonb,
  created_at timestamptz not null,
  primary key (platform_id, key)
);

-- Durable background work, claimed with FOR UPDATE SKIP LOCKED.
create table jobs (
  id uuid primary key,
  platform_id uuid references platforms (id),
  kind text not null,
  payload jsonb not null,
  status text not null check (status in ('queued', 'running', 'done', 'dead')),
  attempts integer not null default 0,
  max_attempts integer not null,
  run_at timestamptz not null,
  locked_until timestamptz,
  last_error text,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index jobs_due on jobs (run_at) where status in ('queued', 'running');

-- Domain-event outbox: written in the transaction of the change that causes the event.
create table events (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  type text not null,
  resource_id text not null,
  data jsonb not null,
  created_at timestamptz not null,
  published_at timestamptz
);
create index events_unpublished on events (id) where published_at is null;
