// The customers module's public face: what app.ts wires and what other modules may use.
export { customerRoutes } from './routes.js';
export { Address, Country, DateOnly, Email, Phone, ResponseAddress, type ReviewStatus } from './schemas.js';
export { customerTypeOf, loadCustomerForReview, mergeFieldErrors, setReviewStatus, type CustomerForReview } from './service.js';
