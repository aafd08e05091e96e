-- A platform that runs its own KYC/KYB sets customers' kycStatus/kybStatus at creation
-- (PATCH /customers/settings {platformKyc: true}); others may not (issue 12 B13).
alter table customer_settings add column platform_kyc boolean not null default false;
