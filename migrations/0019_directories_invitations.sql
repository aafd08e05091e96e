-- Directories (GET /vasps, /uma-providers, /discoveries): reference data shared by every
-- platform, loaded from a versioned JSON file (modules/directories) and replaced as a whole.
-- One row says which version is loaded; a load replaces the rows only when it raises it.
create table directory_versions (
  singleton boolean primary key default true check (singleton),
  version integer not null check (version >= 0),
  published_on text not null,
  -- Where the loaded file came from: 'shipped' or the path given to `corridor directories load`.
  origin text not null,
  loaded_at timestamptz not null
);
insert into directory_versions (version, published_on, origin, loaded_at) values (0, '', 'none', now());

-- sort_key = lower(name): lists page by it (keyset, byte order), so it is unique.
create table directory_vasps (
  sort_key text primary key,
  vasp_name text not null,
  url text
);

create table directory_uma_providers (
  sort_key text primary key,
  name text not null,
  domain text not null unique,
  logo_url text,
  lei text,
  -- JSON arrays of ISO 3166-1 alpha-2 and currency codes (filters use @>).
  supported_regions jsonb not null,
  supported_currencies jsonb not null
);

create table directory_discoveries (
  country text not null,
  currency text not null,
  bank_name text not null,
  display_name text not null,
  primary key (country, currency, bank_name)
);
create index directory_discoveries_currency on directory_discoveries (currency, country, bank_name);

-- UMA invitations. Codes are global (any platform may read or claim one by its code), so the
-- code has its own unique index beside the platform-led key.
create table invitations (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  code text not null check (code ~ '^[0-9a-z]{10}$'),
  inviter_customer_id uuid not null references customers (id),
  inviter_uma text not null,
  first_name text,
  amount_to_send bigint check (amount_to_send > 0),
  amount_currency text,
  url text not null,
  -- EXPIRED is not stored: a PENDING invitation past expires_at reads as EXPIRED.
  status text not null check (status in ('PENDING', 'CLAIMED', 'CANCELLED')),
  expires_at timestamptz,
  invitee_uma text,
  claimed_by_platform_id uuid references platforms (id),
  claimed_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (platform_id, id),
  check ((status = 'CLAIMED') = (claimed_at is not null and invitee_uma is not null and claimed_by_platform_id is not null)),
  check ((amount_to_send is null) = (amount_currency is null))
);
create unique index invitations_code on invitations (code);

-- Receiver lookups (GET /receiver/...): what was offered, kept so a later quote can name it by lookupId.
create table receiver_lookups (
  platform_id uuid not null references platforms (id),
  id uuid not null,
  external_account_id uuid references external_accounts (id),
  sender_customer_id uuid references customers (id),
  -- The response as given (supported currencies, rates, limits).
  response jsonb not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (platform_id, id)
);
