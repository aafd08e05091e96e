import Type, { type Static } from 'typebox';
import { CurrencyCode, DateTime, IdParam, MinorAmount, Nullable, PaginationQuery, ResourceId, StringEnum, TaggedUnion } from '../../platform/http/schemas.js';
import type { EventGroup } from '../../platform/outbox.js';
import { PAYMENT_RAIL_NAMES } from './rails.js';
import { OUTGOING_STATUSES, TRANSACTION_STATUSES } from './status.js';

// Shapes of UPSTREAM §5.4 (OutgoingTransaction, IncomingTransaction, TransactionOneOf): one
// declaration each, from which validation, serialisation, OpenAPI and the webhook payloads derive.

export const OUTGOING_FAILURE_REASONS = [
  'QUOTE_EXPIRED', 'QUOTE_RATE_UNAVAILABLE', 'QUOTE_EXECUTION_FAILED', 'FUNDING_AMOUNT_MISMATCH', 'SCA_NOT_COMPLETED', 'PAYOUT_RETURNED',
  'LIMIT_EXCEEDED', 'ACCOUNT_CANNOT_RECEIVE', 'ACCOUNT_INVALID', 'COMPLIANCE_REJECTED', 'LIGHTNING_PAYMENT_FAILED', 'COUNTERPARTY_POST_TX_FAILED',
] as const;
export type OutgoingFailureReason = (typeof OUTGOING_FAILURE_REASONS)[number];

export const INCOMING_FAILURE_REASONS = [
  'LNURLP_FAILED', 'PAY_REQUEST_FAILED', 'PAYMENT_APPROVAL_WEBHOOK_ERROR', 'PAYMENT_APPROVAL_TIMED_OUT', 'OFFRAMP_FAILED',
  'MISSING_MANDATORY_PAYEE_DATA', 'QUOTE_EXPIRED', 'QUOTE_EXECUTION_FAILED', 'COMPLIANCE_REJECTED', 'COLLECTION_FAILED',
] as const;

export const REFUND_REASONS = ['TRANSACTION_FAILED', 'USER_CANCELLATION', 'TIMEOUT'] as const;
export const REFUND_STATUSES = ['PENDING', 'COMPLETED', 'FAILED'] as const;
const CRYPTO_NETWORKS = ['BITCOIN', 'ETHEREUM', 'SOLANA', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'SPARK'] as const;
const CUSTOMER_INFO_FIELDS = [
  'FULL_NAME', 'BIRTH_DATE', 'NATIONALITY', 'PHONE_NUMBER', 'EMAIL', 'POSTAL_ADDRESS', 'TAX_ID', 'REGISTRATION_NUMBER', 'USER_TYPE',
  'COUNTRY_OF_RESIDENCE', 'ACCOUNT_IDENTIFIER', 'FI_LEGAL_ENTITY_NAME', 'FI_ADDRESS', 'PURPOSE_OF_PAYMENT', 'ULTIMATE_INSTITUTION_COUNTRY',
  'IDENTIFIER', 'BUSINESS_TYPE', 'COMPANY_LEGAL_NAME', 'ID_TYPE', 'ID_NUMBER',
] as const;

const Currency = Type.Object(
  {
    code: Type.String({ examples: ['USD'] }),
    name: Type.String({ examples: ['US Dollar'] }),
    symbol: Type.String({ examples: ['$'] }),
    decimals: Type.Integer({ minimum: 0 }),
  },
  { title: 'TransactionCurrency' },
);
const CurrencyAmount = Type.Object(
  { amount: Type.Integer({ format: 'int64', description: 'In the smallest unit of the currency.' }), currency: Currency },
  { title: 'TransactionCurrencyAmount' },
);
const OnChainTransaction = Type.Object({ transactionHash: Type.String(), network: StringEnum(CRYPTO_NETWORKS) }, { title: 'OnChainTransaction' });
const PaymentRailField = StringEnum(PAYMENT_RAIL_NAMES);
/** A string enum or JSON null (null must be among the enum's values too). */
const NullableEnum = <const T extends readonly string[]>(values: T) => Type.Unsafe<T[number] | null>({ type: ['string', 'null'], enum: [...values, null] });

