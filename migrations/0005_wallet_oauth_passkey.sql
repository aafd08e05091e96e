-- OIDC tokens accepted once: a token seen before is refused (spec §4.4, "fresh for each call").
-- Kept until the token expires; after that its `exp` check refuses it anyway.
create table oidc_tokens_used (
  token_sha256 text primary key check (token_sha256 ~ '^[0-9a-f]{64}$'),
  platform_id uuid not null references platforms (id),
  expires_at timestamptz not null,
  used_at timestamptz not null
);
create index oidc_tokens_used_expiry on oidc_tokens_used (expires_at);
