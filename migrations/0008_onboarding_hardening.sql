-- Bulk import reports: one row per failed CSV row, so a job with many failures neither rewrites
-- one growing document per batch nor answers it in one response.
create table customer_import_errors (
  platform_id uuid not null references platforms (id),
  import_id uuid not null references customer_import_jobs (id),
  row_number integer not null,
  line integer not null,
  correlation_id text not null,
  code text not null,
  message text not null,
  details jsonb,
  primary key (platform_id, import_id, row_number)
);

-- Hosted verification links (POST /customers/{id}/kyc-link). The token is derived from the id
-- with a key only Corridor holds, so nothing here lets a reader of the database use a link.
create table kyc_links (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  customer_id uuid not null references customers (id),
  redirect_uri text,
  expires_at timestamptz not null,
  submitted_at timestamptz,
  created_at timestamptz not null
);
create index kyc_links_customer on kyc_links (platform_id, customer_id, id desc);

-- Contact verification state, for customers whose region requires it before KYC.
alter table customers add column email_verified_at timestamptz;
alter table customers add column phone_verified_at timestamptz;

-- Tax identifiers sealed at rest under a per-platform key derived from the master key; the
-- version says which key sealed each value, so a platform's key can be rotated.
alter table platforms add column identifier_key_version integer not null default 1;
alter table customers add column identifier_sealed text;
alter table customers add column identifier_key_version integer;
alter table beneficial_owners add column identifier_sealed text;
alter table beneficial_owners add column identifier_key_version integer;
alter table beneficial_owners alter column identifier drop not null;

-- A platform that performs KYC itself may set a customer's kycStatus/kybStatus.
alter table platform_configs add column platform_performs_kyc boolean not null default false;

-- Identifiers stored before sealing existed are sealed by a job (the key is not in the database).
insert into jobs (id, platform_id, kind, payload, status, attempts, max_attempts, run_at, locked_until, last_error, created_at, updated_at)
select gen_random_uuid(), null, 'identifiers.seal-plaintext', '{}'::jsonb, 'queued', 0, 8, now(), null, null, now(), now()
where exists (select 1 from customers where identifier is not null)
   or exists (select 1 from beneficial_owners where identifier is not null)
   or exists (select 1 from customers where profile -> 'businessInfo' ? 'taxId');
