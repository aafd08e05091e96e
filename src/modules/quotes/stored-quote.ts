// What every stored quote shares, to an account or a UMA address: its paymentInstructions (an
// embedded wallet's signing challenge, or where real-time funding is paid in), what the request
// hands through unchanged, and the answer once stored (executed now, or PENDING).
import { CRYPTO_CURRENCY_CODES } from '../../platform/currencies.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { inTransaction } from '../../platform/db/tx.js';
import type { StoredResponse } from '../../platform/idempotency.js';
import { parseId, uuidv7 } from '../../platform/ids.js';
import { fundingInstructions, newFundingReference } from '../internal-accounts/index.js';
import { executeLocked, QUOTE_EXECUTE_OPERATION, type Caller, type ExecutionContext, type QuoteDeps } from './execute.js';
import type { QuoteRow } from './repo.js';
import { field, type ResolvedSource } from './resolve.js';
import type { QuoteRequest } from './schemas.js';
import { toQuote } from './views.js';

/** The deposit instruction type of each funding network (internal-accounts' funding instructions). */
const NETWORK_INSTRUCTION: Record<string, string> = {
  SOLANA: 'SOLANA_WALLET', ETHEREUM: 'ETHEREUM_WALLET', BASE: 'BASE_WALLET', POLYGON: 'POLYGON_WALLET', TRON: 'TRON_WALLET',
  PLASMA: 'PLASMA_WALLET', SPARK: 'SPARK_WALLET', LIGHTNING: 'LIGHTNING', BITCOIN: 'BITCOIN_L1',
};

function paymentInstructionsFor(source: ResolvedSource, body: QuoteRequest, now: Date): unknown[] | null {
  if (source.kind !== 'REALTIME_FUNDING' || body.source.sourceType !== 'REALTIME_FUNDING') return null;
  const crypto = CRYPTO_CURRENCY_CODES.has(source.currency);
  const all = fundingInstructions({ type: crypto ? 'INTERNAL_CRYPTO' : 'INTERNAL_FIAT', currency: source.currency, reference: newFundingReference(), isPlatformAccount: true, now });
  if (!crypto) return all;
  const wanted = NETWORK_INSTRUCTION[body.source.cryptoNetwork!];
  return all.filter((i) => i.accountOrWalletInfo.accountType === wanted);
}

/**
 * An embedded wallet pays only with its session's stamp over the quote's payloadToSign, so no
 * path that executes at once (immediatelyExecute, a UMA quote's or a transfer's) may start from
 * one; executeLocked refuses it too, as the last line.
 */
export function refuseUnsignedWalletExecution(body: QuoteRequest, source: ResolvedSource): void {
  if (body.immediatelyExecute && source.accountType === 'EMBEDDED_WALLET') {
    throw field('immediatelyExecute', 'is not available for EMBEDDED_WALLET sources: create the quote, then execute it with the wallet’s Service-Wallet-Signature');
  }
}

/**
 * The quote's paymentInstructions. From an embedded wallet they are the challenge its session
 * signs to execute (written in `trx`, the transaction the quote is stored in); otherwise what the
 * source's kind shows.
 */
export async function instructionsFor(
  trx: DbOrTx,
  deps: QuoteDeps,
  caller: Caller,
  body: QuoteRequest,
  source: ResolvedSource,
  now: Date,
  quote: { quoteId: string; totalSendingAmount: bigint; receivingAmount: bigint; receivingCurrency: string; destination: string },
): Promise<{ paymentInstructions: QuoteRow['payment_instructions']; signedRequestId: string | null }> {
  if (source.accountType !== 'EMBEDDED_WALLET') return { paymentInstructions: paymentInstructionsFor(source, body, now), signedRequestId: null };
  const challenge = await inTransaction(trx, (wtx) =>
    deps.walletAuth.wallets.issueFor(wtx, {
      platformId: caller.platformId,
      accountUuid: source.accountUuid!,
      operation: QUOTE_EXECUTE_OPERATION,
      targetId: quote.quoteId,
      body: {},
      type: 'ACTIVITY_TYPE_EXECUTE_QUOTE',
      parameters: {
        quoteId: quote.quoteId,
        totalSendingAmount: String(quote.totalSendingAmount),
        sendingCurrency: source.currency,
        receivingAmount: String(quote.receivingAmount),
        receivingCurrency: quote.receivingCurrency,
        destination: quote.destination,
      },
    }),
  );
  return {
    signedRequestId: parseId('Request', challenge.requestId)!,
    paymentInstructions: [
      {
        instructionsNotes: 'Sign payloadToSign with an active session key of the wallet, then POST /quotes/{quoteId}/execute with the stamp in Service-Wallet-Signature.',
        isPlatformAccount: false,
        accountOrWalletInfo: { accountType: 'EMBEDDED_WALLET', payloadToSign: challenge.payloadToSign },
      },
    ],
  };
}

/**
 * What every new quote row holds alike, whatever it pays: what the request hands through
 * unchanged (the lookup it names was checked before: checkAccountLookup, or UmaSender for a UMA
 * address), its transaction's id, and nothing executed yet.
 */
export function newQuoteFields(body: QuoteRequest, createdAt: Date) {
  return {
    source: body.source as Record<string, unknown>,
    locked_side: body.lockedCurrencySide,
    locked_amount: BigInt(body.lockedCurrencyAmount),
    lookup_id: body.lookupId ?? null,
    description: body.description ?? null,
    remittance_information: body.remittanceInformation ?? null,
    purpose_of_payment: body.purposeOfPayment ?? null,
    sender_customer_info: body.senderCustomerInfo ?? null,
    transaction_id: uuidv7(createdAt.getTime()),
    executed_at: null,
    volume_day: null,
    created_at: createdAt,
  };
}

/**
 * The answer to a stored quote. A REALTIME_FUNDING quote is paid by the platform sending money to
 * its paymentInstructions, not executed (upstream's execute takes account sources only): its
 * payment opens now and waits for that money until expiresAt, `immediatelyExecute` or not.
 */
export async function openIfDue(trx: Tx, deps: QuoteDeps, row: QuoteRow, body: QuoteRequest, source: ResolvedSource, context: ExecutionContext): Promise<StoredResponse> {
  if (body.immediatelyExecute || source.kind === 'REALTIME_FUNDING') {
    const executed = await executeLocked(trx, deps, row, context, { createdNow: true });
    return { statusCode: executed.statusCode === 200 ? 201 : executed.statusCode, body: executed.body };
  }
  return { statusCode: 201, body: toQuote(row, 'PENDING') };
}
