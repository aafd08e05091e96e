import { currency } from '../../platform/currencies.js';
import { formatId } from '../../platform/ids.js';
import { amountToWire } from '../../platform/money.js';
import type { TransactionRow } from './repo.js';
import { isPaymentRail, settlementSecondsOf, type RailName } from './rails.js';
import type { IncomingTransaction, OutgoingFailureReason, OutgoingTransaction, Transaction } from './schemas.js';

function amountOf(value: string | number | bigint, code: string) {
  return { amount: amountToWire(BigInt(value)), currency: currency(code) };
}

function refundOf(row: TransactionRow) {
  if (!row.refund_reference || !row.refund_status || !row.refund_initiated_at) return {};
  return {
    refund: {
      reference: row.refund_reference,
      initiatedAt: row.refund_initiated_at.toISOString(),
      ...(row.refund_settled_at ? { settledAt: row.refund_settled_at.toISOString() } : {}),
      status: row.refund_status,
      ...(row.refund_reason ? { reason: row.refund_reason } : {}),
    },
  };
}

function counterpartyOf(row: TransactionRow) {
  const info = (row.rate_details as { counterpartyInformation?: Record<string, unknown> } | null)?.counterpartyInformation;
  return info ? { counterpartyInformation: info } : {};
}

/** A stored transaction as the API shows it (UPSTREAM §5.4). */
export function toTransaction(row: TransactionRow): Transaction {
  const common = {
    id: formatId('Transaction', row.id),
    destination: row.destination as OutgoingTransaction['destination'],
    // The platform's own transfers have no customer (upstream requires both; nothing true could fill them).
    ...(row.customer_id ? { customerId: formatId('Customer', row.customer_id) } : {}),
    ...(row.platform_customer_id !== null ? { platformCustomerId: row.platform_customer_id } : {}),
    ...(row.settled_at ? { settledAt: row.settled_at.toISOString() } : {}),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(row.receipt_delivery_confirmed_at ? { receiptDeliveryConfirmedAt: row.receipt_delivery_confirmed_at.toISOString() } : {}),
    ...(row.description ? { description: row.description } : {}),
    exchangeRate: Number(row.exchange_rate),
    ...(row.quote_id ? { quoteId: formatId('Quote', row.quote_id) } : {}),
    ...refundOf(row),
    reconciliationInstructions: { reference: row.reconciliation_reference },
    // Upstream: `fees` is every fee, the platform's included (`platformFees` is its share).
    fees: amountToWire(BigInt(row.fees) + BigInt(row.platform_fees)),
  };
  if (row.type === 'INCOMING') {
    return {
      ...common,
      type: 'INCOMING',
      direction: 'CREDIT',
      status: row.status,
      source: row.source as IncomingTransaction['source'],
      sentAmount: amountOf(row.sent_amount, row.sending_currency),
      receivedAmount: amountOf(row.received_amount, row.receiving_currency),
      // An incoming payment keeps what the payer told about itself (UMA payer data) in rate_details.
      ...counterpartyOf(row),
      ...(row.failure_reason ? { failureReason: row.failure_reason as IncomingTransaction['failureReason'] } : {}),
    } as IncomingTransaction;
  }
  const rail = row.payment_rail as RailName | null;
  return {
    ...common,
    type: 'OUTGOING',
    direction: 'DEBIT',
    status: row.status as OutgoingTransaction['status'],
    source: row.source as OutgoingTransaction['source'],
    sentAmount: amountOf(row.sent_amount, row.sending_currency),
    receivedAmount: amountOf(row.received_amount, row.receiving_currency),
    platformFees: amountToWire(BigInt(row.platform_fees)),
    ...(row.payment_instructions ? { paymentInstructions: row.payment_instructions as Array<Record<string, unknown>> } : {}),
    ...(row.rate_details ? { rateDetails: row.rate_details as OutgoingTransaction['rateDetails'] } : {}),
    ...(row.failure_reason ? { failureReason: row.failure_reason as OutgoingFailureReason } : {}),
    paymentRail: rail && isPaymentRail(rail) ? rail : null,
    expectedSettlementAt: row.expected_settlement_at ? row.expected_settlement_at.toISOString() : null,
    settlementTimelineSeconds: rail ? settlementSecondsOf(rail) : null,
  };
}
