// The verifications module's public face: what app.ts and the CLI wire.
export { verificationRoutes } from './routes.js';
export { decideManualReview, reviewUnderway } from './service.js';
export type { ManualReviewDecision } from './schemas.js';
export { VERIFICATION_EVENTS } from './schemas.js';
export { KYC_PAGE_PATH, KycLinkTokens } from './kyc-links.js';
