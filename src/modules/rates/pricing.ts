import { applyBasisPoints } from '../../platform/money.js';

/**
 * Integer pricing: rates are fixed-point decimals (RATE_SCALE fractional digits) held as bigint,
 * amounts are bigint minor units, and every division says which way it rounds (README: the
 * rounding rule). Nothing here touches a float.
 */
export const RATE_SCALE = 18;
const ONE = 10n ** BigInt(RATE_SCALE);
const BPS = 10_000n;

/** A rate: receiving major units per one sending major unit, × 10^RATE_SCALE. */
export type ScaledRate = bigint;

export const UNIT_RATE: ScaledRate = ONE;

/** `"0.866"` → 866n / 1000n. Callers pass validated decimal strings. */
export function parseDecimal(text: string): { num: bigint; den: bigint } {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new Error(`not a decimal: ${text}`);
  const fraction = match[2] ?? '';
  return { num: BigInt(match[1]! + fraction), den: 10n ** BigInt(fraction.length) };
}

/** The scaled rate as its exact decimal string, trailing zeros trimmed ("0.92", "1"). */
export function formatRate(rate: ScaledRate): string {
  const digits = rate.toString().padStart(RATE_SCALE + 1, '0');
  const whole = digits.slice(0, -RATE_SCALE);
  const fraction = digits.slice(-RATE_SCALE).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

export function parseRate(text: string): ScaledRate {
  const { num, den } = parseDecimal(text);
  return (num * ONE) / den;
}

/**
 * The rate from `from` to `to` given both currencies' units per USD, less `spreadBps`: how many
 * `to` units one `from` unit buys. Rounded down at the last fixed-point digit, so Corridor never
 * quotes better than the market less its spread.
 */
export function crossRate(fromPerUsd: string, toPerUsd: string, spreadBps: bigint): ScaledRate {
  const from = parseDecimal(fromPerUsd);
  const to = parseDecimal(toPerUsd);
  return (to.num * from.den * (BPS - spreadBps) * ONE) / (to.den * from.num * BPS);
}

/** `sent` minor units of the sending currency at `rate`, in receiving minor units: rounded down. */
export function convertDown(sent: bigint, rate: ScaledRate, sendingDecimals: number, receivingDecimals: number): bigint {
  return (sent * rate * 10n ** BigInt(receivingDecimals)) / (ONE * 10n ** BigInt(sendingDecimals));
}

/** The fewest sending minor units that buy at least `received` at `rate` (rounded up). */
export function sendingFor(received: bigint, rate: ScaledRate, sendingDecimals: number, receivingDecimals: number): bigint {
  const num = received * ONE * 10n ** BigInt(sendingDecimals);
  const den = rate * 10n ** BigInt(receivingDecimals);
  return (num + den - 1n) / den;
}

/** A fixed amount in US cents, in `currency`'s minor units at `usdToCurrency`: rounded up. */
export function fromUsdMinor(usdMinor: bigint, usdToCurrency: ScaledRate, decimals: number): bigint {
  const num = usdMinor * usdToCurrency * 10n ** BigInt(decimals);
  const den = ONE * 100n;
  return (num + den - 1n) / den;
}

/** What a transfer pays besides the amount sent; all in sending minor units, bps of the amount sent. */
export interface FeeSchedule {
  serviceFixed: bigint;
  serviceBps: bigint;
  platformFixed: bigint;
  platformBps: bigint;
}

export const NO_FEES: FeeSchedule = { serviceFixed: 0n, serviceBps: 0n, platformFixed: 0n, platformBps: 0n };

export interface Priced {
  /** What is converted and delivered, excluding fees (sending minor units). */
  sent: bigint;
  /** Corridor's service fee, including any remainder of a SENDING-locked total (sending minor units). */
  serviceFee: bigint;
  /** Of which the variable part (bps of `sent`, plus that remainder). */
  serviceVariableFee: bigint;
  /** The platform's fee (sending minor units). */
  platformFee: bigint;
  /** sent + serviceFee + platformFee: what the sender pays. */
  total: bigint;
  /** What the receiver gets (receiving minor units). */
  received: bigint;
}

function feesOn(sent: bigint, fees: FeeSchedule): { service: bigint; serviceVariable: bigint; platform: bigint } {
  const serviceVariable = applyBasisPoints(sent, fees.serviceBps);
  return {
    service: fees.serviceFixed + serviceVariable,
    serviceVariable,
    platform: fees.platformFixed + applyBasisPoints(sent, fees.platformBps),
  };
}

const costOf = (sent: bigint, fees: FeeSchedule) => {
  const f = feesOn(sent, fees);
  return sent + f.service + f.platform;
};

/**
 * Prices a transfer whose one side is locked (README, "Rounding"):
 * - SENDING: the sender pays exactly `amount`. `sent` is the largest amount whose cost
 *   (sent + fees on it) fits in it; the remainder (0–2 minor units, from rounding the fees)
 *   goes to the service fee. The receiver gets `sent` converted, rounded down.
 * - RECEIVING: the receiver gets exactly `amount`. `sent` is the fewest sending units that buy
 *   it (rounded up); fees are computed on `sent` and added.
 * Undefined when nothing can be sent (the fees eat a SENDING amount, or it converts to 0).
 */
export function priceTransfer(input: {
  lockedSide: 'SENDING' | 'RECEIVING';
  amount: bigint;
  rate: ScaledRate;
  sendingDecimals: number;
  receivingDecimals: number;
  fees: FeeSchedule;
}): Priced | undefined {
  const { amount, rate, sendingDecimals: ds, receivingDecimals: dr, fees } = input;
  if (amount <= 0n || rate <= 0n) return undefined;
  if (input.lockedSide === 'RECEIVING') {
    const sent = sendingFor(amount, rate, ds, dr);
    const f = feesOn(sent, fees);
    return { sent, serviceFee: f.service, serviceVariableFee: f.serviceVariable, platformFee: f.platform, total: sent + f.service + f.platform, received: amount };
  }
  // cost(sent) grows by 1 to 3 per unit of sent (each bps term by at most 1): start from the
  // estimate without rounding and step to the largest sent whose cost fits.
  const fixed = fees.serviceFixed + fees.platformFixed;
  if (amount - fixed <= 0n) return undefined;
  let sent = ((amount - fixed) * BPS) / (BPS + fees.serviceBps + fees.platformBps);
  while (sent > 0n && costOf(sent, fees) > amount) sent -= 1n;
  while (costOf(sent + 1n, fees) <= amount) sent += 1n;
  if (sent <= 0n) return undefined;
  const f = feesOn(sent, fees);
  const remainder = amount - sent - f.service - f.platform;
  const received = convertDown(sent, rate, ds, dr);
  if (received <= 0n) return undefined;
  return {
    sent,
    serviceFee: f.service + remainder,
    serviceVariableFee: f.serviceVariable + remainder,
    platformFee: f.platform,
    total: amount,
    received,
  };
}
