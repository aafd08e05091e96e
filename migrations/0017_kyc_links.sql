-- Hosted KYC/KYB links (POST /customers/{customerId}/kyc-link; the table is from 0008, unused
-- until now, so it holds no rows). A link is found by the SHA-256 of its token: the token itself
-- is an HMAC of the id under a key derived from the master key and is never stored. A link is
-- bound to its platform's environment (sandbox screening and triggers) and, once the customer
-- submits, to the verification it started.
alter table kyc_links add column environment text not null check (environment in ('sandbox', 'production'));
alter table kyc_links add column token_sha256 text not null unique check (token_sha256 ~ '^[0-9a-f]{64}$');
alter table kyc_links add column verification_id uuid references verifications (id);
alter table kyc_links add constraint kyc_links_submission check ((submitted_at is null) = (verification_id is null));
