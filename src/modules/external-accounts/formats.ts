import { createHash, ECDH } from 'node:crypto';
import { base58, bech32, bech32m, createBase58check } from '@scure/base';
import abaValidator from 'abavalidator';
import { validate as isBitcoinAddress, Network as BitcoinNetwork } from 'bitcoin-address-validation';
import type bolt11Module from 'bolt11';
import { clabe } from 'clabe-validator';
import { cnpj, cpf } from 'cpf-cnpj-validator';
import type phoneLib from 'google-libphonenumber';
import { extractIBAN, isSEPACountry, isValidBIC, isValidIBAN } from 'ibantools';
import isValidDomain from 'is-valid-domain';
import { loadOnFirstUse } from '../../platform/load-on-first-use.js';

/**
 * The real rule of each account field that has one, each by a well-kept library where one
 * exists. Every check answers the problem in words, or undefined when the value is good. The
 * schema's pattern and length run first; these see only values that passed them.
 */
export type Problem = string | undefined;

/** Which chain networks an address may belong to: production platforms pay on mainnet only. */
export type NetworkScope = 'mainnet' | 'any';

const sha256 = (bytes: Uint8Array): Uint8Array => createHash('sha256').update(bytes).digest();
export const base58check = createBase58check(sha256);

export function checkIban(value: string, countries?: readonly string[] | 'SEPA'): Problem {
  if (!isValidIBAN(value)) return 'is not a valid IBAN (its check digits or national format are wrong)';
  const country = extractIBAN(value).countryCode ?? value.slice(0, 2);
  if (countries === 'SEPA' && !isSEPACountry(country)) return `is an IBAN of ${country}, which is not in the SEPA area`;
  if (Array.isArray(countries) && !countries.includes(country)) return `must be an IBAN of ${countries.join(' or ')}`;
  return undefined;
}

/** A BIC that exists in form (ISO 9362) and, when `country` is given, belongs to that country. */
export function checkBic(value: string, country?: string): Problem {
  if (!isValidBIC(value)) return 'is not a valid SWIFT/BIC code';
  if (country && value.slice(4, 6) !== country) return `must be the BIC of a bank in ${country} (it names ${value.slice(4, 6)})`;
  return undefined;
}

/**
 * SEPA territories that use another country's IBANs while their banks' BICs name the territory:
 * within a group, a BIC of one country goes with an IBAN of another. France with its overseas
 * departments and collectivities in SEPA (French Guiana, Guadeloupe, Martinique, Réunion, Mayotte,
 * Saint Barthélemy, Saint Martin, Saint Pierre and Miquelon: FR IBANs); Finland with Åland (FI
 * IBANs); the United Kingdom with Guernsey, Jersey and the Isle of Man (GB IBANs).
 */
export const SEPA_TERRITORY_GROUPS: readonly (readonly string[])[] = [
  ['FR', 'GF', 'GP', 'MQ', 'RE', 'YT', 'BL', 'MF', 'PM'],
  ['FI', 'AX'],
  ['GB', 'GG', 'JE', 'IM'],
];

/** Whether a bank in `bicCountry` can hold an IBAN of `ibanCountry`: the same country, or one SEPA territory group. */
export function bicCountryHoldsIban(bicCountry: string, ibanCountry: string): boolean {
  return bicCountry === ibanCountry || SEPA_TERRITORY_GROUPS.some((group) => group.includes(bicCountry) && group.includes(ibanCountry));
}

/**
 * A BIC that exists in form and belongs to a bank of the IBAN's country (or of a SEPA territory
 * that uses its IBANs). Without a valid IBAN only the form is checked: the IBAN's own problem is
 * reported on it.
 */
export function checkBicOfIban(value: string, iban: unknown): Problem {
  const form = checkBic(value);
  if (form || typeof iban !== 'string' || !isValidIBAN(iban)) return form;
  const ibanCountry = iban.slice(0, 2);
  const bicCountry = value.slice(4, 6);
  return bicCountryHoldsIban(bicCountry, ibanCountry) ? undefined : `must be the BIC of a bank in ${ibanCountry}, the IBAN's country (it names ${bicCountry})`;
}

