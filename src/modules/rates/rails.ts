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
}

const route = (
  currencies: RouteSpec['currencies'],
  settlementSeconds: number,
  quoteExpirySeconds: number,
  instant: boolean,
  fixedUsdMinor: bigint,
  variableBps: bigint,
): RouteSpec => ({ currencies, settlementSeconds, quoteExpirySeconds, instant, serviceFee: { fixedUsdMinor, variableBps } });

const HOUR = 3600;
const DAY = 24 * HOUR;

/** Every PaymentRail of the API (UPSTREAM §5.6), in the enum's order. */
export const RAILS: Readonly<Record<PaymentRail, RouteSpec>> = {
  ACH: route(['USD'], DAY, 300, false, 25n, 0n),
  ACH_COLOMBIA: route(['COP'], DAY, 300, false, 50n, 10n),
  BANK_TRANSFER: route(
    ['AED', 'BDT', 'CAD', 'CNY', 'COP', 'EGP', 'GHS', 'GTQ', 'HKD', 'IDR', 'JMD', 'MYR', 'NGN', 'PHP', 'PKR', 'SGD', 'THB', 'USD', 'VND', 'ZAR'],
    4 * HOUR,
    300,
    false,
    100n,
    20n,
  ),
  BRE_B: route(['COP'], 10, 60, true, 30n, 10n),
  CIPS: route(['CNY'], 4 * HOUR, 300, false, 500n, 10n),
  FAST: route(['SGD'], 10, 60, true, 30n, 5n),
  FASTER_PAYMENTS: route(['GBP'], 10, 60, true, 20n, 5n),
  FEDNOW: route(['USD'], 10, 60, true, 45n, 0n),
  INSTAPAY: route(['PHP'], 10, 60, true, 30n, 10n),
  MOBILE_MONEY: route(['BDT', 'BWP', 'CNY', 'COP', 'EGP', 'GHS', 'HTG', 'KES', 'MWK', 'PKR', 'RWF', 'TZS', 'UGX', 'USD', 'XAF', 'XOF', 'ZMW'], 60, 120, true, 50n, 30n),
  NEFT: route(['INR'], 2 * HOUR, 300, false, 20n, 10n),
  PAYNOW: route(['SGD'], 10, 60, true, 30n, 5n),
  PESONET: route(['PHP'], 4 * HOUR, 300, false, 30n, 10n),
  PIX: route(['BRL'], 10, 60, true, 20n, 10n),
  RTGS: route(['INR'], HOUR, 300, false, 100n, 5n),
  RTP: route(['USD'], 10, 60, true, 45n, 0n),
  SEPA: route(['DKK', 'EUR'], DAY, 300, false, 20n, 5n),
  SEPA_INSTANT: route(['DKK', 'EUR'], 10, 60, true, 30n, 5n),
  SPEI: route(['MXN'], 30, 60, true, 30n, 10n),
  SWIFT: route('ANY_FIAT', 2 * DAY, 300, false, 1500n, 10n),
  UNIONPAY: route(['CNY'], HOUR, 300, false, 200n, 20n),
  UPI: route(['INR'], 10, 60, true, 10n, 10n),
  WIRE: route(['USD'], 4 * HOUR, 300, false, 1500n, 0n),
};

/** Crypto networks external wallets are paid on: they settle in minutes, any day. */
export const NETWORKS: Readonly<Record<DestinationNetwork, RouteSpec>> = {
  BASE: route(['USDC'], 30, 120, true, 5n, 0n),
  ETHEREUM: route(['USDC', 'USDT'], 300, 180, true, 100n, 0n),
  POLYGON: route(['USDC'], 30, 120, true, 5n, 0n),
  PLASMA: route(['USDT'], 30, 120, true, 5n, 0n),
  SOLANA: route(['USDC', 'USDT'], 30, 120, true, 5n, 0n),
  SPARK: route(['BTC'], 10, 60, true, 5n, 0n),
  TRON: route(['USDT'], 60, 120, true, 100n, 0n),
  LIGHTNING: route(['BTC'], 10, 60, true, 5n, 0n),
};

/** Between two internal accounts of one platform: a ledger transfer, no rail, no service fee. */
export const BOOK_TRANSFER: RouteSpec = route('ANY_FIAT', 0, 300, true, 0n, 0n);

export function routeServes(spec: RouteSpec, currency: string, isCrypto: boolean): boolean {
  return spec.currencies === 'ANY_FIAT' ? !isCrypto : spec.currencies.includes(currency);
}
