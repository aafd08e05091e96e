import { CredentialFlows } from './credentials.js';
import type { WalletAuthDeps } from './context.js';
import { LoginFlows } from './logins.js';
import { OneTimeCodes } from './otp.js';
import { SessionFlows } from './sessions.js';
import { WalletFlows } from './wallets.js';

/**
 * Wallet credentials, OTPs, sessions and the wallet itself (spec §2.4, §4.2–§4.5), one flow per
 * file. Every mutation that needs the end user's consent goes through `deps.signed` (the
 * signed-retry pattern); each flow registers the operations it settles.
 */
export class WalletAuth {
  readonly credentials: CredentialFlows;
  readonly logins: LoginFlows;
  readonly sessions: SessionFlows;
  readonly wallets: WalletFlows;

  constructor(deps: WalletAuthDeps) {
    const otp = new OneTimeCodes(deps);
    this.credentials = new CredentialFlows(deps, otp);
    this.sessions = new SessionFlows(deps);
    this.logins = new LoginFlows(deps, otp, this.sessions);
    this.wallets = new WalletFlows(deps);
  }
}
