import { CRYPTO_CURRENCY_CODES } from '../../platform/currencies.js';
import type { DestinationNetwork, PaymentRail } from '../external-accounts/index.js';

/**
 * The one catalogue of the routes money leaves by: every PaymentRail of the API, the crypto
 * networks of external wallets, and the book transfer between two internal accounts. Quotes
 * price with it (service fee, quote lifetime), `GET /exchange-rates` lists it, and the payments
 * side settles by it (settlement time). Figures are Corridor's simulated rails, documented in
 * modules/rates/README.md; a deployment with real rails replaces the fees, not the shape.
 */
export interface RouteSpec {
  /** Currencies the route pays out; `ANY_FIAT`: every fiat currency (correspondent banking). */
  currencies: readonly string[] | 'ANY_FIAT';
  /** How long after execution the simulated rail settles. */
  settlementSeconds: number;
  /** How long a quote on this route keeps its rate (1–5 minutes: instant rails shortest). */
  quoteExpirySeconds: number;
  /** Pays out within seconds, any day: may be funded just in time (REALTIME_FUNDING). */
  instant: boolean;
  /**
   * Corridor's service fee: a fixed part in US cents (converted to the sending currency at the
   * mid-market rate, rounded up to its minor unit) plus basis points of the amount sent.
   */
  serviceFee: { fixedUsdMinor: bigint; variableBps: bigint };
  description: string;
}

const route = (
  currencies: RouteSpec['currencies'],
  settlementSeconds: number,
  quoteExpirySeconds: number,
  instant: boolean,
  fixedUsdMinor: bigint,
  variableBps: bigint,
  description = '',
): RouteSpec => ({ currencies, settlementSeconds, quoteExpirySeconds, instant, serviceFee: { fixedUsdMinor, variableBps }, description });

const HOUR = 3600;
const DAY = 24 * HOUR;

/** Every PaymentRail of the API (UPSTREAM §5.6), in the enum's order; settlement times typical of the real network. */
export const RAILS: Readonly<Record<PaymentRail, RouteSpec>> = {
  ACH: route(['USD'], DAY, 300, false, 25n, 0n, 'US batch ACH, next business day'),
  ACH_COLOMBIA: route(['COP'], DAY, 300, false, 50n, 10n, 'Colombian ACH, next business day'),
  BANK_TRANSFER: route('ANY_FIAT', HOUR, 300, false, 100n, 20n, 'Generic domestic bank transfer'),
  BRE_B: route(['COP'], 10, 60, true, 30n, 10n, 'Colombian instant payments (Bre-B)'),
  CIPS: route(['CNY'], HOUR, 300, false, 500n, 10n, 'Cross-border interbank payment system (China)'),
  FAST: route(['SGD'], 10, 60, true, 30n, 5n, 'Singapore FAST, instant'),
  FASTER_PAYMENTS: route(['GBP'], 10, 60, true, 20n, 5n, 'UK Faster Payments, instant'),
  FEDNOW: route(['USD'], 5, 60, true, 45n, 0n, 'FedNow, instant'),
  INSTAPAY: route(['PHP'], 10, 60, true, 30n, 10n, 'Philippine InstaPay, instant'),
  // Every currency an account type may be paid in by MOBILE_MONEY (external-accounts' variants): USD for El Salvador's.
  MOBILE_MONEY: route(
    ['KES', 'UGX', 'TZS', 'RWF', 'MWK', 'ZMW', 'GHS', 'XOF', 'XAF', 'NGN', 'BDT', 'BWP', 'CNY', 'COP', 'EGP', 'HTG', 'PKR', 'USD'],
    60,
    120,
    true,
    50n,
    30n,
    'Mobile money wallets',
  ),
  NEFT: route(['INR'], 1_800, 300, false, 20n, 10n, 'Indian NEFT, half-hourly batches'),
  PAYNOW: route(['SGD'], 10, 60, true, 30n, 5n, 'Singapore PayNow, instant'),
  PESONET: route(['PHP'], DAY, 300, false, 30n, 10n, 'Philippine PESONet, same or next day'),
  PIX: route(['BRL'], 5, 60, true, 20n, 10n, 'Brazilian Pix, instant'),
  RTGS: route('ANY_FIAT', HOUR, 300, false, 100n, 5n, 'Real-time gross settlement (high value)'),
  RTP: route(['USD'], 5, 60, true, 45n, 0n, 'The Clearing House RTP, instant'),
  // DKK too: the API pays a DKK_ACCOUNT (a Danish IBAN) on SEPA or SEPA_INSTANT, its only rails.
  SEPA: route(['EUR', 'DKK'], DAY, 300, false, 20n, 5n, 'SEPA Credit Transfer, next business day'),
  SEPA_INSTANT: route(['EUR', 'DKK'], 10, 60, true, 30n, 5n, 'SEPA Instant Credit Transfer'),
  SPEI: route(['MXN'], 30, 60, true, 30n, 10n, 'Mexican SPEI, near-instant'),
  SWIFT: route('ANY_FIAT', 2 * DAY, 300, false, 1500n, 10n, 'SWIFT correspondent banking, about two days'),
  UNIONPAY: route(['CNY'], 600, 300, false, 200n, 20n, 'UnionPay account transfer'),
  UPI: route(['INR'], 10, 60, true, 10n, 10n, 'Indian UPI, instant'),
  WIRE: route(['USD'], HOUR, 300, false, 1500n, 0n, 'US domestic wire (Fedwire), same day'),
};

/** Crypto networks external wallets are paid on: they settle in seconds to minutes (a typical block's confirmation), any day. */
export const NETWORKS: Readonly<Record<DestinationNetwork, RouteSpec>> = {
  BASE: route(['USDC'], 30, 120, true, 5n, 0n, 'Base'),
  ETHEREUM: route(['USDC', 'USDT'], 300, 120, true, 100n, 0n, 'Ethereum'),
  POLYGON: route(['USDC'], 30, 120, true, 5n, 0n, 'Polygon'),
  PLASMA: route(['USDT'], 30, 120, true, 5n, 0n, 'Plasma'),
  SOLANA: route(['USDC', 'USDT'], 30, 120, true, 5n, 0n, 'Solana'),
  SPARK: route(['BTC'], 10, 120, true, 5n, 0n, 'Spark'),
  TRON: route(['USDT'], 60, 120, true, 100n, 0n, 'Tron'),
  LIGHTNING: route(['BTC'], 10, 120, true, 5n, 0n, 'Lightning'),
};

/** Between two internal accounts of one platform: a ledger transfer, no rail, no service fee. */
export const BOOK_TRANSFER: RouteSpec = route('ANY_FIAT', 0, 300, true, 0n, 0n, 'Between two internal accounts');

export function routeServes(spec: RouteSpec, currency: string): boolean {
  return spec.currencies === 'ANY_FIAT' ? !CRYPTO_CURRENCY_CODES.has(currency) : spec.currencies.includes(currency);
}
