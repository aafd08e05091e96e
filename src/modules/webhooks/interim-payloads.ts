/**
 * Payload schemas of webhook events whose module is not in Corridor yet (transactions), declared from the upstream API so the catalogue and the OpenAPI `webhooks`
 * are complete now. When the owning module lands it exports its own schemas and event groups,
 * the wiring lists those instead, and the matching declaration here is deleted.
 */
import Type from 'typebox';
import { DateTime, StringEnum } from '../../platform/http/schemas.js';
import type { EventGroup } from '../../platform/outbox.js';

const Currency = Type.Object({
  code: Type.String({ examples: ['USD'] }),
  name: Type.String(),
  symbol: Type.String(),
  decimals: Type.Integer({ minimum: 0 }),
});

const CurrencyAmount = Type.Object({ amount: Type.Integer({ format: 'int64', description: 'Minor units.' }), currency: Currency });

const CRYPTO_NETWORKS = ['BITCOIN', 'ETHEREUM', 'SOLANA', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'SPARK'] as const;
const OnChainTransaction = Type.Object({ transactionHash: Type.String(), network: StringEnum(CRYPTO_NETWORKS) });

const CUSTOMER_INFO_FIELDS = [
  'FULL_NAME', 'BIRTH_DATE', 'NATIONALITY', 'PHONE_NUMBER', 'EMAIL', 'POSTAL_ADDRESS', 'TAX_ID', 'REGISTRATION_NUMBER', 'USER_TYPE',
  'COUNTRY_OF_RESIDENCE', 'ACCOUNT_IDENTIFIER', 'FI_LEGAL_ENTITY_NAME', 'FI_ADDRESS', 'PURPOSE_OF_PAYMENT', 'ULTIMATE_INSTITUTION_COUNTRY',
  'IDENTIFIER', 'BUSINESS_TYPE', 'COMPANY_LEGAL_NAME', 'ID_TYPE', 'ID_NUMBER',
] as const;

