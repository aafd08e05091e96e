-- Embedded wallets: the wallet secret of each EMBEDDED_WALLET account, sealed under the master key.
create table wallets (
  account_id uuid primary key references internal_accounts (id) on delete cascade,
  platform_id uuid not null references platforms (id),
  sealed_secret text not null,
  created_at timestamptz not null
);
alter table internal_accounts add column private_enabled boolean;

-- Credentials that authenticate a wallet's end user. Revoked ones are kept (revoked_at set) so
-- sessions and audits can still name them.
create table auth_credentials (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  account_id uuid not null references internal_accounts (id) on delete cascade,
  type text not null check (type in ('EMAIL_OTP', 'SMS_OTP', 'PASSKEY', 'OAUTH')),
  nickname text not null,
  -- PASSKEY: the WebAuthn credential id (base64url).
  webauthn_id text,
  -- Type-specific facts (OIDC identity, passkey public key and counter, …).
  details jsonb not null default '{}',
  -- First time the credential produced a session: from then on, adding credentials needs a signature.
  verified_at timestamptz,
  otp_failures integer not null default 0,
  otp_throttled_until timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  revoked_at timestamptz
);
create unique index auth_credentials_one_email_otp on auth_credentials (account_id) where type = 'EMAIL_OTP' and revoked_at is null;
create unique index auth_credentials_one_sms_otp on auth_credentials (account_id) where type = 'SMS_OTP' and revoked_at is null;
create unique index auth_credentials_passkey_once on auth_credentials (account_id, webauthn_id) where type = 'PASSKEY' and revoked_at is null;
create index auth_credentials_account on auth_credentials (account_id, id);

-- Sessions hold only the public half of their signing key.
create table auth_sessions (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  account_id uuid not null references internal_accounts (id) on delete cascade,
  credential_id uuid not null references auth_credentials (id),
  public_key text not null check (public_key ~ '^0[23][0-9a-f]{64}$'),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index auth_sessions_account_key on auth_sessions (account_id, public_key);
create index auth_sessions_credential on auth_sessions (credential_id) where revoked_at is null;

-- One row per OTP issued. The code is kept only as an HMAC; the target key only sealed.
create table otp_challenges (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  credential_id uuid not null references auth_credentials (id) on delete cascade,
  code_hash text not null,
  sealed_target_key text not null,
  target_bundle text not null,
  expires_at timestamptz not null,
  -- When the message provider has settled the delivery (sandbox may force a delay).
  settle_at timestamptz not null,
  -- When a challenge call returned the bundle; until then further calls answer for this one.
  answered_at timestamptz,
  consumed_at timestamptz,
  created_at timestamptz not null
);
create index otp_challenges_credential on otp_challenges (credential_id, created_at desc);

-- The signed-retry pattern: each 202 challenge, and later the operation it authorises.
create table signed_requests (
  id uuid primary key,
  platform_id uuid not null references platforms (id),
  account_id uuid not null references internal_accounts (id) on delete cascade,
  operation text not null,
  target_id text not null,
  body_hash text not null check (body_hash ~ '^[0-9a-f]{64}$'),
  payload_to_sign text not null,
  -- Who may sign: {"kind":"key","publicKey":…} or {"kind":"session","excludeCredentialId"?:…}.
  signer jsonb not null,
  -- What the operation needs at settle time, fixed when the challenge was issued.
  context jsonb not null,
  status text not null check (status in ('PENDING', 'PROCESSING', 'DONE')),
  stamp text,
  settle_at timestamptz,
  -- {statusCode, body}; body left out for outcomes that must never be stored (wallet export).
  outcome jsonb,
  expires_at timestamptz not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check ((status = 'PENDING') = (stamp is null)),
  check ((status = 'DONE') = (outcome is not null))
);
create index signed_requests_account on signed_requests (account_id, created_at);
