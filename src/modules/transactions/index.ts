/**
 * INTERIM (quotes branch, MONEY-CONTRACT.md): the contract's types and the smallest
 * implementation quote execution needs — the transaction row (one per quote) and the ledger hold.
 * The payments branch owns this module; its merge replaces this file and deletes the interim block at the end of migration 0013.
 */
import type { Clock } from '../../platform/clock.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import type { PaymentRail } from '../external-accounts/index.js';
import { LedgerError, type Ledger, type LedgerAccountRef, type Posting } from '../ledger/index.js';

export type TransactionStatus = 'CREATED' | 'PENDING' | 'PENDING_AUTHORIZATION' | 'PROCESSING' | 'COMPLETED' | 'REJECTED' | 'FAILED' | 'REFUNDED' | 'EXPIRED';

export interface OutgoingPaymentInput {
  transactionId: string;
  platformId: string;
  customerId: string;
  quoteId: string;
  source: { sourceType: 'ACCOUNT'; accountId: string } | { sourceType: 'REALTIME_FUNDING'; currency: string; cryptoNetwork?: string };
  destination: { destinationType: 'ACCOUNT'; accountId: string; paymentRail: PaymentRail } | { destinationType: 'UMA_ADDRESS'; umaAddress: string };
  sendingCurrency: string;
  receivingCurrency: string;
  sentAmount: bigint;
  totalSendingAmount: bigint;
  receivedAmount: bigint;
  fees: bigint;
  platformFees: bigint;
  exchangeRate: string;
  rateDetails?: Record<string, unknown>;
  description?: string;
  remittanceInformation?: string;
  purposeOfPayment?: string;
  paymentInstructions?: unknown;
  expectedSettlementAt?: Date;
}

export interface TransactionView {
  id: string;
  status: TransactionStatus;
  quoteId: string;
}

interface TransactionsTable {
  id: string;
  platform_id: string;
  quote_id: string;
  status: TransactionStatus;
  failure_reason: string | null;
  hold_id: string | null;
  total_sending_amount: bigint;
  created_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    transactions: TransactionsTable;
  }
}

const uuidOf = (type: string, id: string) => {
  const uuid = parseId(type, id);
  if (!uuid) throw new Error(`${id} is not a ${type} id`);
  return uuid;
};

export class Payments {
  constructor(private readonly deps: { clock: Clock; ledger: Ledger }) {}

  private async insert(trx: DbOrTx, input: OutgoingPaymentInput, status: TransactionStatus, failureReason: string | null): Promise<TransactionView> {
    try {
      await trx
        .insertInto('transactions')
        .values({
          id: uuidOf('Transaction', input.transactionId),
          platform_id: input.platformId,
          quote_id: uuidOf('Quote', input.quoteId),
          status,
          failure_reason: failureReason,
          hold_id: null,
          total_sending_amount: input.totalSendingAmount,
          created_at: this.deps.clock.now(),
        })
        .execute();
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw new AppError('CONFLICT', `Quote ${input.quoteId} has already been executed.`);
      throw error;
    }
    return { id: input.transactionId, status, quoteId: input.quoteId };
  }

  /** Records the payment (one per quote) and holds the total on an internal-account source. */
  async startOutgoingPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView> {
    const view = await this.insert(trx, input, 'PENDING', null);
    const sourceUuid = input.source.sourceType === 'ACCOUNT' ? parseId('InternalAccount', input.source.accountId) : undefined;
    if (!sourceUuid || input.destination.destinationType !== 'ACCOUNT') return view;
    const from: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: sourceUuid };
    const send = input.sendingCurrency;
    const receive = input.receivingCurrency;
    const rail = input.destination.paymentRail;
    const postings: Posting[] =
      send === receive
        ? [{ from, to: { kind: 'SETTLEMENT', rail, currency: send }, amount: input.sentAmount, currency: send }]
        : [
            { from, to: { kind: 'FX', currency: send }, amount: input.sentAmount, currency: send },
            { from: { kind: 'FX', currency: receive }, to: { kind: 'SETTLEMENT', rail, currency: receive }, amount: input.receivedAmount, currency: receive },
          ];
    if (input.fees > 0n) postings.push({ from, to: { kind: 'SERVICE_FEES', currency: send }, amount: input.fees, currency: send });
    if (input.platformFees > 0n) postings.push({ from, to: { kind: 'PLATFORM_FEES', currency: send }, amount: input.platformFees, currency: send });
    try {
      const held = await this.deps.ledger.hold(trx, { platformId: input.platformId, reference: `transaction:${uuidOf('Transaction', input.transactionId)}:hold`, postings });
      await trx.updateTable('transactions').set({ hold_id: held.id }).where('id', '=', uuidOf('Transaction', input.transactionId)).execute();
    } catch (error) {
      if (error instanceof LedgerError && error.reason === 'INSUFFICIENT_FUNDS') {
        throw new AppError('AMOUNT_OUT_OF_RANGE', `The available balance of ${input.source.sourceType === 'ACCOUNT' ? input.source.accountId : 'the source'} is less than the total sending amount.`, {
          details: { reason: 'INSUFFICIENT_BALANCE', totalSendingAmount: Number(input.totalSendingAmount) },
        });
      }
      throw error;
    }
    return view;
  }

  async recordExpiredPayment(trx: DbOrTx, input: OutgoingPaymentInput): Promise<TransactionView> {
    return this.insert(trx, input, 'EXPIRED', 'QUOTE_EXPIRED');
  }

  async transactionStatusesByQuote(db: DbOrTx, platformId: string, quoteIds: string[]): Promise<Map<string, TransactionStatus>> {
    const uuids = quoteIds.map((id) => parseId('Quote', id)).filter((u): u is string => Boolean(u));
    if (uuids.length === 0) return new Map();
    const rows = await db.selectFrom('transactions').select(['quote_id', 'status']).where('platform_id', '=', platformId).where('quote_id', 'in', uuids).execute();
    return new Map(rows.map((r) => [formatId('Quote', r.quote_id), r.status]));
  }
}
