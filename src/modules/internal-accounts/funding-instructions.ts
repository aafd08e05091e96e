import { createECDH, createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { base32crockford, base58, bech32, bech32m, createBase58check } from '@scure/base';
import type bolt11Module from 'bolt11';
import { clabe } from 'clabe-validator';
import { composeIBAN } from 'ibantools';
import { CRYPTO_CURRENCY_CODES } from '../../platform/currencies.js';
import { loadOnFirstUse } from '../../platform/load-on-first-use.js';
import type { InternalAccountType } from './repo.js';

/** One entry of `fundingPaymentInstructions` (the schema is PaymentInstructions in schemas.ts). */
export interface FundingInstruction {
  instructionsNotes: string;
  isPlatformAccount: boolean;
  accountOrWalletInfo: { accountType: string } & Record<string, string | string[]>;
}

/**
 * Corridor's simulated partner banks. The numbers are made up but pass every check a bank or a
 * validator applies: the ABA routing number its checksum, IBANs their MOD-97 check digits, the
 * CLABE its control digit (STP, bank 646, Mexico City), the BICs their structure.
 */
const US_BANK = { name: 'Corridor Partner Bank, N.A.', routingNumber: '260073990', address: '1 Clearing House Plaza, Wilmington, DE 19801' };
const EU_BANK = { name: 'Corridor Partner Bank Europe', bankCode: '10020890', bic: 'CRDRDEB2XXX' };
const UK_BANK = { name: 'Corridor Partner Bank UK', bankCode: 'CRDR', sortCode: '040605', bic: 'CRDRGB2LXXX', address: '1 Clearing Lane, London EC2V 7HH' };
const MX_BANK = { name: 'STP (Sistema de Transferencias y Pagos)', code: 646, city: 180 };
const PIX_MERCHANT = { name: 'CORRIDOR PAGAMENTOS', city: 'SAO PAULO' };
const HOLDER = 'Corridor Payments Ltd (client funds)';
// viem (EIP-55 checksums), pix-utils (with axios and qrcode) and bolt11 (with bitcoinjs-lib)
// load on the first instruction that needs them, not at start-up.
const viem = loadOnFirstUse<typeof import('viem')>('viem');
const pixUtils = loadOnFirstUse<typeof import('pix-utils')>('pix-utils');
const bolt11 = loadOnFirstUse<typeof bolt11Module>('bolt11');

/** Which networks take deposits of each crypto currency. */
const NETWORKS: Record<string, readonly string[]> = {
  USDC: ['SOLANA_WALLET', 'ETHEREUM_WALLET', 'BASE_WALLET', 'POLYGON_WALLET'],
  USDT: ['ETHEREUM_WALLET', 'SOLANA_WALLET', 'TRON_WALLET', 'PLASMA_WALLET'],
  BTC: ['BITCOIN_L1', 'SPARK_WALLET', 'LIGHTNING'],
};
const EVM_WALLETS = new Set(['ETHEREUM_WALLET', 'BASE_WALLET', 'POLYGON_WALLET', 'PLASMA_WALLET']);
const NETWORK_NAMES: Record<string, string> = {
  SOLANA_WALLET: 'Solana', ETHEREUM_WALLET: 'Ethereum', BASE_WALLET: 'Base', POLYGON_WALLET: 'Polygon', TRON_WALLET: 'Tron (TRC-20)', PLASMA_WALLET: 'Plasma',
  BITCOIN_L1: 'the Bitcoin network', SPARK_WALLET: 'Spark',
};

const sha256 = (data: Uint8Array): Uint8Array => createHash('sha256').update(data).digest();
const tronBase58check = createBase58check(sha256);

/** A reference to quote with every bank deposit: `CDR` + 13 Crockford base32 characters (65 random bits), 16 in all (Faster Payments allows 18). */
export function newFundingReference(): string {
  return `CDR${base32crockford.encode(randomBytes(9)).slice(0, 13)}`;
}

/** `length` uniformly random decimal digits, the first not zero (randomInt draws from a buffered pool, not a syscall per digit). */
function digits(length: number): string {
  let out = String(randomInt(1, 10));
  while (out.length < length) out += String(randomInt(0, 10));
  return out;
}

function bankInstructions(currency: string, reference: string, isPlatformAccount: boolean): FundingInstruction[] {
  const note = `Include the reference ${reference} with the payment so it is credited to this account.`;
  const one = (info: FundingInstruction['accountOrWalletInfo']): FundingInstruction[] => [{ instructionsNotes: note, isPlatformAccount, accountOrWalletInfo: info }];
  switch (currency) {
    case 'USD':
      return one({
        accountType: 'USD_ACCOUNT',
        accountNumber: digits(12),
        routingNumber: US_BANK.routingNumber,
        bankName: US_BANK.name,
        bankAddress: US_BANK.address,
        paymentRails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'],
        reference,
      });
    case 'EUR':
      return one({
        accountType: 'EUR_ACCOUNT',
        iban: composeIBAN({ countryCode: 'DE', bban: `${EU_BANK.bankCode}${digits(10)}` })!,
        swiftCode: EU_BANK.bic,
        bankName: EU_BANK.name,
        paymentRails: ['SEPA', 'SEPA_INSTANT'],
        reference,
      });
    case 'GBP':
      return one({ accountType: 'GBP_ACCOUNT', sortCode: UK_BANK.sortCode, accountNumber: digits(8), bankName: UK_BANK.name, paymentRails: ['FASTER_PAYMENTS'], reference });
    case 'MXN':
      return one({
        accountType: 'MXN_ACCOUNT',
        clabeNumber: clabe.calculate(MX_BANK.code, MX_BANK.city, Number(digits(11))),
        bankName: MX_BANK.name,
        paymentRails: ['SPEI'],
        reference,
      });
    case 'BRL': {
      const pixKey = randomUUID();
      const { createStaticPix, hasError } = pixUtils();
      const pix = createStaticPix({ merchantName: PIX_MERCHANT.name, merchantCity: PIX_MERCHANT.city, pixKey, txid: reference, transactionAmount: 0 });
      if (hasError(pix)) throw new Error(`cannot build a Pix payload: ${JSON.stringify(pix)}`);
      return one({ accountType: 'BRL_ACCOUNT', qrCode: pix.toBRCode(), pixKey, paymentRails: ['PIX'], reference });
    }
    default: {
      // Every other currency arrives by SWIFT at the UK partner bank, into an account in that currency.
      const accountNumber = digits(8);
      return one({
        accountType: 'SWIFT_ACCOUNT',
        country: 'GB',
        swiftCode: UK_BANK.bic,
        bankName: UK_BANK.name,
        bankAddress: UK_BANK.address,
        accountNumber,
        iban: composeIBAN({ countryCode: 'GB', bban: `${UK_BANK.bankCode}${UK_BANK.sortCode}${accountNumber}` })!,
        accountHolderName: HOLDER,
        paymentRails: ['SWIFT'],
        reference,
      });
    }
  }
}

/** How long a Lightning funding invoice is valid from when it is drawn. */
export const LIGHTNING_INVOICE_SECONDS = 365 * 24 * 3600;

/**
 * How close to its expiry a stored Lightning funding invoice is replaced by a fresh one (when the
 * account is next read): a payer is never handed an invoice with less than this left to pay it.
 */
export const LIGHTNING_RENEW_BEFORE_SECONDS = 30 * 24 * 3600;

/** The description of every Lightning funding invoice: it names the account's funding reference. */
const invoiceDescription = (reference: string) => `Deposit to Corridor account ${reference}`;
const INVOICE_DESCRIPTION = /^Deposit to Corridor account (CDR[0-9A-Z]{13})$/;

/**
 * A Lightning invoice without an amount, signed by a throw-away node key, dated `now` (the
 * platform's time) and valid for LIGHTNING_INVOICE_SECONDS. Its description carries the
 * account's funding reference, which stays the same whichever of its invoices is paid.
 */
function lightningInvoice(reference: string, now: Date): string {
  const unsigned = bolt11().encode({
    network: { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, validWitnessVersions: [0, 1] },
    timestamp: Math.floor(now.getTime() / 1000),
    tags: [
      { tagName: 'payment_hash', data: randomBytes(32).toString('hex') },
      { tagName: 'payment_secret', data: randomBytes(32).toString('hex') },
      { tagName: 'description', data: invoiceDescription(reference) },
      { tagName: 'expire_time', data: LIGHTNING_INVOICE_SECONDS },
    ],
  });
  return bolt11().sign(unsigned, randomBytes(32)).paymentRequest!;
}

/** BOLT11 field layout in 5-bit words: a 35-bit timestamp, tagged fields, a 520-bit signature. */
const BOLT11_TIMESTAMP_WORDS = 7;
const BOLT11_SIGNATURE_WORDS = 104;
/** Tag `x` (expire_time); an invoice without one expires an hour after its timestamp (BOLT11). */
const BOLT11_EXPIRE_TIME_TAG = 6;
const BOLT11_DEFAULT_EXPIRY_SECONDS = 3600;

const wordsToNumber = (words: ArrayLike<number>, from: number, to: number): number => {
  let value = 0;
  for (let i = from; i < to; i++) value = value * 32 + words[i]!;
  return value;
};

/**
 * When a BOLT11 invoice expires (ms since the epoch), read from its timestamp and expire_time
 * without checking the signature (a microsecond, not the 0.4 ms of a full decode: accounts are
 * listed by the hundred); undefined when it is not bech32 with room for those fields.
 */
export function invoiceExpiresAt(invoice: string): number | undefined {
  const decoded = bech32.decodeUnsafe(invoice.toLowerCase(), false);
  if (!decoded) return undefined;
  const { words } = decoded;
  const end = words.length - BOLT11_SIGNATURE_WORDS;
  if (end < BOLT11_TIMESTAMP_WORDS) return undefined;
  const timestamp = wordsToNumber(words, 0, BOLT11_TIMESTAMP_WORDS);
  let expiry = BOLT11_DEFAULT_EXPIRY_SECONDS;
  for (let i = BOLT11_TIMESTAMP_WORDS; i + 3 <= end; ) {
    const tag = words[i]!;
    const length = wordsToNumber(words, i + 1, i + 3);
    if (i + 3 + length > end) return undefined;
    if (tag === BOLT11_EXPIRE_TIME_TAG) expiry = wordsToNumber(words, i + 3, i + 3 + length);
    i += 3 + length;
  }
  return (timestamp + expiry) * 1000;
}

/**
 * The funding reference a Lightning funding invoice was drawn for (its description), checked
 * as a whole invoice (signature included); undefined for anything else. Deposits to an invoice
 * that has since been replaced by a fresh one are matched to the account by it.
 */
export function fundingReferenceOfInvoice(invoice: string): string | undefined {
  if (!/^ln/i.test(invoice)) return undefined;
  try {
    const decoded = bolt11().decode(invoice);
    if (!decoded.payeeNodeKey) return undefined;
    const description = decoded.tags.find((t) => t.tagName === 'description')?.data;
    return typeof description === 'string' ? INVOICE_DESCRIPTION.exec(description)?.[1] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The instructions with their Lightning invoice replaced by one dated `now`, when the stored one
 * is expired or has LIGHTNING_RENEW_BEFORE_SECONDS or less left at `now` (the platform's
 * time); undefined when nothing is due (no Lightning instruction, or one with time to spare).
 * Everything else, the funding reference included, stays as it is.
 */
export function renewedInstructions(instructions: readonly FundingInstruction[], reference: string, now: Date): FundingInstruction[] | undefined {
  const due = (info: FundingInstruction['accountOrWalletInfo']) => {
    if (info.accountType !== 'LIGHTNING') return false;
    const expiresAt = typeof info.invoice === 'string' ? invoiceExpiresAt(info.invoice) : undefined;
    return expiresAt === undefined || expiresAt - LIGHTNING_RENEW_BEFORE_SECONDS * 1000 <= now.getTime();
  };
  if (!instructions.some((i) => due(i.accountOrWalletInfo))) return undefined;
  return instructions.map((i) => (due(i.accountOrWalletInfo) ? { ...i, accountOrWalletInfo: { ...i.accountOrWalletInfo, invoice: lightningInvoice(reference, now) } } : i));
}

/** The stored Lightning invoice of these instructions, if they have one. */
export function lightningInvoiceOf(instructions: readonly FundingInstruction[]): string | undefined {
  const invoice = instructions.find((i) => i.accountOrWalletInfo.accountType === 'LIGHTNING')?.accountOrWalletInfo.invoice;
  return typeof invoice === 'string' ? invoice : undefined;
}

/** Whether an account in `currency` is funded (also) by a Lightning invoice, which expires and is renewed. */
export function fundedByLightning(currency: string): boolean {
  return NETWORKS[currency]?.includes('LIGHTNING') ?? false;
}

/** The type of the account that holds `currency` for its owner: crypto currencies (USDC, BTC, …) are INTERNAL_CRYPTO. */
export function holdingAccountType(currency: string): 'INTERNAL_FIAT' | 'INTERNAL_CRYPTO' {
  return CRYPTO_CURRENCY_CODES.has(currency) ? 'INTERNAL_CRYPTO' : 'INTERNAL_FIAT';
}

function walletInfo(accountType: string, currency: string, reference: string, now: Date): FundingInstruction['accountOrWalletInfo'] {
  if (EVM_WALLETS.has(accountType)) return { accountType, address: viem().getAddress(`0x${randomBytes(20).toString('hex')}`), assetType: currency };
  switch (accountType) {
    case 'SOLANA_WALLET':
      return { accountType, address: base58.encode(randomBytes(32)), assetType: currency };
    case 'TRON_WALLET':
      return { accountType, address: tronBase58check.encode(Uint8Array.from([0x41, ...randomBytes(20)])), assetType: currency };
    case 'BITCOIN_L1':
      // Native segwit (P2WPKH): witness version 0 and a 20-byte program.
      return { accountType, address: bech32.encode('bc', [0, ...bech32.toWords(randomBytes(20))]), network: 'BITCOIN' };
    case 'SPARK_WALLET': {
      // A Spark address is bech32m of protobuf field 1 holding a compressed secp256k1 identity key.
      const identity = createECDH('secp256k1');
      identity.generateKeys();
      const payload = Uint8Array.from([0x0a, 0x21, ...identity.getPublicKey(null, 'compressed')]);
      return { accountType, address: bech32m.encode('spark', bech32m.toWords(payload), 200), assetType: currency };
    }
    case 'LIGHTNING':
      return { accountType, invoice: lightningInvoice(reference, now) };
    default:
      throw new Error(`no deposit address format for ${accountType}`);
  }
}

/**
 * Where money for a new account is sent: a bank account in the account's currency (with the
 * account's reference), or for a crypto currency one deposit address per network, each this
 * account's alone (its private key is never kept: the rails are simulated). An embedded wallet
 * is funded by transfers from other accounts and has none. `now` dates the Lightning invoice:
 * the platform's time, by which it is later renewed (renewedInstructions).
 */
export function fundingInstructions(account: {
  type: InternalAccountType;
  currency: string;
  reference: string;
  isPlatformAccount: boolean;
  now: Date;
}): FundingInstruction[] {
  if (account.type === 'EMBEDDED_WALLET') return [];
  if (!CRYPTO_CURRENCY_CODES.has(account.currency)) return bankInstructions(account.currency, account.reference, account.isPlatformAccount);
  return (NETWORKS[account.currency] ?? []).map((accountType) => ({
    instructionsNotes:
      accountType === 'LIGHTNING'
        ? 'Pay this invoice with any amount; it credits this account.'
        : `Send only ${account.currency} on ${NETWORK_NAMES[accountType]} to this address: it belongs to this account alone.`,
    isPlatformAccount: account.isPlatformAccount,
    accountOrWalletInfo: walletInfo(accountType, account.currency, account.reference, account.now),
  }));
}
