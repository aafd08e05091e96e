// The tokens module's public face: what app.ts, the CLI and other modules may use.
export { tokenRoutes } from './routes.js';
export { createToken, TokenAuthenticator, type CreatedToken } from './service.js';
