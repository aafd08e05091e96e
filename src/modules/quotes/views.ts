import { currency as currencyOf } from '../../platform/currencies.js';
import { formatId } from '../../platform/ids.js';
import { amountToWire } from '../../platform/money.js';
import type { TransactionStatus } from '../transactions/index.js';
import type { QuoteRow } from './repo.js';
import type { Quote, QuoteDestination, QuoteSource } from './schemas.js';

const currencyView = (code: string) => {
  const c = currencyOf(code);
  return { code: c.code, name: c.name, symbol: c.symbol, decimals: c.decimals };
};

type QuoteStatus = Quote['status'];

/**
 * A quote's status is its transaction's, seen from the quote (MONEY-CONTRACT.md): not executed
 * → PENDING, or EXPIRED once past expiresAt; executed → PROCESSING until the transaction ends
 * COMPLETED, FAILED or EXPIRED. A REALTIME_FUNDING quote stays PENDING while its payment is
 * (waiting for the platform's money), and is PROCESSING once the money went to the rail.
 */
export function quoteStatus(row: Pick<QuoteRow, 'expires_at' | 'source_kind'>, transaction: TransactionStatus | undefined, platformNow: Date): QuoteStatus {
  if (!transaction) return row.expires_at <= platformNow ? 'EXPIRED' : 'PENDING';
  switch (transaction) {
    case 'PENDING':
      return row.source_kind === 'REALTIME_FUNDING' ? 'PENDING' : 'PROCESSING';
    case 'COMPLETED':
      return 'COMPLETED';
    case 'FAILED':
    case 'REJECTED':
    case 'REFUNDED':
      return 'FAILED';
    case 'EXPIRED':
      return 'EXPIRED';
    case 'PENDING_AUTHORIZATION':
      return 'PENDING_AUTHORIZATION';
    default:
      return 'PROCESSING';
  }
}

export function toQuote(row: QuoteRow, status: QuoteStatus): Quote {
  return {
    id: formatId('Quote', row.id),
    status,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    source: row.source as QuoteSource,
    destination: row.destination as QuoteDestination,
    sendingCurrency: currencyView(row.sending_currency),
    receivingCurrency: currencyView(row.receiving_currency),
    totalSendingAmount: amountToWire(BigInt(row.total_sending_amount)),
    totalReceivingAmount: amountToWire(BigInt(row.received_amount)),
    exchangeRate: Number(row.exchange_rate),
    feesIncluded: amountToWire(BigInt(row.service_fees) + BigInt(row.platform_fees)),
    platformFeesIncluded: amountToWire(BigInt(row.platform_fees)),
    ...(row.payment_instructions ? { paymentInstructions: row.payment_instructions as Quote['paymentInstructions'] } : {}),
    transactionId: formatId('Transaction', row.transaction_id),
    rateDetails: row.rate_details as Quote['rateDetails'],
  };
}
