import type { Tx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import type { StoredResponse } from '../../platform/idempotency.js';
import { formatId, parseId } from '../../platform/ids.js';
import type { PlatformConfig } from '../config/index.js';
import { findExternalAccount } from '../external-accounts/index.js';
import { findInternalAccount } from '../internal-accounts/index.js';
import { createQuote, executeLocked, loadQuote, type Caller, type Prefetched, type PrefetchedNetworkFee, type Quote, type QuoteDeps, type QuoteRequest } from '../quotes/index.js';
import { toTransaction, type Payments } from '../transactions/index.js';
import type { TransferInRequest, TransferOutRequest } from './schemas.js';

/** Quotes' dependencies, with the transactions module's Payments itself: the answer is the transaction. */
export type TransferDeps = Omit<QuoteDeps, 'payments'> & { payments: Payments };

export type TransferRequest = { direction: 'IN'; body: TransferInRequest } | { direction: 'OUT'; body: TransferOutRequest };

/**
 * The quote a deprecated transfer stands for: account to account, the SENDING side locked at
 * `amount`. A transfer-in names no customer, so the pull is made for the credited account's owner,
 * from that customer's or the platform's external account (another customer's is 404).
 */
async function quoteRequestFor(trx: Tx, platformId: string, request: TransferRequest): Promise<QuoteRequest> {
  if (request.direction === 'OUT') return transferOutQuote(request.body);
  const common = lockedAmount(request.body);
  const credited = await findInternalAccount(trx, platformId, request.body.destination.accountId);
  const sourceId = request.body.source.accountId;
  if (credited?.customerUuid) {
    // Another customer's account is not found from this customer's side, as on the external-account
    // paths: the quote path would refuse it naming `source.customerId`, a field this request has not.
    const source = await findExternalAccount(trx, platformId, sourceId);
    if (source.customerUuid !== null && source.customerUuid !== credited.customerUuid) {
      throw new AppError('REFERENCE_NOT_FOUND', `External account ${sourceId} not found.`);
    }
  }
  return {
    ...common,
    source: { sourceType: 'ACCOUNT', accountId: sourceId, ...(credited?.customerUuid ? { customerId: formatId('Customer', credited.customerUuid) } : {}) },
    destination: { destinationType: 'ACCOUNT', accountId: request.body.destination.accountId },
  };
}

/**
 * The quote path's INVALID_AMOUNT (the fees take the whole amount) names the quote's fields,
 * `lockedCurrencySide` and `lockedCurrencyAmount`, which a transfer request does not have: said
 * in its own field, `amount`. Every other refusal passes unchanged.
 */
function inTransferTerms(error: unknown, amount: number): unknown {
  if (!(error instanceof AppError) || error.code !== 'INVALID_AMOUNT') return error;
  return new AppError('INVALID_AMOUNT', `An amount of ${amount} cannot make a transfer: the fees take all of it and nothing would arrive.`, { details: { amount } });
}

/**
 * `amount`, which is required (README, `amount`): the routes ask before anything is read, the
 * rates included, so a request without one is 400 whatever the deployment can price.
 */
export function requiredAmount(body: { amount?: number }): number {
  if (body.amount === undefined) {
    throw invalidInput([{ field: 'amount', message: 'is required: the minor units the source pays, fees included (Corridor does not guess an amount)' }]);
  }
  return body.amount;
}

/** The SENDING side locked at `amount`. */
function lockedAmount(body: { amount?: number }) {
  return { lockedCurrencySide: 'SENDING' as const, lockedCurrencyAmount: requiredAmount(body) };
}

/** The quote a transfer-out stands for: from the internal account to the external one, on its rail. */
export function transferOutQuote(out: TransferOutRequest): QuoteRequest {
  return {
    ...lockedAmount(out),
    source: { sourceType: 'ACCOUNT', accountId: out.source.accountId },
    destination: { destinationType: 'ACCOUNT', accountId: out.destination.accountId, ...(out.destination.paymentRail ? { paymentRail: out.destination.paymentRail } : {}) },
    ...(out.remittanceInformation !== undefined ? { remittanceInformation: out.remittanceInformation } : {}),
    ...(out.purposeOfPayment !== undefined ? { purposeOfPayment: out.purposeOfPayment } : {}),
  };
}

/**
 * POST /transfer-in and /transfer-out (deprecated, spec §9.3): a quote created and executed at
 * once on the quote path — every refusal is the quote path's — answered with the transaction it
 * started (201). Both accounts must hold the same currency: these were upstream's same-currency
 * transfers, and a cross-currency transfer belongs to POST /quotes, where the rate is shown first.
 */
export async function transfer(trx: Tx, deps: TransferDeps, caller: Caller, request: TransferRequest, prefetched: Prefetched & { config: PlatformConfig; networkFee?: PrefetchedNetworkFee }): Promise<StoredResponse> {
  const quoteRequest = await quoteRequestFor(trx, caller.platformId, request);
  const created = await createQuote(trx, deps, caller, quoteRequest, prefetched).catch((error: unknown) => {
    throw inTransferTerms(error, request.body.amount!);
  });
  const quote = created.body as Quote;
  if (quote.sendingCurrency.code !== quote.receivingCurrency.code) {
    // Thrown inside the request's transaction: the quote just written rolls back with it.
    throw new AppError('INVALID_CURRENCY', `A transfer moves one currency: the source holds ${quote.sendingCurrency.code}, the destination ${quote.receivingCurrency.code}. Use POST /quotes for a cross-currency transfer.`, {
      details: { sendingCurrency: quote.sendingCurrency.code, receivingCurrency: quote.receivingCurrency.code },
    });
  }
  const row = await loadQuote(trx, caller.platformId, parseId('Quote', quote.id)!, { forUpdate: true });
  if (row.source_account_type === 'EMBEDDED_WALLET') {
    // An embedded wallet pays only with its session's stamp: through POST /quotes and a signed execute.
    throw invalidInput([{ field: 'source.accountId', message: 'is an EMBEDDED_WALLET: create a quote, then execute it with the wallet’s Service-Wallet-Signature' }]);
  }
  // Transfer-in is money entering an internal account from outside: an INCOMING transaction (upstream's TransactionOneOf).
  const executed = await executeLocked(trx, deps, row, prefetched, { createdNow: true, ...(request.direction === 'IN' ? { recordAs: 'INCOMING' } : { requestedAs: 'TRANSFER' }) });
  // A quote executed in the transaction that created it has not expired; any other answer passes through unchanged.
  if (executed.statusCode !== 200) return executed;
  return { statusCode: 201, body: toTransaction(await deps.payments.load(trx, caller.platformId, quote.transactionId)) };
}