const AccountSource = Type.Object(
  {
    sourceType: StringEnum(['ACCOUNT']),
    accountId: Type.String({ description: 'The internal or external account the money comes from.' }),
    currency: Type.Optional(Type.String()),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { title: 'AccountTransactionSource' },
);
const UmaAddressSource = Type.Object(
  { sourceType: StringEnum(['UMA_ADDRESS']), umaAddress: Type.String(), currency: Type.Optional(Type.String()) },
  { title: 'UmaAddressTransactionSource' },
);
const RealtimeFundingSource = Type.Object(
  {
    sourceType: StringEnum(['REALTIME_FUNDING']),
    customerId: Type.Optional(Type.String()),
    currency: Type.String(),
    accountHolderName: Type.Optional(Type.String()),
    accountIdentifier: Type.Optional(Type.String()),
    bankName: Type.Optional(Type.String()),
    bankIdentifier: Type.Optional(Type.String()),
    paymentRail: Type.Optional(PaymentRailField),
    remittanceInformation: Type.Optional(Type.String()),
    endToEndId: Type.Optional(Type.String()),
    traceNumber: Type.Optional(Type.String()),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { title: 'RealtimeFundingTransactionSource' },
);
export const TransactionSource = TaggedUnion('sourceType', [AccountSource, UmaAddressSource, RealtimeFundingSource], { title: 'TransactionSource' });

const AccountDestination = Type.Object(
  {
    destinationType: StringEnum(['ACCOUNT']),
    accountId: Type.String(),
    currency: Type.Optional(Type.String()),
    onChainTransaction: Type.Optional(OnChainTransaction),
  },
  { title: 'AccountTransactionDestination' },
);
const UmaAddressDestination = Type.Object(
  { destinationType: StringEnum(['UMA_ADDRESS']), umaAddress: Type.String(), currency: Type.Optional(Type.String()) },
  { title: 'UmaAddressTransactionDestination' },
);
export const TransactionDestination = TaggedUnion('destinationType', [AccountDestination, UmaAddressDestination], { title: 'TransactionDestination' });

export const Refund = Type.Object(
  {
    reference: Type.String({ description: 'The refund’s own reference.' }),
    initiatedAt: DateTime(),
    settledAt: Type.Optional(DateTime()),
    status: StringEnum(REFUND_STATUSES),
    reason: Type.Optional(StringEnum(REFUND_REASONS)),
  },
  { title: 'Refund', description: 'Present once money that had left the sender is being, or has been, returned.' },
);

const RateDetails = Type.Object(
  {
    counterpartyMultiplier: Type.Number({ exclusiveMinimum: 0 }),
    counterpartyFixedFee: Type.Integer({ format: 'int64', minimum: 0 }),
    gridApiMultiplier: Type.Number({ exclusiveMinimum: 0 }),
    gridApiFixedFee: Type.Integer({ format: 'int64', minimum: 0 }),
    gridApiVariableFeeRate: Type.Number({ minimum: 0 }),
    gridApiVariableFeeAmount: Type.Number({ minimum: 0 }),
  },
  { title: 'OutgoingRateDetails', additionalProperties: true },
);

const ReconciliationInstructions = Type.Object(
  {
    reference: Type.Optional(Type.String({ description: 'Unique reference that travels with the payment.' })),
    transactionHash: Type.Optional(Type.String({ deprecated: true })),
  },
  { title: 'ReconciliationInstructions', minProperties: 1 },
);

const common = {
  id: ResourceId('Transaction'),
  pendingReason: Type.Optional(StringEnum(['COUNTERPARTY_DECLARATION_REQUIRED', 'WALLET_VERIFICATION_REQUIRED', 'COUNTERPARTY_INFORMATION_REQUIRED', 'COMPLIANCE_REVIEW'])),
  direction: StringEnum(['CREDIT', 'DEBIT']),
  destination: TransactionDestination,
  customerId: Type.Optional(ResourceId('Customer', { description: 'The sending (outgoing) or credited (incoming) customer; absent on a transfer of the platform’s own money.' })),
  platformCustomerId: Type.Optional(Type.String({ description: 'The platform’s id of that customer; absent with customerId.' })),
  settledAt: Type.Optional(DateTime({ description: 'When the payment settled (COMPLETED).' })),
  createdAt: Type.Optional(DateTime()),
  updatedAt: Type.Optional(DateTime()),
  receiptDeliveryConfirmedAt: Type.Optional(DateTime({ description: 'When the platform confirmed delivering the receipt (POST /transactions/{id}/confirm).' })),
  agentId: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  exchangeRate: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Receiving units per sending unit, as fixed by the quote.' })),
  quoteId: Type.Optional(ResourceId('Quote')),
  refund: Type.Optional(Refund),
  counterpartyInformation: Type.Optional(Type.Object({}, { additionalProperties: true })),
  reconciliationInstructions: Type.Optional(ReconciliationInstructions),
  fees: Type.Optional(Type.Integer({ format: 'int64', minimum: 0, description: 'Every fee in minor units of the sending currency, the platform’s included.' })),
};

const OutgoingTransactionShape = Type.Object(
  {
    ...common,
    status: StringEnum(OUTGOING_STATUSES),
    type: StringEnum(['OUTGOING']),
    source: TransactionSource,
    sentAmount: CurrencyAmount,
    receivedAmount: Type.Optional(CurrencyAmount),
    platformFees: Type.Optional(Type.Integer({ format: 'int64', minimum: 0, description: 'The platform’s share of `fees`.' })),
    paymentInstructions: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true, title: 'TransactionPaymentInstructions' }))),
    rateDetails: Type.Optional(RateDetails),
    failureReason: Type.Optional(StringEnum(OUTGOING_FAILURE_REASONS)),
    paymentRail: Type.Optional(NullableEnum(PAYMENT_RAIL_NAMES)),
    railSelectionMode: Type.Optional(NullableEnum(['AUTO', 'MANUAL'])),
    expectedSettlementAt: Type.Optional(Nullable(DateTime())),
    settlementTimelineSeconds: Type.Optional(Nullable(Type.Integer())),
  },
  { $id: 'OutgoingTransaction', title: 'OutgoingTransaction' },
);
export type OutgoingTransaction = Static<typeof OutgoingTransactionShape>;

