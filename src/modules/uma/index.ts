// The uma module's public face: what app.ts wires and what other modules may use.
export { registerUmaWellKnownRoutes, umaRoutes, type UmaRouteDeps } from './routes.js';
export { vaspKeySource, type VaspKeys, type VaspKeySource } from './keys.js';
export { LightningNode } from './invoices.js';
export { findUmaLookup } from './lookup.js';
export { purgeExpiredUmaLookups, purgeSpentNonces } from './repo.js';
export type { StoredLookup } from './schemas.js';
export { UmaSender, type UmaQuote, type UmaQuoteRequest, type UmaSenderDeps } from './sending.js';
export { VaspTransport } from './transport.js';
export { SimulatedTestVasp } from './simulated-vasp.js';