/** ABA routing number: its 3-7-1 weighted checksum. */
export function checkRoutingNumber(value: string): Problem {
  return abaValidator.validate(value) ? undefined : 'is not a valid ABA routing number (checksum)';
}

/** CLABE: control digit, and a bank and plaza code that exist. */
export function checkClabe(value: string): Problem {
  const result = clabe.validate(value);
  return result.ok ? undefined : `is not a valid CLABE (${result.message.toLowerCase()})`;
}

/** Brazilian CPF (11 digits) or CNPJ (14 characters), by their check digits. */
export function checkCpfOrCnpj(value: string): Problem {
  if (value.length === 11) return cpf.isValid(value) ? undefined : 'is not a valid CPF (check digits)';
  if (value.length === 14) return cnpj.isValid(value) ? undefined : 'is not a valid CNPJ (check digits)';
  return 'must be a CPF (11 digits) or a CNPJ (14 digits)';
}

// libphonenumber (its metadata), viem and bolt11 load on the first check that needs them: start-up stays fast.
const phoneLibrary = loadOnFirstUse<typeof phoneLib>('google-libphonenumber');
let phoneUtil: { phones: phoneLib.PhoneNumberUtil; mobileTypes: Set<phoneLib.PhoneNumberType> } | undefined;
function phoneNumbers() {
  if (!phoneUtil) {
    const { PhoneNumberUtil, PhoneNumberType } = phoneLibrary();
    phoneUtil = { phones: PhoneNumberUtil.getInstance(), mobileTypes: new Set([PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE_OR_MOBILE]) };
  }
  return phoneUtil;
}
const viemUtils = loadOnFirstUse<typeof import('viem/utils')>('viem/utils');
const bolt11 = loadOnFirstUse<typeof bolt11Module>('bolt11');

/**
 * A number that exists in the numbering plan of `region` (libphonenumber's metadata), and for
 * mobile money one that can be a mobile line.
 */
export function checkPhone(value: string, region: string, options: { mobile?: boolean } = {}): Problem {
  const { phones, mobileTypes } = phoneNumbers();
  let parsed: phoneLib.PhoneNumber;
  try {
    parsed = phones.parse(value);
  } catch {
    return 'is not a phone number in international format';
  }
  if (!phones.isValidNumberForRegion(parsed, region)) return `is not a valid phone number of ${region}`;
  if (options.mobile && !mobileTypes.has(phones.getNumberType(parsed))) return `is not a mobile number of ${region}`;
  return undefined;
}

/**
 * A PIX phone key as the PIX directory (DICT) registers it: +55 and the digits. libphonenumber
 * alone also takes "tel:" URIs, spaces, extensions and full-width digits, which the rail cannot
 * use and which identity.ts (comparing keys as given) would count as another key.
 */
const PIX_PHONE_KEY = /^\+55[0-9]{10,11}$/;
/** UUID form of a PIX random key (EVP), as the Central Bank issues it. */
const PIX_RANDOM_KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/**
 * `local@domain`, the domain holding a dot that is neither its first nor its last character.
 * Written as "a first character, then no dot until the first one after it" so that only one way
 * to match exists: `[^\s@]+\.[^\s@]+` tried every dot and backtracked quadratically.
 */
const EMAIL = /^[^\s@]{1,64}@[^\s@][^\s@.]*\.[^\s@]+$/;

