// The receivers module's public face: the receiver lookup routes app.ts registers, the lookup's
// sender rule, which uma's GET /receiver/uma shares, the stored lookup a quote names by
// lookupId, and the purge of expired lookups.
export { receiverRoutes } from './routes.js';
export { findLookupSender, findReceiverLookup } from './service.js';
export { purgeExpiredReceiverLookups } from './repo.js';
