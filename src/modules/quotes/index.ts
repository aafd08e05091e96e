// The quotes module's public face: the routes app.ts registers, and what a later caller (the
// deprecated transfer-in/out, UMA) needs to quote and execute on the same path.
export { quoteRoutes } from './routes.js';
export { createQuote } from './create.js';
export { prefetchNetworkFee, type PrefetchedNetworkFee } from './pricing.js';
export { executeLocked, executeQuote, loadQuote, prefetch, QUOTE_EXECUTE_OPERATION, readQuote, type Caller, type OutgoingPayments, type Prefetched, type QuoteDeps } from './execute.js';
export { Quote, QUOTE_SCHEMAS, QuoteRequest } from './schemas.js';
export { purgeEndedDailyVolumes, releaseDailyVolume } from './repo.js';