/** A PIX key of the declared type: CPF/CNPJ by check digits, a Brazilian mobile, an e-mail, or an EVP UUID. */
export function checkPixKey(value: string, keyType: unknown): Problem {
  switch (keyType) {
    case 'CPF':
      return /^\d{11}$/.test(value) && cpf.isValid(value) ? undefined : 'is not a valid CPF key (11 digits with valid check digits)';
    case 'CNPJ':
      // Since July 2026 a CNPJ may be alphanumeric: twelve digits or capital letters, then two check digits.
      return /^[0-9A-Z]{12}\d{2}$/.test(value) && cnpj.isValid(value) ? undefined : 'is not a valid CNPJ key (12 digits or capital letters and 2 check digits)';
    case 'PHONE':
      return PIX_PHONE_KEY.test(value) ? checkPhone(value, 'BR', { mobile: true }) : 'is not a PIX phone key (+55 and the digits of a Brazilian mobile, nothing else)';
    case 'EMAIL':
      return EMAIL.test(value) && value.length <= 77 ? undefined : 'is not an e-mail address';
    case 'RANDOM':
      return PIX_RANDOM_KEY.test(value) ? undefined : 'is not a PIX random key (a UUID v4)';
    default:
      return undefined; // pixKeyType is reported by its own schema error
  }
}

/**
 * EVM address: 20 bytes of hex. EIP-55 puts its checksum in the letter case, so an address all in
 * lower or all in upper case carries none and is taken as it is (as ethers' getAddress does);
 * mixed case must carry a valid checksum.
 */
export function checkEvmAddress(value: string): Problem {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) return 'is not an EVM address (0x and 40 hex digits)';
  const hex = value.slice(2);
  const checksummed = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  return viemUtils().isAddress(value, { strict: checksummed }) ? undefined : 'has an invalid EIP-55 checksum (check the letter case)';
}

/** Solana address: base58 of a 32-byte public key (on or off the curve: program-derived vaults receive too). */
export function checkSolanaAddress(value: string): Problem {
  try {
    return base58.decode(value).length === 32 ? undefined : 'is not a Solana address (base58 of 32 bytes)';
  } catch {
    return 'is not a Solana address (base58 of 32 bytes)';
  }
}

/** Tron address: base58check of 21 bytes starting 0x41 (the `T…` form). */
export function checkTronAddress(value: string): Problem {
  try {
    const bytes = base58check.decode(value);
    return bytes.length === 21 && bytes[0] === 0x41 ? undefined : 'is not a Tron address (21 bytes with prefix 0x41)';
  } catch {
    return 'is not a Tron address (its base58check checksum fails)';
  }
}

/** Spark human-readable prefixes: current and legacy forms per network. */
const SPARK_PREFIXES: Record<string, 'mainnet' | 'test'> = {
  spark: 'mainnet', sp: 'mainnet',
  sparkt: 'test', spt: 'test', sparkrt: 'test', sprt: 'test', sparks: 'test', sps: 'test', sparkl: 'test', spl: 'test',
};

/**
 * The identity public key (33-byte compressed secp256k1) a Spark address encodes: bech32m of
 * protobuf field 1 (0x0a, length 0x21). Throws on anything else, including Spark invoices.
 */
export function sparkIdentityKey(address: string): { publicKey: Buffer; network: 'mainnet' | 'test'; prefix: string } {
  const decoded = bech32m.decode(address as `${string}1${string}`, 200);
  const network = SPARK_PREFIXES[decoded.prefix];
  if (!network) throw new Error(`unknown Spark prefix ${decoded.prefix}`);
  const payload = Buffer.from(bech32m.fromWords(decoded.words));
  if (payload.length !== 35 || payload[0] !== 0x0a || payload[1] !== 0x21) throw new Error('not a Spark address payload');
  const publicKey = payload.subarray(2);
  // Throws unless the key is a point on secp256k1.
  ECDH.convertKey(publicKey, 'secp256k1', undefined, undefined, 'uncompressed');
  return { publicKey, network, prefix: decoded.prefix };
}

export function checkSparkAddress(value: string, scope: NetworkScope): Problem {
  let network: 'mainnet' | 'test';
  try {
    network = sparkIdentityKey(value).network;
  } catch {
    return 'is not a Spark address (bech32m of an identity public key)';
  }
  return scope === 'mainnet' && network !== 'mainnet' ? 'is a Spark test-network address; production platforms pay on mainnet' : undefined;
}

const BOLT11_MAINNET = 'bc';

