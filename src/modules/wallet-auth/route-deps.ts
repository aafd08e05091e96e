import type { ModuleDeps } from '../../platform/module.js';
import type { WalletAuth } from './service.js';
import type { SignedRequests } from './signed-retry.js';

/**
 * What a route that needs the end user's signature receives from the wiring: wallet-auth's own
 * routes and those of modules with signed operations (customers, internal-accounts). Its own
 * file so that routes.ts and index.ts both use it without importing each other.
 */
export interface WalletAuthRouteDeps extends ModuleDeps {
  walletAuth: WalletAuth;
  signed: SignedRequests;
  enclavePublicKey: string;
}
