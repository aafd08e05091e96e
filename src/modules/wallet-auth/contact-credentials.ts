import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { consumeOtpChallenges, lockOtpContact, moveCredentialContact, otpContactTakenByOther, otpCredentialsOfCustomer } from './repo.js';

// The OTP credentials tied to a customer's contacts (EMAIL_OTP to its e-mail, SMS_OTP to its
// phone): a change of that contact needs the end user's signature and moves the credentials
// with it, all or nothing (spec §4.3, upstream PATCH /customers).

export type ContactKind = 'email' | 'phone';

const CREDENTIAL_TYPE = { email: 'EMAIL_OTP', phone: 'SMS_OTP' } as const;

/** The tied credentials a pending contact change must move, as they were when the 202 was issued. */
export interface TiedCredentials {
  kind: ContactKind;
  /** The wallet account whose session signs the change (the first tied one). */
  accountUuid: string;
  credentials: Array<{ id: string; contact: string }>;
}

/** The credentials tied to the customer's `kind` contact, or undefined when none is: the change needs no signature. */
export async function tiedCredentials(db: DbOrTx, platformId: string, customerUuid: string, kind: ContactKind): Promise<TiedCredentials | undefined> {
  const rows = await otpCredentialsOfCustomer(db, platformId, customerUuid, CREDENTIAL_TYPE[kind]);
  if (rows.length === 0) return undefined;
  return { kind, accountUuid: rows[0]!.account_id, credentials: rows.map((c) => ({ id: c.id, contact: c.nickname })) };
}

/**
 * The customer's contacts that an OTP credential is tied to but whose one-time code was never
 * confirmed (the credential has no `verified_at`): Corridor's contact verification is the
 * wallet's EMAIL_OTP / SMS_OTP login, so these contacts are still unverified.
 */
export async function unverifiedContacts(db: DbOrTx, platformId: string, customerUuid: string): Promise<Array<{ kind: ContactKind; credentialId: string }>> {
  const unverified: Array<{ kind: ContactKind; credentialId: string }> = [];
  for (const kind of ['email', 'phone'] as const) {
    for (const row of await otpCredentialsOfCustomer(db, platformId, customerUuid, CREDENTIAL_TYPE[kind])) {
      if (!row.verified_at) unverified.push({ kind, credentialId: formatId('AuthMethod', row.id) });
    }
  }
  return unverified;
}

/**
 * Takes the lock of `contact` as a `kind` OTP contact until the transaction ends (README, Lock
 * order, step 5). A transaction that ties a credential to a contact (an OTP add, a contact
 * change) takes it before `checkContactFree`, so of two tying one contact to two customers'
 * wallets at the same instant the second checks after the first has committed, and is refused.
 */
export async function lockContact(trx: Tx, platformId: string, kind: ContactKind, contact: string): Promise<void> {
  await lockOtpContact(trx, platformId, CREDENTIAL_TYPE[kind], contact);
}

/**
 * Refuses a contact that an OTP credential of another customer's wallet already carries: an
 * OTP identity belongs to one end user. E-mail: 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS; phone: 409
 * CONFLICT (upstream names no code for it).
 */
export async function checkContactFree(db: DbOrTx, platformId: string, customerUuid: string, kind: ContactKind, contact: string): Promise<void> {
  if (!(await otpContactTakenByOther(db, platformId, CREDENTIAL_TYPE[kind], contact, customerUuid))) return;
  if (kind === 'email') {
    throw new AppError('EMAIL_OTP_EMAIL_ALREADY_EXISTS', `The e-mail ${contact} is already the EMAIL_OTP credential of another wallet.`, { details: { field: 'email' } });
  }
  throw new AppError('CONFLICT', `The phone number ${contact} is already the SMS_OTP credential of another wallet.`, { details: { field: 'phoneNumber' } });
}

/**
 * The signed retry of a contact change: moves every credential bound at the 202 to `contact`, in
 * the transaction that changes the customer, and uses up the codes sent to the old contact. The tied set must be exactly the bound one (else 409
 * EMAIL_OTP_CREDENTIAL_SET_CHANGED) and each credential must still carry the contact it had then
 * (else 424 EMAIL_OTP_CREDENTIAL_SYNC_FAILED, e.g. a competing change was signed first); either
 * error leaves the customer and every credential as they were.
 */
export async function moveTiedCredentials(trx: Tx, clock: Clock, platformId: string, customerUuid: string, bound: TiedCredentials, contact: string): Promise<void> {
  const current = await otpCredentialsOfCustomer(trx, platformId, customerUuid, CREDENTIAL_TYPE[bound.kind], true);
  const ids = (list: Array<{ id: string }>) => list.map((c) => c.id).sort().join(',');
  if (ids(current) !== ids(bound.credentials)) {
    throw new AppError(
      'EMAIL_OTP_CREDENTIAL_SET_CHANGED',
      `The ${CREDENTIAL_TYPE[bound.kind]} credentials tied to this customer changed after the challenge was issued; send the change again for a new challenge.`,
    );
  }
  const now = clock.now();
  for (const credential of bound.credentials) {
    // Codes already sent to the old contact die with the move (a verify they passed before it
    // is refused at its signed retry: logins.ts, OTP_CONTACT_CHANGED).
    await consumeOtpChallenges(trx, credential.id, now);
    if (!(await moveCredentialContact(trx, credential.id, credential.contact, contact, now))) {
      throw new AppError('EMAIL_OTP_CREDENTIAL_SYNC_FAILED', `A tied ${CREDENTIAL_TYPE[bound.kind]} credential could not be updated: it no longer carries the contact the challenge was issued for. Nothing was changed.`, {
        details: { credentialId: formatId('AuthMethod', credential.id) },
      });
    }
  }
}
