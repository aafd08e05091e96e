import { createECDH, createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { base32crockford, base58, bech32, bech32m, createBase58check } from '@scure/base';
import bolt11 from 'bolt11';
import { clabe } from 'clabe-validator';
import { composeIBAN } from 'ibantools';
import { createStaticPix, hasError } from 'pix-utils';
import { getAddress } from 'viem';
import { CRYPTO_CURRENCY_CODES } from '../../platform/currencies.js';
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

/** A Lightning invoice without an amount, signed by a throw-away node key, valid for a year. */
function lightningInvoice(reference: string, now: Date): string {
  const unsigned = bolt11.encode({
    network: { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, validWitnessVersions: [0, 1] },
    timestamp: Math.floor(now.getTime() / 1000),
    tags: [
      { tagName: 'payment_hash', data: randomBytes(32).toString('hex') },
      { tagName: 'payment_secret', data: randomBytes(32).toString('hex') },
      { tagName: 'description', data: `Deposit to Corridor account ${reference}` },
      { tagName: 'expire_time', data: 365 * 24 * 3600 },
    ],
  });
  return bolt11.sign(unsigned, randomBytes(32)).paymentRequest!;
}

function walletInfo(accountType: string, currency: string, reference: string, now: Date): FundingInstruction['accountOrWalletInfo'] {
  if (EVM_WALLETS.has(accountType)) return { accountType, address: getAddress(`0x${randomBytes(20).toString('hex')}`), assetType: currency };
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
 * is funded by transfers from other accounts and has none.
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
