// The internal-accounts module's public face: what app.ts wires and what other modules may use.
export { internalAccountRoutes } from './routes.js';
export { accountsHoldingMoney, balanceLimitReached, createAccountsLedger, creditableAccount, findAccountByDepositReference, findCustomerAccountIn, findInternalAccount, findInternalAccountRow, provisionAccountsOf, provisionCustomerAccounts, provisionPlatformAccounts, type InternalAccountRef } from './service.js';
export { fundingInstructions, newFundingReference, type FundingInstruction } from './funding-instructions.js';
export { INTERNAL_ACCOUNT_EVENTS, PaymentInstructions } from './schemas.js';
export { heldAddressForm, type InternalAccountRow } from './repo.js';
