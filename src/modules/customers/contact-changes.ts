import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { parseId } from '../../platform/ids.js';
import { checkContactFree, lockContact, moveTiedCredentials, tiedCredentials, type ContactKind, type TiedCredentials } from '../wallet-auth/index.js';
import type { TenantSecretBox } from '../../platform/crypto/secret-box.js';
import { updateCustomer } from './create-update.js';
import { findCustomer } from './repo.js';
import type { Customer } from './schemas.js';
import { isObject, type EndUserTerms } from './validation.js';

// Changes of the contacts a wallet's OTP credential is tied to (e-mail → EMAIL_OTP, phone →
// SMS_OTP), which the end user must sign (spec §4.3; upstream PATCH /customers/{id}).

/** The signed operation of each contact, and the activity the end user authorises. */
export const CONTACT_OPERATIONS = {
  email: { operation: 'customer.email', activity: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', parameter: 'userEmail' },
  phone: { operation: 'customer.phone', activity: 'ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER', parameter: 'userPhoneNumber' },
} as const;

export interface ContactChange {
  kind: ContactKind;
  contact: string;
  tied: TiedCredentials;
}

/** Which contact an update body sets (e-mail and phone together are refused by validation). */
export function contactKindOf(input: unknown): ContactKind | undefined {
  if (!isObject(input)) return undefined;
  if (typeof input.email === 'string' && input.phoneNumber === undefined) return 'email';
  if (typeof input.phoneNumber === 'string' && input.email === undefined) return 'phone';
  return undefined;
}

/**
 * The contact change that needs the end user's signature: the update changes the e-mail (or
 * phone) and the customer has EMAIL_OTP (or SMS_OTP) credentials tied to it. Undefined for a
 * plain update, which applies at once.
 */
export async function signedContactChange(db: DbOrTx, platformId: string, customerId: string, input: unknown): Promise<ContactChange | undefined> {
  const kind = contactKindOf(input);
  const uuid = parseId('Customer', customerId);
  if (!kind || !uuid) return undefined;
  const contact = (input as Record<string, string>)[kind === 'email' ? 'email' : 'phoneNumber']!;
  const row = await findCustomer(db, platformId, uuid);
  if (!row || row.deleted_at || contact === (kind === 'email' ? row.email : row.phone_number)) return undefined;
  const tied = await tiedCredentials(db, platformId, uuid, kind);
  return tied && { kind, contact, tied };
}

/** Refuses, before the challenge, a contact that another customer's wallet credential already carries. */
export async function checkContactChange(db: DbOrTx, platformId: string, customerId: string, change: ContactChange): Promise<void> {
  await checkContactFree(db, platformId, parseId('Customer', customerId)!, change.kind, change.contact);
}

/** The signed retry: the customer's contact and every credential bound at the 202 change together, or nothing does. */
export async function changeTiedContact(
  trx: Tx,
  clock: Clock,
  identifiers: TenantSecretBox,
  platformId: string,
  terms: EndUserTerms,
  customerId: string,
  input: unknown,
  bound: TiedCredentials,
): Promise<Customer> {
  const uuid = parseId('Customer', customerId)!;
  const contact = (input as Record<string, string>)[bound.kind === 'email' ? 'email' : 'phoneNumber']!;
  // The contact's lock before the customer row (wallet-auth README, Lock order): two customers'
  // changes (or an OTP add) tying one contact at the same instant check it one after the other.
  await lockContact(trx, platformId, bound.kind, contact);
  await checkContactFree(trx, platformId, uuid, bound.kind, contact);
  const customer = await updateCustomer(trx, clock, identifiers, platformId, terms, customerId, input, []);
  await moveTiedCredentials(trx, clock, platformId, uuid, bound, contact);
  return customer;
}
