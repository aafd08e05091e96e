// The verifications module's public face: what app.ts wires.
export { verificationRoutes } from './routes.js';
export { reviewUnderway } from './service.js';
