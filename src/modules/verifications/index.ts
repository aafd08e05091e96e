// The verifications module's public face: what app.ts wires.
export { verificationRoutes } from './routes.js';
export { reviewUnderway } from './service.js';
export { VERIFICATION_EVENTS } from './schemas.js';
export { KycLinkTokens } from './kyc-links.js';
