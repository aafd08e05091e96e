-- One live external account per owner and destination (unique index external_accounts_identity_live
-- on identity_sha256, migration 0011). The hash now takes each identifying value in its canonical
-- form (src/modules/external-accounts/identity.ts), so `ANA@EXAMPLE.COM` and `ana@example.com` are
-- one PIX key, `M-Pesa` and `mpesa` one provider, `sp1…` and `spark1…` of one identity key one Spark
-- wallet. This recomputes, by the same rules, the hash of the accounts created before:
--
--   sha256 of the JSON array [accountType, value, …] of the variant's identifying fields in order
--   (null for an absent one), each value canonical: lightningAddress, invoice, vpa, and an EMAIL or
--   RANDOM pixKey in lower case; bolt12 in lower case without its `+` joins; provider and bankName
--   as their lower-case letters and digits; a swiftCode without a branch `XXX`; a Spark address as
--   `<current network prefix>:<identity key in hex>`.
--
-- Safe on a table with data, and nothing is deleted:
-- - only the account types whose identifying fields have a canonical form are read; a hash that
--   does not change is not written;
-- - an account with an identifying value outside ASCII keeps its hash (SQL's lower() and the
--   application's Unicode case mapping could disagree there);
-- - where live accounts of one owner turn out to name one destination (created before this rule),
--   the account already holding the canonical hash, else the oldest, takes it and the others keep
--   theirs: the unique index holds throughout, and those accounts stay as they are.
with identity_fields (account_type, names) as (
  values
    ('BDT_ACCOUNT', array['accountNumber', 'bankName', 'phoneNumber']),
    ('BRL_ACCOUNT', array['pixKeyType', 'pixKey']),
    ('BWP_ACCOUNT', array['phoneNumber', 'provider']),
    ('CNY_ACCOUNT', array['accountNumber', 'bankName', 'phoneNumber']),
    ('COP_ACCOUNT', array['accountNumber', 'bankAccountType', 'bankName', 'phoneNumber']),
    ('EGP_ACCOUNT', array['bankName', 'iban', 'phoneNumber']),
    ('GHS_ACCOUNT', array['accountNumber', 'bankName', 'phoneNumber']),
    ('GTQ_ACCOUNT', array['bankName', 'accountNumber']),
    ('HKD_ACCOUNT', array['swiftCode', 'accountNumber']),
    ('IDR_ACCOUNT', array['swiftCode', 'accountNumber']),
    ('INR_ACCOUNT', array['vpa', 'ifsc', 'accountNumber']),
    ('JMD_ACCOUNT', array['bankName', 'branchCode', 'accountNumber']),
    ('KES_ACCOUNT', array['phoneNumber', 'provider']),
    ('MWK_ACCOUNT', array['phoneNumber', 'provider']),
    ('MYR_ACCOUNT', array['swiftCode', 'accountNumber']),
    ('NGN_ACCOUNT', array['accountNumber', 'bankName']),
    ('PHP_ACCOUNT', array['bankName', 'accountNumber']),
    ('PKR_ACCOUNT', array['accountNumber', 'bankName', 'phoneNumber']),
    ('RWF_ACCOUNT', array['phoneNumber', 'provider']),
    ('SGD_ACCOUNT', array['swiftCode', 'accountNumber']),
    ('THB_ACCOUNT', array['swiftCode', 'accountNumber']),
    ('TZS_ACCOUNT', array['phoneNumber', 'provider']),
    ('UGX_ACCOUNT', array['phoneNumber', 'provider']),
    ('VND_ACCOUNT', array['swiftCode', 'accountNumber']),
    ('XAF_ACCOUNT', array['phoneNumber', 'provider']),
    ('XOF_ACCOUNT', array['phoneNumber', 'provider']),
    ('ZAR_ACCOUNT', array['accountNumber', 'bankName']),
    ('ZMW_ACCOUNT', array['phoneNumber', 'provider']),
    ('SWIFT_ACCOUNT', array['swiftCode', 'iban', 'accountNumber']),
    ('SPARK_WALLET', array['address']),
    ('LIGHTNING', array['invoice', 'bolt12', 'lightningAddress'])
),
valued as (
  select a.id, a.platform_id, coalesce(a.customer_id, '00000000-0000-0000-0000-000000000000'::uuid) as owner,
         a.deleted_at is null as live, a.created_at, a.identity_sha256 as old_hash, a.account_type, f.ord, f.name,
         case when jsonb_typeof(a.account_info -> f.name) = 'string' then a.account_info ->> f.name end as raw,
         a.account_info ->> 'pixKeyType' as pix_key_type
    from external_accounts a
    join identity_fields i on i.account_type = a.account_type
    cross join lateral unnest(i.names) with ordinality as f(name, ord)
),
canonical as (
  select v.*,
         case
           when v.raw is null then null
           when v.name in ('lightningAddress', 'invoice', 'vpa') then lower(v.raw)
           when v.name = 'bolt12' then lower(regexp_replace(v.raw, '\+\s*', '', 'g'))
           when v.name = 'pixKey' and v.pix_key_type in ('EMAIL', 'RANDOM') then lower(v.raw)
           when v.name in ('provider', 'bankName') then regexp_replace(lower(v.raw), '[^a-z0-9]+', '', 'g')
           when v.name = 'swiftCode' and v.raw ~ '^[A-Z0-9]{8}XXX$' then left(v.raw, 8)
           when v.name = 'address' and v.account_type = 'SPARK_WALLET' then (
             -- bech32m: the prefix, `1`, 5-bit words, 6 checksum characters. The payload's 35
             -- bytes are 0x0a 0x21 and the 33-byte identity key.
             select case s.prefix when 'sp' then 'spark' when 'spt' then 'sparkt' when 'sprt' then 'sparkrt'
                                  when 'sps' then 'sparks' when 'spl' then 'sparkl' else s.prefix end
                    || ':' ||
                    (select string_agg(lpad(to_hex(substring(w.bits from 17 + n * 8 for 8)::bit(8)::int), 2, '0'), '' order by n)
                       from generate_series(0, 32) as n,
                            (select string_agg((strpos('qpzry9x8gf2tvdw0s3jn54khce6mua7l', t.c) - 1)::bit(5)::text, '' order by t.i) as bits
                               from regexp_split_to_table(left(s.words, -6), '') with ordinality as t(c, i)) as w)
               from (select split_part(lower(v.raw), '1', 1) as prefix,
                            substr(lower(v.raw), strpos(v.raw, '1') + 1) as words) as s
           )
           else v.raw
         end as value
    from valued v
),
hashed as (
  select id, platform_id, owner, live, created_at, old_hash,
         bool_and(raw is null or octet_length(raw) = char_length(raw)) as comparable,
         encode(sha256(convert_to(
           '[' || to_json(account_type)::text || string_agg(',' || coalesce(to_json(value)::text, 'null'), '' order by ord) || ']',
           'UTF8')), 'hex') as new_hash
    from canonical
   group by id, platform_id, owner, live, created_at, old_hash, account_type
)
update external_accounts e
   set identity_sha256 = h.new_hash
  from hashed h
 where e.id = h.id
   and h.comparable
   and h.new_hash <> h.old_hash
   and (not h.live or (
     -- No live account of the owner holds the canonical hash already …
     not exists (
       select 1 from external_accounts o
        where o.platform_id = h.platform_id
          and coalesce(o.customer_id, '00000000-0000-0000-0000-000000000000'::uuid) = h.owner
          and o.deleted_at is null
          and o.identity_sha256 = h.new_hash)
     -- … nor takes it here, being older.
     and not exists (
       select 1 from hashed o
        where o.platform_id = h.platform_id and o.owner = h.owner and o.live and o.comparable
          and o.new_hash = h.new_hash and o.new_hash <> o.old_hash
          and (o.created_at, o.id) < (h.created_at, h.id))));
