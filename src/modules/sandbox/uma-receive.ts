import type { Db } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import type { IdempotencyScope } from '../../platform/idempotency.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import { formatId, parseId } from '../../platform/ids.js';
import { getConfigRow } from '../config/index.js';
import { findLiveCustomerById, findLiveCustomerByUmaAddress } from '../customers/index.js';
import { toTransaction, type IncomingPayments, type IncomingTransaction } from '../transactions/index.js';
import type { SandboxUmaReceiveRequest } from './schemas.js';

/**
 * POST /sandbox/uma/receive: a sender at an outside VASP pays one of the platform's customers.
 * The money is taken as arrived (the sandbox plays the sender and its Lightning payment); the
 * platform decides through the approval round trip like for any UMA payment, and the answer is
 * the incoming transaction as the decision left it. `sentAs` (the request's Idempotency-Key): one
 * sender's payment however often the request is retried, whatever failed (`IncomingPayments.receive`).
 */
export async function simulateUmaReceive(db: Db, incoming: IncomingPayments, platformId: string, body: SandboxUmaReceiveRequest, sentAs?: IdempotencyScope): Promise<IncomingTransaction> {
  if ((body.receiverUmaAddress === undefined) === (body.customerId === undefined)) {
    throw invalidInput([{ field: 'receiverUmaAddress', message: 'give exactly one of receiverUmaAddress and customerId' }]);
  }
  const sender = requireUmaAddress('senderUmaAddress', body.senderUmaAddress);
  let customer: { id: string; uma_address: string; review_status: string } | undefined;
  if (body.receiverUmaAddress !== undefined) {
    const receiver = requireUmaAddress('receiverUmaAddress', body.receiverUmaAddress);
    customer = await findLiveCustomerByUmaAddress(db, platformId, receiver.address);
    if (!customer) throw new AppError('UMA_NOT_FOUND', `No customer of the platform has the UMA address ${receiver.address}.`);
  } else {
    customer = await findLiveCustomerById(db, platformId, parseId('Customer', body.customerId!)!);
    if (!customer) throw new AppError('USER_NOT_FOUND', `Customer ${body.customerId} was not found.`);
  }
  // As a pay request from a real VASP is refused (uma README, "Receiver KYC"): compliance rejected the customer.
  if (customer.review_status === 'REJECTED') throw new AppError('USER_NOT_READY', `Customer ${formatId('Customer', customer.id)} cannot receive payments: its review was REJECTED.`);
  const config = await getConfigRow(db, platformId);
  const code = body.receivingCurrencyCode;
  const entry = config.supported_currencies.find((c) => c.currencyCode === code && c.enabledTransactionTypes.includes('INCOMING'));
  if (!entry) {
    throw new AppError('INVALID_CURRENCY', `The platform does not receive ${code}: add it to supportedCurrencies with INCOMING enabled (PATCH /config).`, { details: { currency: code } });
  }
  const amount = body.receivingCurrencyAmount;
  if (amount < entry.minAmount || amount > entry.maxAmount) {
    throw new AppError('AMOUNT_OUT_OF_RANGE', `${code} ${amount} is outside the platform's ${entry.minAmount}–${entry.maxAmount}.`, {
      details: { min: entry.minAmount, max: entry.maxAmount, currency: code },
    });
  }
  const row = await incoming.receive({
    platformId,
    customerId: formatId('Customer', customer.id),
    senderUmaAddress: sender.address,
    receiverUmaAddress: customer.uma_address,
    currency: code,
    amount: BigInt(amount),
  }, [], sentAs);
  return toTransaction(row) as IncomingTransaction;
}
