import { randomUUID } from 'node:crypto';
import type { Tx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { balanceLimitReached, findAccountByDepositReference } from '../internal-accounts/index.js';
import { LedgerError } from '../ledger/index.js';
import { depositRailsOf, toTransaction, type FundingDeposits, type IncomingTransaction } from '../transactions/index.js';
import type { SandboxDepositRequest } from './schemas.js';

/**
 * POST /sandbox/deposits: a bank (or wallet) pays an account's funding instructions. The deposit
 * takes the same way as one the production rail provider reports (FundingDeposits.receive), so
 * the platform sees what it will see in production: an INCOMING transaction, credited at once.
 * What production keeps for the operator (unknown reference, account not ACTIVE, another
 * currency, past the balance limit) is the caller's error here.
 */
export async function simulateDeposit(trx: Tx, deposits: FundingDeposits, platformId: string, body: SandboxDepositRequest): Promise<IncomingTransaction> {
  const account = await findAccountByDepositReference(trx, body.reference, platformId);
  if (!account) throw new AppError('REFERENCE_NOT_FOUND', `No internal account of the platform has funding instructions with the reference or address ${body.reference}.`);
  const rails = depositRailsOf(account, body.reference);
  const rail = body.rail ?? rails[0];
  if (!rail || !rails.includes(rail)) {
    throw invalidInput([{ field: 'rail', message: `a deposit to these instructions arrives on ${rails.join(', ') || 'no rail'}`, constraint: { enum: rails } }]);
  }
  const currency = body.currency ?? account.currency;
  const amount = BigInt(body.amount);
  let outcome;
  try {
    outcome = await deposits.receive(trx, { depositId: body.depositId ?? `sandbox-${randomUUID()}`, reference: body.reference, currency, amount, rail, ...(body.sender ? { sender: body.sender } : {}) }, { platformId });
  } catch (error) {
    if (error instanceof LedgerError && error.reason === 'BALANCE_LIMIT') throw balanceLimitReached(account.id);
    throw error;
  }
  if (!outcome.credited) {
    if (outcome.reason === 'CURRENCY_MISMATCH') {
      throw new AppError('INVALID_CURRENCY', `The instructions ${body.reference} take ${account.currency}, not ${currency}.`, { details: { currency, accountCurrency: account.currency } });
    }
    // Said as sandbox funding says it.
    if (outcome.ownerDeleted && account.customer_id) {
      throw new AppError('CONFLICT', `The account of the instructions ${body.reference} belongs to a deleted customer and takes no deposits.`, {
        details: { reason: 'CUSTOMER_DELETED', accountId: formatId('InternalAccount', account.id), customerId: formatId('Customer', account.customer_id) },
      });
    }
    throw new AppError('CONFLICT', `The account of the instructions ${body.reference} is ${account.status} and takes no deposits.`, { details: { status: account.status } });
  }
  const transaction = toTransaction(outcome.transaction) as IncomingTransaction;
  // The same deposit is the same account, amount and currency: its reference may be spelt otherwise
  // (case, spaces, hyphens), as the match above allows.
  if (outcome.repeated && (transaction.receivedAmount.amount !== Number(amount) || transaction.receivedAmount.currency.code !== currency || outcome.transaction.destination_account_id !== account.id)) {
    throw new AppError('CONFLICT', `Deposit ${body.depositId} was already received for another account, amount or currency.`, { details: { transactionId: transaction.id } });
  }
  return transaction;
}
