-- Spec §2.4 rule 4: an OIDC identity (iss, aud, sub) is at most one active OAUTH credential of an
-- account, as a WebAuthn credential id is one PASSKEY credential (auth_credentials_passkey_once).
-- Before this index two concurrent adds of one identity could both succeed. Where an account holds
-- an identity more than once, its oldest credential stays and the later ones are revoked, with
-- their sessions (as DELETE /auth/credentials would): the identity still logs in, through the
-- oldest one; an account keeps at least that credential.
with duplicates as (
  select id
    from (select id, row_number() over (partition by account_id, details ->> 'iss', details ->> 'aud', details ->> 'sub' order by created_at, id) as n
            from auth_credentials
           where type = 'OAUTH' and revoked_at is null) ranked
   where n > 1
)
update auth_sessions
   set revoked_at = now(), updated_at = now()
 where revoked_at is null and credential_id in (select id from duplicates);

with duplicates as (
  select id
    from (select id, row_number() over (partition by account_id, details ->> 'iss', details ->> 'aud', details ->> 'sub' order by created_at, id) as n
            from auth_credentials
           where type = 'OAUTH' and revoked_at is null) ranked
   where n > 1
)
update auth_credentials
   set revoked_at = now(), updated_at = now()
 where id in (select id from duplicates);

create unique index auth_credentials_oauth_identity
  on auth_credentials (account_id, (details ->> 'iss'), (details ->> 'aud'), (details ->> 'sub'))
  where type = 'OAUTH' and revoked_at is null;

-- A known issuer's keys always come from its own published JWKS (Google, Apple:
-- platform/oidc-issuers.ts); PATCH /config now refuses a jwksUri on one. One stored before is
-- dropped, so the config shows what is in force (the verifier ignores it anyway) and a platform
-- that sends its config back unchanged is not refused for it.
update platform_configs c
   set embedded_wallet_config = jsonb_set(
         c.embedded_wallet_config,
         '{oidcIssuers}',
         (select jsonb_agg(case when e ->> 'issuer' in ('https://accounts.google.com', 'accounts.google.com', 'https://appleid.apple.com') then e - 'jwksUri' else e end order by i)
            from jsonb_array_elements(c.embedded_wallet_config -> 'oidcIssuers') with ordinality as t (e, i)))
 where jsonb_typeof(c.embedded_wallet_config -> 'oidcIssuers') = 'array'
   and exists (select 1
                 from jsonb_array_elements(c.embedded_wallet_config -> 'oidcIssuers') as k (e)
                where k.e ->> 'issuer' in ('https://accounts.google.com', 'accounts.google.com', 'https://appleid.apple.com')
                  and k.e ? 'jwksUri');
