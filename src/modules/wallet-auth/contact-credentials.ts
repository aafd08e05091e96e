import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { emailCredentialsOfCustomer, updateCredential } from './repo.js';

/**
 * The wallet account whose EMAIL_OTP credential is tied to the customer's e-mail: changing
 * that e-mail needs a signature from one of its sessions. Undefined when none is.
 */
export async function accountTiedToEmail(db: DbOrTx, platformId: string, customerUuid: string): Promise<string | undefined> {
  return (await emailCredentialsOfCustomer(db, platformId, customerUuid))[0]?.account_id;
}

/** Moves the customer's EMAIL_OTP credentials to the new e-mail, in the transaction that changes it. */
export async function retieEmailCredentials(trx: Tx, clock: Clock, platformId: string, customerUuid: string, email: string): Promise<void> {
  const now = clock.now();
  for (const credential of await emailCredentialsOfCustomer(trx, platformId, customerUuid, true)) {
    await updateCredential(trx, credential.id, { nickname: email, updated_at: now });
  }
}
