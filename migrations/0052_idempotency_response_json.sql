-- A replay answers the stored response byte for byte. json keeps the text as stored, key order
-- included; jsonb reorders keys, which showed on routes that write their body as it is (external
-- accounts). The stored text is JSON.stringify's (platform/idempotency.ts); nothing queries into it.
-- Rows stored before keep jsonb's order. Rewrites the table under an exclusive lock: on a large
-- idempotency_keys table, expect writes that take keys to wait for it.
alter table idempotency_keys alter column response_body type json using response_body::json;
