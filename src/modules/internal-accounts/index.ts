// The internal-accounts module's public face: what app.ts wires and what other modules may use.
export { internalAccountRoutes } from './routes.js';
export { createAccountsLedger, provisionAccountsOf, provisionCustomerAccounts, provisionPlatformAccounts } from './service.js';
export { INTERNAL_ACCOUNT_EVENTS, PaymentInstructions } from './schemas.js';
