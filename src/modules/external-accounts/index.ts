// The external-accounts module's public face: what app.ts wires and what other modules may use.
export { externalAccountRoutes, type ExternalAccountRouteDeps } from './routes.js';
export { EXTERNAL_ACCOUNT_EVENTS, SHARED_SCHEMAS as EXTERNAL_ACCOUNT_SCHEMAS, ExternalAccountRef } from './schemas.js';
export type { BeneficiaryVerificationStatus, ExternalAccount, ExternalAccountStatus, OwnershipType } from './schemas.js';
export type { DestinationNetwork, ExternalAccountType, PaymentRail } from './variants.js';
export type { InstitutionDirectory, BeneficiaryQuery } from './beneficiary.js';
export {
  accountOwnerDeleted,
  checkExternalOwner,
  externalOwnerDeleted,
  assertCanReceive,
  findExternalAccount,
  OWNERSHIP_THRESHOLD,
  primaryIdentifierOf,
  receiveDecision,
  type ExternalAccountDestination,
  type ReceiveDecision,
} from './lookup.js';
export { accountSuffix } from './sandbox-suffix.js';
export { LIVENESS_PATH } from './ownership.js';
export { checkWithdrawalAddress, type WithdrawalNetwork } from './addresses.js';
export type { NetworkScope } from './formats.js';