/**
 * A BOLT11 invoice: bech32 with a valid signature by its payee (bolt11 recovers the node key),
 * not expired, on mainnet for production, and any on-chain fallback address valid for its network.
 */
export function checkBolt11(value: string, scope: NetworkScope, now: Date): Problem {
  let invoice: ReturnType<typeof bolt11Module.decode>;
  try {
    invoice = bolt11().decode(value);
  } catch {
    return 'is not a valid BOLT11 invoice';
  }
  if (!invoice.payeeNodeKey) return 'is not a valid BOLT11 invoice (no payee signature)';
  const network = invoice.network?.bech32;
  if (scope === 'mainnet' && network !== BOLT11_MAINNET) return 'is a test-network invoice; production platforms pay on mainnet';
  if (invoice.timeExpireDate !== undefined && invoice.timeExpireDate * 1000 <= now.getTime()) return 'has expired';
  const fallback = invoice.tags.find((t) => t.tagName === 'fallback_address')?.data as { address?: string } | undefined;
  if (fallback?.address) {
    const expected = network === BOLT11_MAINNET ? BitcoinNetwork.mainnet : network === 'bcrt' ? BitcoinNetwork.regtest : BitcoinNetwork.testnet;
    if (!isBitcoinAddress(fallback.address, expected)) return 'carries an on-chain fallback address that is not valid for its network';
  }
  return undefined;
}

const BECH32_CHARSET = /^[qpzry9x8gf2tvdw0s3jn54khce6mua7l]+$/;

/** Reads a BOLT12 BigSize integer at `offset`; undefined when the bytes end first. */
function readBigSize(bytes: Uint8Array, offset: number): { value: number; next: number } | undefined {
  const first = bytes[offset];
  if (first === undefined) return undefined;
  const width = first < 0xfd ? 0 : first === 0xfd ? 2 : first === 0xfe ? 4 : 8;
  if (offset + 1 + width > bytes.length) return undefined;
  let value = width === 0 ? first : 0;
  for (let i = 0; i < width; i++) value = value * 256 + bytes[offset + 1 + i]!;
  return { value, next: offset + 1 + width };
}

/**
 * A BOLT12 offer (`lno1…`): bech32 characters without checksum (`+` joins may split it), whose
 * bytes are a TLV stream of strictly ascending types that names an issuer key (22) or blinded
 * paths (16), as BOLT12 requires of an offer a payer can use.
 */
export function checkBolt12(value: string): Problem {
  const joined = value.replace(/\+\s*/g, '').toLowerCase();
  if (!joined.startsWith('lno1') || !BECH32_CHARSET.test(joined.slice(4))) return 'is not a BOLT12 offer (lno1…)';
  const words = [...joined.slice(4)].map((c) => 'qpzry9x8gf2tvdw0s3jn54khce6mua7l'.indexOf(c));
  let bytes: Uint8Array;
  try {
    bytes = bech32.fromWordsUnsafe(words) ?? new Uint8Array();
  } catch {
    return 'is not a BOLT12 offer (bad padding)';
  }
  const types: number[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const type = readBigSize(bytes, offset);
    const length = type && readBigSize(bytes, type.next);
    if (!type || !length || length.next + length.value > bytes.length) return 'is not a BOLT12 offer (truncated record)';
    if (types.length && type.value <= types[types.length - 1]!) return 'is not a BOLT12 offer (records out of order)';
    types.push(type.value);
    offset = length.next + length.value;
  }
  return types.includes(22) || types.includes(16) ? undefined : 'is not a usable BOLT12 offer (no issuer key or path)';
}

/** LUD-16 lightning address: a user name of a–z, 0–9, `-_.+` at a real domain name. */
export function checkLightningAddress(value: string): Problem {
  const at = value.lastIndexOf('@');
  const user = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (at < 1 || !/^[a-z0-9\-_.+]+$/.test(user)) return 'is not a lightning address (user@domain, user in a–z 0–9 - _ . +)';
  if (!isValidDomain(domain)) return 'is not a lightning address (the domain is not valid)';
  return undefined;
}
