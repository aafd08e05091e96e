import { currency as currencyOf } from '../../platform/currencies.js';
import { AppError } from '../../platform/errors.js';
import { amountToWire, MAX_WIRE_AMOUNT } from '../../platform/money.js';
import type { PlatformConfig } from '../config/index.js';
import { formatRate } from './pricing.js';
import { RAILS, routeServes } from './rails.js';
import type { ExchangeRate, ExchangeRatesQuery } from './schemas.js';
import { hasCorridor, hasRate, priceRequest, RATED_CURRENCIES, type RateSnapshot } from './service.js';

const view = (code: string) => {
  const c = currencyOf(code);
  return { code: c.code, name: c.name, symbol: c.symbol, decimals: c.decimals };
};

/**
 * GET /exchange-rates: for each source currency the platform sends (supportedCurrencies with
 * OUTGOING), each destination currency with a rate, and each rail that pays it out, what
 * `sendingAmount` buys there now — the same pricing as a SENDING-locked quote, the platform's fee
 * included. A source the platform does not send from lists nothing.
 */
export function listExchangeRates(snapshot: RateSnapshot, config: PlatformConfig, query: ExchangeRatesQuery): ExchangeRate[] {
  const amount = BigInt(query.sendingAmount ?? 10000);
  const sources = config.supportedCurrencies.filter(
    (c) => c.enabledTransactionTypes.includes('OUTGOING') && (!query.sourceCurrency || c.currencyCode === query.sourceCurrency) && hasRate(snapshot, c.currencyCode),
  );
  const destinations = (query.destinationCurrency ? [...new Set(query.destinationCurrency)] : RATED_CURRENCIES).filter((code) => hasRate(snapshot, code));
  const rates: ExchangeRate[] = [];
  for (const source of sources) {
    for (const destination of destinations) {
      // A corridor whose rate rounds to 0 has no price, as one without a rate.
      if (!hasCorridor(snapshot, source.currencyCode, destination)) continue;
      for (const [rail, route] of Object.entries(RAILS) as Array<[keyof typeof RAILS, (typeof RAILS)[keyof typeof RAILS]]>) {
        if (!routeServes(route, destination)) continue;
        const pricing = priceRequest({
          snapshot,
          config,
          sendingCurrency: source.currencyCode,
          receivingCurrency: destination,
          route,
          lockedSide: 'SENDING',
          amount,
        });
        const fixed = pricing.fees.serviceFixed + pricing.fees.platformFixed;
        const priced = pricing.priced;
        // A fixed fee the answer cannot carry: PATCH /config keeps a platform's fixed fee within
        // its maxAmount, which may itself reach 2^53 − 1 (or a row predates that rule).
        if (fixed > MAX_WIRE_AMOUNT) {
          throw new AppError(
            'AMOUNT_OUT_OF_RANGE',
            `The fixed fees from ${source.currencyCode} to ${destination} exceed what the API carries exactly (2^53 − 1 minor units): the platform's fixed fee (feeConfigs) is too large to price.`,
            { details: { sourceCurrency: source.currencyCode, destinationCurrency: destination, destinationPaymentRail: rail } },
          );
        }
        // As a quote for this amount would be (AMOUNT_OUT_OF_RANGE), not an amount the answer cannot carry.
        if (priced && priced.received > MAX_WIRE_AMOUNT) {
          throw new AppError('AMOUNT_OUT_OF_RANGE', `sendingAmount ${amount} buys more ${destination} than the API carries exactly (2^53 − 1 minor units).`, {
            details: { sendingAmount: amountToWire(amount), sourceCurrency: source.currencyCode, destinationCurrency: destination },
          });
        }
        rates.push({
          sourceCurrency: view(source.currencyCode),
          sendingAmount: amountToWire(amount),
          minSendingAmount: source.minAmount,
          maxSendingAmount: source.maxAmount,
          destinationCurrency: view(destination),
          destinationPaymentRail: rail,
          receivingAmount: priced ? amountToWire(priced.received) : 0,
          exchangeRate: Number(formatRate(pricing.corridor.rate)),
          // An amount that makes no transfer (a quote for it is INVALID_AMOUNT) still shows what the rail
          // charges at least: the fixed fees. Every fee includes them, so `total` is never below `fixed`.
          fees: { fixed: amountToWire(fixed), total: amountToWire(priced ? priced.serviceFee + priced.platformFee : fixed) },
          updatedAt: snapshot.asOf.toISOString(),
        });
      }
    }
  }
  return rates;
}
