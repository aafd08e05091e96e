import { createECDH, createHash, generateKeyPairSync, randomBytes, sign as signEd25519 } from 'node:crypto';
import { base58, bech32, bech32m, createBase58check } from '@scure/base';
import bitcoinMessage from 'bitcoinjs-message';
import bolt11 from 'bolt11';
import { cpf } from 'cpf-cnpj-validator';
import phoneLib from 'google-libphonenumber';
import { concat, keccak256, stringToBytes } from 'viem/utils';
import { generatePrivateKey, privateKeyToAccount, sign as signHash } from 'viem/accounts';

/**
 * Real key pairs and real account details for the external-account tests: every wallet address
 * is derived from a key the test holds, so ownership proofs are made the way wallets make them.
 */
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest();
const base58check = createBase58check(sha256);
const phones = phoneLib.PhoneNumberUtil.getInstance();

/** A mobile number that exists in `region`'s numbering plan (libphonenumber's example). */
export function mobileOf(region: string): string {
  const example = phones.getExampleNumberForType(region, phoneLib.PhoneNumberType.MOBILE);
  return phones.format(example, phoneLib.PhoneNumberFormat.E164);
}

/**
 * Makes a random destination again while its identifier ends in three digits: on sandbox
 * platforms those choose a payment's or a name check's outcome (the upstream sandbox's account
 * suffixes), and a random address must not pick one by chance.
 */
function withoutTestSuffix<T>(make: () => T, identifierOf: (made: T) => string): T {
  for (;;) {
    const made = make();
    if (!/\d{3}$/.test(identifierOf(made).split('@')[0]!)) return made;
  }
}

export interface EvmWallet {
  address: string;
  signMessage(message: string): Promise<string>;
}
export function evmWallet(): EvmWallet {
  const account = withoutTestSuffix(() => privateKeyToAccount(generatePrivateKey()), (made) => made.address);
  return { address: account.address, signMessage: (message) => account.signMessage({ message }) };
}

export function solanaWallet() {
  const { publicKey, privateKey } = withoutTestSuffix(
    () => generateKeyPairSync('ed25519'),
    (made) => base58.encode(made.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32)),
  );
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { address: base58.encode(raw), signMessage: (message: string) => base58.encode(signEd25519(null, Buffer.from(message, 'utf8'), privateKey)) };
}

/** Tron: the EVM key's address with prefix 0x41, base58check; signs TIP-191 (TronWeb signMessageV2). */
export function tronWallet() {
  const tronAddress = (key: `0x${string}`) => base58check.encode(Uint8Array.from([0x41, ...Buffer.from(privateKeyToAccount(key).address.slice(2), 'hex')]));
  const privateKey = withoutTestSuffix(generatePrivateKey, tronAddress);
  const address = tronAddress(privateKey);
  return {
    address,
    async signMessage(message: string) {
      const bytes = stringToBytes(message);
      const hash = keccak256(concat([stringToBytes(`\x19TRON Signed Message:\n${bytes.length}`), bytes]));
      return signHash({ hash, privateKey, to: 'hex' });
    },
  };
}

/** A Spark wallet: its identity key (secp256k1) in a bech32m Spark address; signs Bitcoin messages with it. */
export function sparkWallet(prefix = 'spark') {
  const sparkAddress = (key: ReturnType<typeof secp256k1Key>) => bech32m.encode(prefix, bech32m.toWords(Uint8Array.from([0x0a, 0x21, ...key.getPublicKey(undefined, 'compressed')])), 200);
  const ecdh = withoutTestSuffix(secp256k1Key, sparkAddress);
  const publicKey = ecdh.getPublicKey(undefined, 'compressed');
  const address = sparkAddress(ecdh);
  // getPrivateKey() drops leading zero bytes (one key in 256 is shorter); signers want all 32.
  const privateKey = Buffer.from(ecdh.getPrivateKey('hex').padStart(64, '0'), 'hex');
  return {
    address,
    publicKey,
    /** BIP-137: the header names the address type (P2WPKH here, 39–42). */
    signBip137: (message: string) => bitcoinMessage.sign(message, privateKey, true, { segwitType: 'p2wpkh' }).toString('base64'),
    /** Electrum: a compressed-key header (31–34) whatever address it is for. */
    signElectrum: (message: string) => bitcoinMessage.sign(message, privateKey, true).toString('base64'),
  };
}

function secp256k1Key() {
  const ecdh = createECDH('secp256k1');
  ecdh.generateKeys();
  return ecdh;
}

