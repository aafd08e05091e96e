import { createHash } from 'node:crypto';
import { sparkIdentityKey } from './formats.js';
import type { CheckedAccount } from './validation.js';

/**
 * Which destination an account names, as one hash: two live accounts of one owner may not share
 * it (unique index `external_accounts_identity_live`, 409 CONFLICT). Each identifying value is
 * taken in its canonical form first, so spellings of one destination are one destination:
 *
 * | Value | Canonical form |
 * | --- | --- |
 * | EVM `address` | lower case (EIP-55 letter case is a checksum, not part of the address) |
 * | Spark `address` | network (current prefix: `sp1…` is `spark1…`) and the identity key it encodes |
 * | `lightningAddress`, `invoice` (BOLT11), `vpa` | lower case (bech32 and DNS names are case-insensitive) |
 * | `bolt12` | lower case, without the `+` joins that may split it |
 * | PIX `pixKey` of type EMAIL or RANDOM | lower case |
 * | `provider`, `bankName` | letters and digits only, lower case ("M-Pesa" = "MPESA" = "mpesa") |
 * | `swiftCode` | without the branch `XXX` (the primary office: `DEUTDEFFXXX` = `DEUTDEFF`) |
 *
 * Everything else (account numbers, phone numbers in E.164, IBANs, which are valid only in
 * capitals) is compared as given. Migration 0037 recomputed the stored hashes of accounts
 * created before these rules with the same rules, in SQL: a change here needs a migration too.
 */
export function identityOf(checked: CheckedAccount): string {
  const { variant, info } = checked;
  const values = variant.identity.map((name) => {
    const value = info[name];
    return typeof value === 'string' ? canonicalValue(variant.accountType, name, value, info) : null;
  });
  return createHash('sha256').update(JSON.stringify([variant.accountType, ...values])).digest('hex');
}

/** Spark's legacy address prefixes and the current ones they stand for (one network each). */
const SPARK_CURRENT_PREFIX: Record<string, string> = { sp: 'spark', spt: 'sparkt', sprt: 'sparkrt', sps: 'sparks', spl: 'sparkl' };

/** Free text that names a provider or bank: letters and digits, lower case. */
export function textKey(value: string): string {
  return value.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
}

export function canonicalValue(accountType: string, name: string, value: string, info: Record<string, unknown>): string {
  switch (name) {
    case 'address':
      if (/^0x/i.test(value)) return value.toLowerCase();
      if (accountType === 'SPARK_WALLET') {
        const { prefix, publicKey } = sparkIdentityKey(value);
        return `${SPARK_CURRENT_PREFIX[prefix] ?? prefix}:${publicKey.toString('hex')}`;
      }
      return value;
    case 'lightningAddress':
    case 'invoice':
    case 'vpa':
      return value.toLowerCase();
    case 'bolt12':
      return value.replace(/\+\s*/g, '').toLowerCase();
    case 'pixKey':
      return info.pixKeyType === 'EMAIL' || info.pixKeyType === 'RANDOM' ? value.toLowerCase() : value;
    case 'provider':
    case 'bankName':
      return textKey(value);
    case 'swiftCode':
      return value.length === 11 && value.endsWith('XXX') ? value.slice(0, 8) : value;
    default:
      return value;
  }
}
