// The wallet-auth module's public face: what app.ts wires and what other modules may use, e.g.
// a route of another module that needs the end user's signature (the signed-retry helpers).
export { checkContactFree, lockContact, moveTiedCredentials, tiedCredentials, unverifiedContacts, type ContactKind, type TiedCredentials } from './contact-credentials.js';
export { OPERATIONS } from './context.js';
export { LocalEnclave, type WalletEnclave } from './enclave/enclave.js';
export { answerSignedRetry, sendOutcome, signedRetryHeaders, SignedRetryHeaders, walletSignature } from './http.js';
export { OidcVerifier } from './oidc.js';
export { purgeEndedSessions, purgeOtpChallenges, purgeSpentOidcTokens } from './repo.js';
export type { WalletAuthRouteDeps } from './route-deps.js';
export { walletAuthRoutes } from './routes.js';
export { SignedRequestChallenge, WalletExportRequest, WalletExportResponse, WalletOperationProcessing } from './schemas.js';
export { WalletAuth } from './service.js';
export { SignedRequests } from './signed-retry.js';
export { initialiseWallets } from './wallets.js';
