// The customers module's public face: what app.ts wires and what other modules may use.
export { customerRoutes } from './routes.js';
export { Address, BeneficialOwner, BULK_UPLOAD_EVENTS, Country, CUSTOMER_EVENTS, CUSTOMER_SCHEMAS, DateOnly, Email, Phone, OWNER_ROLES, ResponseAddress, type ReviewStatus } from './schemas.js';
export { customerTypeOf, type CustomerKind } from './reads.js';
export { findLiveCustomerById, findLiveCustomerByUmaAddress, liveCustomerIdByPlatformCustomerId } from './repo.js';
export { holdForReview, loadCustomerForReview, senderReadiness, setReviewStatus, type CustomerForReview, type SenderReadiness } from './review-state.js';
export { updateCustomer } from './create-update.js';
export { freeTextErrors, getEndUserTerms, mergeFieldErrors, type EndUserTerms } from './validation.js';
export {
  clearValue,
  maskIdentifier,
  openIdentifier,
  RESEAL_BATCH,
  RESEAL_JOB,
  resealCustomerIdentifiers,
  SEAL_PLAINTEXT_JOB,
  sealIdentifier,
  type SealedIdentifier,
} from './identifiers.js';
export { findCustomerByUmaAddress, findCustomer } from './repo.js';
