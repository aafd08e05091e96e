import type { PaymentRail } from '../external-accounts/index.js';

/**
 * The simulated rails: every PaymentRail of UPSTREAM §5.6 with how long a payout on it takes to
 * settle and the currencies it carries. Settlement times are typical for the real network
 * (instant schemes seconds, batch schemes a business day, correspondent banking two days); a
 * sandbox platform skips the wait with its test clock (POST /sandbox/clock/advance).
 * `currencies: 'ANY_FIAT'` is a rail that carries any fiat currency (SWIFT, generic bank transfer).
 */
export interface RailSpec {
  settlementSeconds: number;
  currencies: readonly string[] | 'ANY_FIAT';
  description: string;
}

const MOBILE_MONEY_CURRENCIES = ['KES', 'UGX', 'TZS', 'RWF', 'MWK', 'ZMW', 'GHS', 'XOF', 'XAF', 'NGN'] as const;

export const RAILS: Record<PaymentRail, RailSpec> = {
  ACH: { settlementSeconds: 86_400, currencies: ['USD'], description: 'US batch ACH, next business day' },
  ACH_COLOMBIA: { settlementSeconds: 86_400, currencies: ['COP'], description: 'Colombian ACH, next business day' },
  BANK_TRANSFER: { settlementSeconds: 3_600, currencies: 'ANY_FIAT', description: 'Generic domestic bank transfer' },
  BRE_B: { settlementSeconds: 10, currencies: ['COP'], description: 'Colombian instant payments (Bre-B)' },
  CIPS: { settlementSeconds: 3_600, currencies: ['CNY'], description: 'Cross-border interbank payment system (China)' },
  FAST: { settlementSeconds: 10, currencies: ['SGD'], description: 'Singapore FAST, instant' },
  FASTER_PAYMENTS: { settlementSeconds: 10, currencies: ['GBP'], description: 'UK Faster Payments, instant' },
  FEDNOW: { settlementSeconds: 5, currencies: ['USD'], description: 'FedNow, instant' },
  INSTAPAY: { settlementSeconds: 10, currencies: ['PHP'], description: 'Philippine InstaPay, instant' },
  MOBILE_MONEY: { settlementSeconds: 60, currencies: MOBILE_MONEY_CURRENCIES, description: 'Mobile money wallets' },
  NEFT: { settlementSeconds: 1_800, currencies: ['INR'], description: 'Indian NEFT, half-hourly batches' },
  PAYNOW: { settlementSeconds: 10, currencies: ['SGD'], description: 'Singapore PayNow, instant' },
  PESONET: { settlementSeconds: 86_400, currencies: ['PHP'], description: 'Philippine PESONet, same or next day' },
  PIX: { settlementSeconds: 5, currencies: ['BRL'], description: 'Brazilian Pix, instant' },
  RTGS: { settlementSeconds: 3_600, currencies: 'ANY_FIAT', description: 'Real-time gross settlement (high value)' },
  RTP: { settlementSeconds: 5, currencies: ['USD'], description: 'The Clearing House RTP, instant' },
  SEPA: { settlementSeconds: 86_400, currencies: ['EUR'], description: 'SEPA Credit Transfer, next business day' },
  SEPA_INSTANT: { settlementSeconds: 10, currencies: ['EUR'], description: 'SEPA Instant Credit Transfer' },
  SPEI: { settlementSeconds: 30, currencies: ['MXN'], description: 'Mexican SPEI, near-instant' },
  SWIFT: { settlementSeconds: 172_800, currencies: 'ANY_FIAT', description: 'SWIFT correspondent banking, about two days' },
  UNIONPAY: { settlementSeconds: 600, currencies: ['CNY'], description: 'UnionPay account transfer' },
  UPI: { settlementSeconds: 10, currencies: ['INR'], description: 'Indian UPI, instant' },
  WIRE: { settlementSeconds: 3_600, currencies: ['USD'], description: 'US domestic wire (Fedwire), same day' },
};

/** Crypto and UMA payouts (no PaymentRail): settled on the network, about a minute. */
export const NETWORK_SETTLEMENT_SECONDS = 60;

/** Where money paid into a REALTIME_FUNDING quote lands before the payment uses it. */
export const FUNDING_RAIL = 'REALTIME_FUNDING';

/** Settlement account rail name of a destination without a PaymentRail (crypto, UMA). */
export const NETWORK_RAIL = 'NETWORK';

export function railCarries(rail: PaymentRail, currency: string): boolean {
  const spec = RAILS[rail];
  return spec.currencies === 'ANY_FIAT' ? !['BTC', 'USDC', 'USDT'].includes(currency) : spec.currencies.includes(currency);
}

/** The rail a payout goes out on: a PaymentRail, or NETWORK for crypto and UMA destinations. */
export type RailName = PaymentRail | typeof NETWORK_RAIL;

export function settlementSecondsOf(rail: RailName): number {
  return rail === NETWORK_RAIL ? NETWORK_SETTLEMENT_SECONDS : RAILS[rail].settlementSeconds;
}

export const PAYMENT_RAIL_NAMES = Object.keys(RAILS) as PaymentRail[];
