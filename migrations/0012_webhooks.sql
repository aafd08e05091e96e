-- Webhook signing keys. One key signs a platform's deliveries at any time: the one with the
-- latest `activates_at` not in the future. A rotation publishes the next key ahead of its
-- activation, so receivers can trust both before it signs. The private key is PKCS#8 DER sealed
-- under the master key; only the public key (SPKI PEM) is ever served.
create table webhook_signing_keys (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  generation integer not null,
  public_key text not null,
  sealed_private_key text not null,
  created_at timestamptz not null,
  activates_at timestamptz not null,
  retires_at timestamptz,
  primary key (platform_id, id),
  -- Two concurrent rotations (or first uses) cannot both add the same generation.
  unique (platform_id, generation)
);

-- Event payloads are kept as the text their module wrote (json, not jsonb), so a webhook's
-- `data` lists fields in the order of the API's own responses.
alter table events alter column data type json using data::json;

-- One row per webhook a platform's endpoint should receive. `id` is the envelope's
-- `Webhook:<uuid>`: for an outbox event it is the event's id, so a re-send carries the same id
-- and receivers can de-duplicate on it. The payload is copied so the log outlives the outbox.
-- Kept as json (not jsonb) for the same reason as events.data.
create table webhook_deliveries (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  kind text not null check (kind in ('EVENT', 'TEST', 'APPROVAL')),
  event_type text not null,
  resource_id text,
  data json,
  status text not null check (status in ('PENDING', 'SUCCEEDED', 'FAILED')),
  attempt_count integer not null default 0,
  next_attempt_at timestamptz,
  last_attempt_at timestamptz,
  last_response_status integer,
  last_latency_ms integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (platform_id, id)
);
create index webhook_deliveries_by_status on webhook_deliveries (platform_id, status, id);
create index webhook_deliveries_by_type on webhook_deliveries (platform_id, event_type, id);

-- Every attempt of a delivery, for the delivery log. Response bodies are kept truncated.
create table webhook_attempts (
  platform_id uuid not null,
  delivery_id uuid not null,
  number integer not null,
  attempted_at timestamptz not null,
  url text,
  outcome text not null check (outcome in ('SUCCEEDED', 'FAILED', 'REFUSED')),
  response_status integer,
  response_body text,
  latency_ms integer not null,
  error text,
  primary key (platform_id, delivery_id, number),
  foreign key (platform_id, delivery_id) references webhook_deliveries (platform_id, id) on delete cascade
);

-- The incoming-payment approval round trip: the platform's decision on one transaction,
-- taken from its webhook answer, from POST /transactions/{id}/approve|reject, or by the deadline.
create table webhook_approvals (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  transaction_id text not null,
  consumer text not null,
  status text not null check (status in ('PENDING', 'APPROVED', 'REJECTED', 'INFO_REQUIRED', 'TIMED_OUT', 'WEBHOOK_ERROR')),
  requested_fields jsonb not null,
  outcome jsonb,
  decided_via text check (decided_via in ('WEBHOOK', 'API', 'DEADLINE')),
  deadline timestamptz not null,
  created_at timestamptz not null,
  decided_at timestamptz,
  primary key (platform_id, id)
);
-- At most one open question per transaction; a later round (after INFO_REQUIRED) is a new row.
create unique index webhook_approvals_pending on webhook_approvals (platform_id, transaction_id) where status = 'PENDING';