const IncomingTransactionShape = Type.Object(
  {
    ...common,
    status: StringEnum(TRANSACTION_STATUSES),
    type: StringEnum(['INCOMING']),
    source: Type.Optional(TransactionSource),
    sentAmount: Type.Optional(CurrencyAmount),
    receivedAmount: CurrencyAmount,
    failureReason: Type.Optional(StringEnum(INCOMING_FAILURE_REASONS)),
  },
  { $id: 'IncomingTransaction', title: 'IncomingTransaction' },
);
export type IncomingTransaction = Static<typeof IncomingTransactionShape>;
export type Transaction = OutgoingTransaction | IncomingTransaction;

// Routes, lists and webhook payloads refer to the shapes by `$ref`, so each lives once in the
// OpenAPI document (a client generator makes one type of each, not one per route).
export const OutgoingTransaction = Type.Unsafe<OutgoingTransaction>({ $ref: 'OutgoingTransaction#' });
export const IncomingTransaction = Type.Unsafe<IncomingTransaction>({ $ref: 'IncomingTransaction#' });
const TransactionShape = TaggedUnion('type', [OutgoingTransaction, IncomingTransaction], { $id: 'Transaction', title: 'Transaction' });
export const Transaction = Type.Unsafe<Transaction>({ $ref: 'Transaction#' });
/** The app registers these once (`app.addSchema`): the components the refs above name. */
export const TRANSACTION_SCHEMAS = [OutgoingTransactionShape, IncomingTransactionShape, TransactionShape];

export const TransactionList = Type.Object(
  {
    data: Type.Array(Transaction),
    hasMore: Type.Boolean({ description: 'Whether another page follows.' }),
    nextCursor: Type.Optional(Type.String({ description: 'Pass as `cursor` for the next page; present only when hasMore.' })),
    totalCount: Type.Optional(Type.Integer({ description: 'Number of transactions matching the filters, over all pages.' })),
  },
  { title: 'TransactionList' },
);

export const TransactionListQuery = Type.Object(
  {
    customerId: Type.Optional(
      Type.Union([ResourceId('Customer'), ResourceId('Platform')], {
        description: 'Transactions of this customer; the platform’s own id (`Platform:<uuid>`, as upstream) lists the transfers it made on its own behalf.',
      }),
    ),
    platformCustomerId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Transactions of the customer with this platform id.' })),
    accountIdentifier: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Transactions from or to this account (id or UMA address).' })),
    senderAccountIdentifier: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Transactions from this account (id or UMA address).' })),
    receiverAccountIdentifier: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Transactions to this account (id or UMA address).' })),
    status: Type.Optional(StringEnum(TRANSACTION_STATUSES)),
    type: Type.Optional(StringEnum(['INCOMING', 'OUTGOING'])),
    reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The reconciliation reference.' })),
    startDate: Type.Optional(DateTime({ description: 'Created at or after this time.' })),
    endDate: Type.Optional(DateTime({ description: 'Created at or before this time.' })),
    ...PaginationQuery,
    sortOrder: Type.Optional(StringEnum(['asc', 'desc'], { default: 'desc', description: 'By creation time; default newest first.' })),
  },
  { additionalProperties: false },
);
export type TransactionListQuery = Static<typeof TransactionListQuery>;

