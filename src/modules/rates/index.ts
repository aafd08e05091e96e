// The rates module's public face: pricing (rates, spreads, fees, the rounding rule), the rail
// catalogue the payments side settles by, and the GET /exchange-rates routes app.ts registers.
export { rateRoutes } from './routes.js';
export { BOOK_TRANSFER, NETWORKS, RAILS, routeServes, type RouteSpec } from './rails.js';
export {
  convertDown,
  formatRate,
  fromUsdMinor,
  NO_FEES,
  parseRate,
  priceTransfer,
  RATE_SCALE,
  UNIT_RATE,
  type FeeSchedule,
  type Priced,
  type ScaledRate,
} from './pricing.js';
export { builtInRates, HttpRateProvider, type RateProvider, type RateTable } from './provider.js';
export {
  corridorRate,
  ExchangeRates,
  platformFeeOf,
  priceRequest,
  RATE_WINDOW_MS,
  RATED_CURRENCIES,
  spreadBps,
  type CorridorRate,
  type PlatformFeeOverride,
  type Pricing,
  type RateSnapshot,
} from './service.js';
export { CurrencyView, PaymentRailSchema } from './schemas.js';
