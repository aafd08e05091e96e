-- A contact change (PATCH /customers e-mail or phone) refuses a contact that an active OTP
-- credential of another customer already carries (409 EMAIL_OTP_EMAIL_ALREADY_EXISTS, or
-- CONFLICT for a phone): this index answers that look-up without scanning the platform's credentials.
create index auth_credentials_otp_contact on auth_credentials (platform_id, type, lower(nickname))
  where revoked_at is null and type in ('EMAIL_OTP', 'SMS_OTP');
