import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { parseId } from '../../platform/ids.js';
import { accountTiedToEmail, retieEmailCredentials } from '../wallet-auth/index.js';
import { updateCustomer } from './create-update.js';
import { findCustomer } from './repo.js';
import type { Customer } from './schemas.js';
import { isObject, type EndUserTerms } from './validation.js';

// Changes of the contacts a wallet credential is tied to, which the end user must sign.

/**
 * When this update changes the e-mail that a wallet's EMAIL_OTP credential is tied to, the
 * wallet account whose session must sign it (spec §4.3); otherwise undefined.
 */
export async function emailChangeSigner(db: DbOrTx, platformId: string, customerId: string, input: unknown): Promise<string | undefined> {
  const email = isObject(input) && typeof input.email === 'string' ? input.email : undefined;
  const uuid = parseId('Customer', customerId);
  if (email === undefined || !uuid) return undefined;
  const row = await findCustomer(db, platformId, uuid);
  if (!row || row.deleted_at || row.email === email) return undefined;
  return accountTiedToEmail(db, platformId, uuid);
}

/** The signed e-mail change: the customer and its EMAIL_OTP credentials change together. */
export async function changeTiedEmail(trx: Tx, clock: Clock, platformId: string, terms: EndUserTerms, customerId: string, input: unknown): Promise<Customer> {
  const customer = await updateCustomer(trx, clock, platformId, terms, customerId, input, []);
  await retieEmailCredentials(trx, clock, platformId, parseId('Customer', customerId)!, customer.email!);
  return customer;
}
