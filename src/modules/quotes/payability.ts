import { minorUnits } from '../../platform/currencies.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { senderReadiness } from '../customers/index.js';
import { assertCanReceive, findExternalAccount, type ExternalAccountDestination } from '../external-accounts/index.js';
import { creditableAccount, type InternalAccountRef } from '../internal-accounts/index.js';
import { convertDown, corridorRate, type RateSnapshot } from '../rates/index.js';

// The rules a quote is held to when it is created and again when it is executed: a quote lives
// for minutes, and in that time its customer's review can be withdrawn, the customer deleted, or
// its destination deleted or refused, the external account it pulls from deleted, or the customer
// owning either account deleted (module README, "Refusals").

/** The sending customer may send: live (410 once deleted), terms accepted (403), KYC/KYB APPROVED. Answers it as read. */
export async function checkSender(trx: DbOrTx, platformId: string, customerUuid: string): Promise<{ uuid: string; platformCustomerId: string }> {
  const sender = await senderReadiness(trx, platformId, customerUuid);
  if (!sender) throw new AppError('USER_NOT_FOUND', `Customer ${formatId('Customer', customerUuid)} was not found.`);
  if (sender.deleted) throw new AppError('CUSTOMER_DELETED', `Customer ${sender.id} has been deleted: it can no longer send money.`, { details: { customerId: sender.id } });
  if (!sender.termsAccepted) {
    throw new AppError('END_USER_TERMS_NOT_ACCEPTED', `Customer ${sender.id} has not accepted the end-user terms: send endUserTermsConsent (PATCH /customers/{customerId}) first.`, {
      details: { customerId: sender.id },
    });
  }
  if (sender.reviewStatus !== 'APPROVED') {
    throw new AppError('USER_NOT_READY', `Customer ${sender.id} cannot send money until its KYC/KYB review is APPROVED (now ${sender.reviewStatus}).`, {
      details: { customerId: sender.id, status: sender.reviewStatus },
    });
  }
  return { uuid: customerUuid, platformCustomerId: sender.platformCustomerId };
}

/** The external destination may receive `receivedAmount` (ownership verification above its threshold, not refused). */
export function checkDestination(destination: ExternalAccountDestination, receivedAmount: bigint, currency: string, snapshot: RateSnapshot): void {
  const inEur = convertDown(receivedAmount, corridorRate(snapshot, currency, 'EUR').mid, minorUnits(currency), minorUnits('EUR'));
  assertCanReceive(destination, inEur);
}

/** An internal account may be credited: not one of a deleted customer (410), who could never send the money on. */
export async function checkCreditable(trx: DbOrTx, platformId: string, account: InternalAccountRef): Promise<void> {
  if (await creditableAccount(trx, platformId, account)) return;
  const customerId = formatId('Customer', account.customerUuid!);
  throw new AppError('CUSTOMER_DELETED', `Internal account ${account.id} belongs to customer ${customerId}, which has been deleted: it can no longer receive money.`, {
    details: { customerId, accountId: account.id },
  });
}

/** The external account a pull quote draws on: there (404 once deleted) and one money can be pulled from (400). */
export async function pullSource(trx: DbOrTx, platformId: string, accountId: string): Promise<ExternalAccountDestination> {
  const account = await findExternalAccount(trx, platformId, accountId);
  if (account.pullRails.length === 0) {
    throw invalidInput([{ field: 'source.accountId', message: 'this external account cannot be pulled from: only ACTIVE first-party USD (ACH) or EUR (SEPA) bank accounts whose holder name was not refused can fund a quote' }]);
  }
  return account;
}
