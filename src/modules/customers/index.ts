// The customers module's public face: what app.ts wires and what other modules may use.
export { customerRoutes } from './routes.js';
export { Address, BULK_UPLOAD_EVENTS, Country, CUSTOMER_EVENTS, DateOnly, Email, Phone, ResponseAddress, type ReviewStatus } from './schemas.js';
export { customerTypeOf } from './reads.js';
export { loadCustomerForReview, senderReadiness, setReviewStatus, type CustomerForReview, type SenderReadiness } from './review-state.js';
export { updateCustomer } from './create-update.js';
export { getEndUserTerms, mergeFieldErrors, type EndUserTerms } from './validation.js';
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
