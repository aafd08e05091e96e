// The beneficial-owners module's public face: what app.ts wires and what other modules may use.
export { beneficialOwnerRoutes } from './routes.js';
export type { OwnerRow } from './repo.js';
export { ownerHolder, ownersForReview, ownersOfCustomers, resealOwnerIdentifiers, setBeneficialOwnerStatuses } from './service.js';
