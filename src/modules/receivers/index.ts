// The receivers module's public face: the receiver lookup routes app.ts registers, and the
// lookup's sender rule, which uma's GET /receiver/uma shares.
export { receiverRoutes } from './routes.js';
export { findLookupSender } from './service.js';