export const TransactionParams = Type.Object({ transactionId: IdParam('Transaction', 'TRANSACTION_NOT_FOUND') });

export const CancelTransactionRequest = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Why the platform cancels; kept in the log.' })) },
  { additionalProperties: false },
);
export const ConfirmReceiptDeliveryRequest = Type.Object(
  { receiptDeliveryConfirmedAt: Type.Optional(DateTime({ description: 'When the receipt reached the customer; default now.' })) },
  { additionalProperties: false },
);

export const ApproveTransactionRequest = Type.Object(
  {
    receiverCustomerInfo: Type.Optional(
      Type.Object({}, { additionalProperties: true, maxProperties: 50, description: 'The receiver information the payer asked for (`requestedReceiverCustomerInfoFields`).' }),
    ),
  },
  { additionalProperties: false },
);
export const RejectTransactionRequest = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Why the platform rejects; passed on to the payer.' })) },
  { additionalProperties: false },
);

export const SandboxSendRequest = Type.Object(
  {
    quoteId: ResourceId('Quote', { description: 'The REALTIME_FUNDING quote whose payment instructions are paid.' }),
    currencyCode: CurrencyCode({ description: 'The currency paid in: the quote’s sending currency.' }),
    currencyAmount: Type.Optional(MinorAmount({ minimum: 1, description: 'Minor units paid in; default the quote’s total sending amount.' })),
  },
  { additionalProperties: false },
);

export const OUTGOING_PAYMENT_EVENTS: EventGroup = {
  name: 'outgoing-payment',
  summary: 'Outgoing payment status',
  description:
    'An outgoing payment changed status, or its refund did. The payload is the transaction as `GET /transactions/{id}` shows it after the change. Informational: the answer only acknowledges.',
  payload: OutgoingTransaction,
  types: {
    'OUTGOING_PAYMENT.PENDING': 'The quote was executed: the amount is held on the source account, or awaited from the platform (REALTIME_FUNDING).',
    'OUTGOING_PAYMENT.PENDING_AUTHORIZATION': 'The payment waits for Strong Customer Authentication.',
    'OUTGOING_PAYMENT.PROCESSING': 'The payment was handed to its rail: the source was debited.',
    'OUTGOING_PAYMENT.COMPLETED': 'The payout settled at the destination.',
    'OUTGOING_PAYMENT.FAILED': 'The payment failed; `failureReason` says why and `refund` how money already debited came back.',
    'OUTGOING_PAYMENT.EXPIRED': 'The quote expired before execution or funding; nothing moved.',
    'OUTGOING_PAYMENT.REFUND_PENDING': 'Money already debited is being returned.',
    'OUTGOING_PAYMENT.REFUND_COMPLETED': 'The refund settled: the amount is back on the source.',
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
  payload: Type.Object(
    {
      ...IncomingTransactionShape.properties,
      requestedReceiverCustomerInfoFields: Type.Optional(
        Type.Array(Type.Object({ name: StringEnum(CUSTOMER_INFO_FIELDS), mandatory: Type.Boolean() }), {
          description: 'INCOMING_PAYMENT.PENDING only: what the payer asks to know about the receiver. Approve with them in `receiverCustomerInfo`.',
        }),
      ),
    },
    { title: 'IncomingPaymentWebhookData' },
  ),
  types: {
    'INCOMING_PAYMENT.PENDING': 'A payment awaits the platform’s approval (UMA), or a bank-rail payment was announced.',
    'INCOMING_PAYMENT.COMPLETED': 'The payment was credited.',
    'INCOMING_PAYMENT.FAILED': 'The payment failed; `failureReason` says why.',
    'INCOMING_PAYMENT.REFUND_PENDING': 'A refund of the incoming payment to its sender started.',
    'INCOMING_PAYMENT.REFUND_COMPLETED': 'The refund settled.',
    'INCOMING_PAYMENT.REFUND_FAILED': 'The refund failed.',
  },
};