/** A signed BOLT11 invoice for 1000 sats, expiring an hour after `now`. */
export function bolt11Invoice(now: Date, network: 'bc' | 'tb' = 'bc'): string {
  return withoutTestSuffix(() => signedInvoice(now, network), (invoice) => invoice);
}

function signedInvoice(now: Date, network: 'bc' | 'tb'): string {
  const encoded = bolt11.encode({
    ...(network === 'tb' ? { network: { bech32: 'tb', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] } } : {}),
    satoshis: 1000,
    timestamp: Math.floor(now.getTime() / 1000),
    tags: [
      { tagName: 'payment_hash', data: randomBytes(32).toString('hex') },
      { tagName: 'payment_secret', data: randomBytes(32).toString('hex') },
      { tagName: 'description', data: 'corridor test' },
      { tagName: 'expire_time', data: 3600 },
    ],
  });
  return bolt11.sign(encoded, randomBytes(32)).paymentRequest!;
}

/** A BOLT12 offer: TLV records description (10) and issuer id (22), as bech32 words without checksum. */
export function bolt12Offer(): string {
  return withoutTestSuffix(offer, (made) => made);
}

function offer(): string {
  const description = Buffer.from('corridor test');
  const issuer = secp256k1Key().getPublicKey(undefined, 'compressed');
  const tlv = Buffer.concat([Buffer.from([10, description.length]), description, Buffer.from([22, issuer.length]), issuer]);
  const alphabet = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
  return `lno1${bech32.toWords(tlv).map((w) => alphabet[w]).join('')}`;
}

export const person = (fullName = 'John Doe') => ({ beneficiaryType: 'INDIVIDUAL', fullName });
const business = (legalName = 'Acme Trading Ltd') => ({ beneficiaryType: 'BUSINESS', legalName });
const address = { line1: '1 Main Street', postalCode: '00000', country: 'US' };

export interface Sample {
  currency: string;
  accountInfo: Record<string, unknown>;
}