const Source = Type.Object(
  {
    sourceType: StringEnum(['ACCOUNT', 'UMA_ADDRESS', 'REALTIME_FUNDING']),
    accountId: Type.Optional(Type.String()),
    umaAddress: Type.Optional(Type.String()),
    customerId: Type.Optional(Type.String()),
    currency: Type.Optional(Type.String()),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { additionalProperties: true },
);

const Destination = Type.Object(
  {
    destinationType: StringEnum(['ACCOUNT', 'UMA_ADDRESS']),
    accountId: Type.Optional(Type.String()),
    umaAddress: Type.Optional(Type.String()),
    currency: Type.Optional(Type.String()),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { additionalProperties: true },
);

const Refund = Type.Object({
  reference: Type.String(),
  initiatedAt: DateTime(),
  settledAt: Type.Optional(DateTime()),
  status: StringEnum(['PENDING', 'COMPLETED', 'FAILED']),
  reason: Type.Optional(StringEnum(['TRANSACTION_FAILED', 'USER_CANCELLATION', 'TIMEOUT'])),
});

const transactionFields = {
  id: Type.String({ examples: ['Transaction:019542f5-b3e7-1d02-0000-000000000005'] }),
  status: StringEnum(['CREATED', 'PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED']),
  pendingReason: Type.Optional(StringEnum(['COUNTERPARTY_DECLARATION_REQUIRED', 'WALLET_VERIFICATION_REQUIRED', 'COUNTERPARTY_INFORMATION_REQUIRED', 'COMPLIANCE_REVIEW'])),
  direction: StringEnum(['CREDIT', 'DEBIT']),
  destination: Destination,
  customerId: Type.String(),
  platformCustomerId: Type.String(),
  settledAt: Type.Optional(DateTime()),
  createdAt: Type.Optional(DateTime()),
  updatedAt: Type.Optional(DateTime()),
  receiptDeliveryConfirmedAt: Type.Optional(DateTime()),
  agentId: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  exchangeRate: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  quoteId: Type.Optional(Type.String()),
  refund: Type.Optional(Refund),
  counterpartyInformation: Type.Optional(Type.Object({}, { additionalProperties: true })),
  reconciliationInstructions: Type.Optional(Type.Object({ reference: Type.Optional(Type.String()), transactionHash: Type.Optional(Type.String()) })),
  fees: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
};

export const IncomingTransactionPayload = Type.Object(
  {
    ...transactionFields,
    type: StringEnum(['INCOMING']),
    source: Type.Optional(Source),
    sentAmount: Type.Optional(CurrencyAmount),
    receivedAmount: CurrencyAmount,
    failureReason: Type.Optional(
      StringEnum([
        'LNURLP_FAILED', 'PAY_REQUEST_FAILED', 'PAYMENT_APPROVAL_WEBHOOK_ERROR', 'PAYMENT_APPROVAL_TIMED_OUT', 'OFFRAMP_FAILED',
        'MISSING_MANDATORY_PAYEE_DATA', 'QUOTE_EXPIRED', 'QUOTE_EXECUTION_FAILED', 'COMPLIANCE_REJECTED', 'COLLECTION_FAILED',
      ]),
    ),
    requestedReceiverCustomerInfoFields: Type.Optional(
      Type.Array(Type.Object({ name: StringEnum(CUSTOMER_INFO_FIELDS), mandatory: Type.Boolean() }), {
        description: 'INCOMING_PAYMENT.PENDING only: what the payer asks to know about the receiver. Approve with them in `receiverCustomerInfo`.',
      }),
    ),
  },
  { title: 'IncomingTransaction' },
);

export const OutgoingTransactionPayload = Type.Object(
  {
    ...transactionFields,
    status: StringEnum(['PENDING', 'PENDING_AUTHORIZATION', 'EXPIRED', 'PROCESSING', 'COMPLETED', 'FAILED']),
    type: StringEnum(['OUTGOING']),
    source: Source,
    sentAmount: CurrencyAmount,
    receivedAmount: Type.Optional(CurrencyAmount),
    platformFees: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
    paymentInstructions: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
    rateDetails: Type.Optional(Type.Object({}, { additionalProperties: true })),
    failureReason: Type.Optional(
      StringEnum([
        'QUOTE_EXPIRED', 'QUOTE_RATE_UNAVAILABLE', 'QUOTE_EXECUTION_FAILED', 'FUNDING_AMOUNT_MISMATCH', 'SCA_NOT_COMPLETED', 'PAYOUT_RETURNED',
        'LIMIT_EXCEEDED', 'ACCOUNT_CANNOT_RECEIVE', 'ACCOUNT_INVALID', 'COMPLIANCE_REJECTED', 'LIGHTNING_PAYMENT_FAILED', 'COUNTERPARTY_POST_TX_FAILED',
      ]),
    ),
    paymentRail: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    railSelectionMode: Type.Optional(Type.Union([StringEnum(['AUTO', 'MANUAL']), Type.Null()])),
    expectedSettlementAt: Type.Optional(Type.Union([DateTime(), Type.Null()])),
    settlementTimelineSeconds: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  },
  { title: 'OutgoingTransaction' },
);

export const OUTGOING_PAYMENT_EVENTS: EventGroup = {
  name: 'outgoing-payment',
  summary: 'Outgoing payment status',
  description: 'An outgoing payment changed status, or its refund did. Informational: the answer only acknowledges.',
  payload: OutgoingTransactionPayload,
  types: {
    'OUTGOING_PAYMENT.PENDING': 'The payment was created and waits for execution or funding.',
    'OUTGOING_PAYMENT.PENDING_AUTHORIZATION': 'The payment waits for Strong Customer Authentication.',
    'OUTGOING_PAYMENT.PROCESSING': 'The payment is being executed.',
    'OUTGOING_PAYMENT.COMPLETED': 'The payout reached the destination.',
    'OUTGOING_PAYMENT.FAILED': 'The payment failed; `failureReason` says why.',
    'OUTGOING_PAYMENT.EXPIRED': 'The quote expired before execution.',
    'OUTGOING_PAYMENT.REFUND_PENDING': 'A refund of the payment started.',
    'OUTGOING_PAYMENT.REFUND_COMPLETED': 'The refund settled.',
    'OUTGOING_PAYMENT.REFUND_FAILED': 'The refund failed.',
  },
};

export const INCOMING_PAYMENT_EVENTS: EventGroup = {
  name: 'incoming-payment',
  summary: 'Incoming payment and approval',
  description:
    'A customer is receiving a payment. For `INCOMING_PAYMENT.PENDING` of an approval-mechanism payment (UMA), the answer decides: ' +
    '200 approves (with `receiverCustomerInfo` when fields were requested), 403 rejects, 422 asks for more information, 202 means ' +
    'the platform decides through `POST /transactions/{id}/approve` or `/reject` within 5 seconds. Other types are informational.',
  payload: IncomingTransactionPayload,
  types: {
    'INCOMING_PAYMENT.PENDING': 'A payment awaits the platform’s approval (UMA), or a bank-rail payment was announced.',
    'INCOMING_PAYMENT.COMPLETED': 'The payment was credited.',
    'INCOMING_PAYMENT.FAILED': 'The payment failed; `failureReason` says why.',
    'INCOMING_PAYMENT.REFUND_PENDING': 'A refund of the incoming payment to its sender started.',
    'INCOMING_PAYMENT.REFUND_COMPLETED': 'The refund settled.',
    'INCOMING_PAYMENT.REFUND_FAILED': 'The refund failed.',
  },
};
