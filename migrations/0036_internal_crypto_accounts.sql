-- Accounts in a crypto currency are INTERNAL_CRYPTO (upstream's InternalAccountType), not
-- INTERNAL_FIAT: internal-accounts/service.ts opened every non-wallet account as INTERNAL_FIAT.
-- Existing ones are re-typed here, customers' and platforms' alike; embedded wallets stay.
-- The currencies are the crypto ones of src/platform/currencies.ts (CRYPTO_CURRENCY_CODES).
--
-- Safe with data: one UPDATE of the crypto rows only (no table rewrite, no lock beyond those
-- rows); the count triggers of 0034 fire on INSERT and DELETE, not here; ids, balances (the
-- ledger keys on the account id), funding references and instructions do not change, so
-- deposits keep matching. `updated_at` is left: the account did not change, only its label.
-- An owner that somehow already has an INTERNAL_CRYPTO account in the same currency keeps its
-- INTERNAL_FIAT one as it is, rather than this migration failing on the unique indexes of
-- 0002 (customer_id, type, currency) / (platform_id, type, currency).
update internal_accounts a
set type = 'INTERNAL_CRYPTO'
where a.type = 'INTERNAL_FIAT'
  and a.currency in ('BTC', 'USDC', 'USDT')
  and not exists (
    select 1 from internal_accounts o
    where o.type = 'INTERNAL_CRYPTO'
      and o.currency = a.currency
      and o.platform_id = a.platform_id
      and o.customer_id is not distinct from a.customer_id
  );