/** One valid account of every accountType. */
export function validSamples(now: Date): Record<string, Sample> {
  const bank = (currency: string, info: Record<string, unknown>, beneficiary: Record<string, unknown> = person()) => ({
    currency,
    accountInfo: { accountType: `${currency}_ACCOUNT`, ...info, beneficiary },
  });
  const mobile = (currency: string, region: string, extra: Record<string, unknown> = {}) =>
    bank(currency, { phoneNumber: mobileOf(region), provider: 'M-Pesa', ...extra });
  return {
    AED_ACCOUNT: bank('AED', { iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' }, { ...person(), address }),
    BDT_ACCOUNT: bank('BDT', { accountNumber: '1234567890', bankName: 'Sonali Bank', branchCode: '12345', swiftCode: 'BSONBDDH' }),
    BRL_ACCOUNT: bank('BRL', { pixKey: 'ana@example.com', pixKeyType: 'EMAIL', taxId: cpf.generate() }),
    BWP_ACCOUNT: mobile('BWP', 'BW'),
    CAD_ACCOUNT: bank('CAD', { bankCode: '001', branchCode: '00012', accountNumber: '1234567' }),
    CNY_ACCOUNT: bank('CNY', { accountNumber: '6222021234567890', bankName: 'ICBC' }, business()),
    COP_ACCOUNT: bank('COP', { bankName: 'Nequi', phoneNumber: mobileOf('CO') }, { ...person(), documentType: 'CC', documentNumber: '1020304050' }),
    DKK_ACCOUNT: bank('DKK', { iban: 'DK5000400440116243', swiftCode: 'DABADKKK' }),
    EGP_ACCOUNT: bank('EGP', { bankName: 'National Bank of Egypt', iban: 'EG380019000500000000263180002' }),
    EUR_ACCOUNT: bank('EUR', { iban: 'DE89370400440532013000', swiftCode: 'COBADEFF' }, { ...person(), countryOfResidence: 'DE' }),
    GBP_ACCOUNT: bank('GBP', { sortCode: '200000', accountNumber: '55779911' }),
    GHS_ACCOUNT: bank('GHS', { bankName: 'MTN Mobile Money', phoneNumber: mobileOf('GH') }),
    GTQ_ACCOUNT: bank(
      'GTQ',
      { accountNumber: '0123456789', bankAccountType: 'SAVINGS', bankName: 'Banco Industrial' },
      { ...person(), countryOfResidence: 'GT', phoneNumber: mobileOf('GT') },
    ),
    HKD_ACCOUNT: bank('HKD', { bankName: 'HSBC', accountNumber: '123456789012', swiftCode: 'HSBCHKHHHKH' }),
    HTG_ACCOUNT: bank('HTG', { phoneNumber: mobileOf('HT') }),
    IDR_ACCOUNT: bank('IDR', { bankName: 'Bank Central Asia', accountNumber: '1234567890', swiftCode: 'CENAIDJA', phoneNumber: mobileOf('ID') }),
    INR_ACCOUNT: bank('INR', { accountNumber: '000111222333', ifsc: 'HDFC0001234', rail: 'NEFT' }),
    JMD_ACCOUNT: bank(
      'JMD',
      { accountNumber: '123456789', branchCode: '12345', bankAccountType: 'CHECKING', bankName: 'NCB' },
      { ...person(), address: { ...address, country: 'JM' }, phoneNumber: mobileOf('JM') },
    ),
    KES_ACCOUNT: mobile('KES', 'KE'),
    MWK_ACCOUNT: mobile('MWK', 'MW'),
    MXN_ACCOUNT: bank('MXN', { clabeNumber: '002010077777777771' }),
    MYR_ACCOUNT: bank('MYR', { bankName: 'Maybank', accountNumber: '1234567890', swiftCode: 'MBBEMYKL' }),
    NGN_ACCOUNT: bank('NGN', { accountNumber: '0123456789', bankName: 'Access Bank' }),
    PHP_ACCOUNT: bank('PHP', { bankName: 'BDO Unibank', accountNumber: '001234567890' }),
    PKR_ACCOUNT: bank('PKR', { bankName: 'Standard Chartered', accountNumber: '01123456702', iban: 'PK36SCBL0000001123456702' }),
    RWF_ACCOUNT: mobile('RWF', 'RW'),
    SGD_ACCOUNT: bank('SGD', { accountNumber: '0123456789', swiftCode: 'DBSSSGSG' }),
    SLV_ACCOUNT: { ...bank('SLV', { bankName: 'Banco Cuscatlan', accountNumber: '0123456789', bankAccountType: 'CHECKING' }), currency: 'USD' },
    THB_ACCOUNT: bank('THB', { bankName: 'Bangkok Bank', accountNumber: '1234567890', swiftCode: 'BKKBTHBK' }),
    TZS_ACCOUNT: mobile('TZS', 'TZ'),
    UGX_ACCOUNT: mobile('UGX', 'UG'),
    USD_ACCOUNT: bank('USD', { accountNumber: '12345678901', routingNumber: '021000021', bankAccountType: 'CHECKING', bankName: 'Chase' }),
    VND_ACCOUNT: bank('VND', { bankName: 'Vietcombank', accountNumber: '1234567890', swiftCode: 'BFTVVNVX' }),
    XAF_ACCOUNT: mobile('XAF', 'CG', { region: 'CG' }),
    XOF_ACCOUNT: mobile('XOF', 'SN', { region: 'SN' }),
    ZAR_ACCOUNT: bank('ZAR', { accountNumber: '123456789', bankName: 'FNB' }),
    ZMW_ACCOUNT: mobile('ZMW', 'ZM'),
    SWIFT_ACCOUNT: {
      currency: 'CHF',
      accountInfo: { accountType: 'SWIFT_ACCOUNT', country: 'CH', swiftCode: 'UBSWCHZH80A', bankName: 'UBS', iban: 'CH9300762011623852957', beneficiary: person() },
    },
    BASE_WALLET: { currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } },
    ETHEREUM_WALLET: { currency: 'USDT', accountInfo: { accountType: 'ETHEREUM_WALLET', address: evmWallet().address.toLowerCase() } },
    POLYGON_WALLET: { currency: 'USDC', accountInfo: { accountType: 'POLYGON_WALLET', address: evmWallet().address } },
    PLASMA_WALLET: { currency: 'USDT', accountInfo: { accountType: 'PLASMA_WALLET', address: evmWallet().address } },
    SOLANA_WALLET: { currency: 'USDC', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } },
    SPARK_WALLET: { currency: 'BTC', accountInfo: { accountType: 'SPARK_WALLET', address: sparkWallet().address } },
    TRON_WALLET: { currency: 'USDT', accountInfo: { accountType: 'TRON_WALLET', address: tronWallet().address } },
    LIGHTNING: { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: bolt11Invoice(now) } },
  };
}

/** Flips one character of a string (a typo), keeping its length and character class. */
export function typo(value: string, index = value.length - 2): string {
  const c = value[index]!;
  const swapped = /\d/.test(c) ? String((Number(c) + 1) % 10) : c === c.toUpperCase() ? (c === 'A' ? 'B' : 'A') : c === 'a' ? 'b' : 'a';
  return value.slice(0, index) + swapped + value.slice(index + 1);
}
