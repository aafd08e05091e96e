import type { DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { customerTypeOf } from '../customers/index.js';
import { checkExternalOwner, findExternalAccount } from '../external-accounts/index.js';
import { loadQuote } from '../quotes/index.js';

// The rule of this module (README.md): none of Corridor's payment providers requires contact
// verification or strong customer authentication, so each operation finds what it names (404,
// 410) and then answers 409 CONFLICT, the upstream's code for "not required". Nothing is written.

export type Contact = 'EMAIL' | 'PHONE';

const SCA_NOT_REQUIRED =
  "Corridor's payment providers do not require strong customer authentication: there are no factors to enrol, list, delete or reset, " +
  'no SCA login or security event, no beneficiary to trust, and quotes never wait for authorization (no quote is PENDING_AUTHORIZATION or carries an scaChallenge).';

function scaNotRequired(details: Record<string, string>): AppError {
  return new AppError('CONFLICT', SCA_NOT_REQUIRED, { details: { reason: 'SCA_NOT_REQUIRED', ...details } });
}

/**
 * POST /customers/{customerId}/verify-email|verify-phone[/confirm]: 404 USER_NOT_FOUND, 410
 * CUSTOMER_DELETED, else 409. An embedded wallet's e-mail or phone is confirmed by its first
 * one-time-code login instead (what POST /customers/{customerId}/kyc-link waits for): the message
 * says so, since that 409 is the one an integrator may have come from.
 */
export async function contactVerificationNotRequired(db: DbOrTx, platformId: string, customerId: string, contact: Contact): Promise<never> {
  await customerTypeOf(db, platformId, customerId);
  const what = contact === 'EMAIL' ? 'e-mail address' : 'phone number';
  throw new AppError(
    'CONFLICT',
    `Corridor's payment providers do not require contact verification: there is no code to send or confirm for the customer's ${what}. ` +
      'An embedded wallet confirms the e-mail or phone it signs in with by its first one-time-code login (POST /auth/credentials/{id}/verify).',
    { details: { reason: 'CONTACT_VERIFICATION_NOT_REQUIRED', contact, customerId } },
  );
}

/** The /sca operations: 404 USER_NOT_FOUND, 410 CUSTOMER_DELETED, else 409. No factor or reset exists to be not found. */
export async function scaNotRequiredForCustomer(db: DbOrTx, platformId: string, customerId: string): Promise<never> {
  await customerTypeOf(db, platformId, customerId);
  throw scaNotRequired({ customerId });
}

/**
 * Trusting or untrusting a beneficiary: a customer's external account (the platform's own, like
 * an unknown one, is 404 REFERENCE_NOT_FOUND, as GET /customers/external-accounts/{id} answers),
 * not one of a deleted customer (410), else 409.
 */
export async function scaNotRequiredForBeneficiary(db: DbOrTx, platformId: string, externalAccountId: string): Promise<never> {
  const account = await findExternalAccount(db, platformId, externalAccountId);
  if (account.customerUuid === null) throw new AppError('REFERENCE_NOT_FOUND', `External account ${externalAccountId} not found.`);
  await checkExternalOwner(db, platformId, account, 'destination');
  throw scaNotRequired({ externalAccountId: account.id, customerId: formatId('Customer', account.customerUuid) });
}

/** Authorizing a quote or resending its code: 404 QUOTE_NOT_FOUND, else 409. */
export async function scaNotRequiredForQuote(db: DbOrTx, platformId: string, quoteUuid: string): Promise<never> {
  const quote = await loadQuote(db, platformId, quoteUuid);
  throw scaNotRequired({ quoteId: formatId('Quote', quote.id) });
}
