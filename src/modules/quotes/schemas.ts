import Type, { type Static } from 'typebox';
import { CurrencyCode, DateTime, IdParam, MinorAmount, ResourceId, StringEnum, TaggedUnion } from '../../platform/http/schemas.js';
import { CurrencyView, PaymentRailSchema } from '../rates/index.js';

export const PURPOSES_OF_PAYMENT = [
  'GIFT', 'SELF', 'GOODS_OR_SERVICES', 'EDUCATION', 'HEALTH_OR_MEDICAL', 'REAL_ESTATE_PURCHASE', 'TAX_PAYMENT', 'LOAN_PAYMENT',
  'UTILITY_BILL', 'DONATION', 'TRAVEL', 'FAMILY_SUPPORT', 'SALARY_PAYMENT', 'OTHER',
] as const;
export const QUOTE_STATUSES = ['PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED'] as const;
export const CRYPTO_NETWORKS = ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'SPARK', 'LIGHTNING', 'BITCOIN'] as const;

const AccountId = Type.String({
  minLength: 1,
  maxLength: 60,
  description: '`InternalAccount:<uuid>`, or `ExternalAccount:<uuid>`.',
  examples: ['InternalAccount:019542f5-b3e7-1d02-0000-000000000001'],
});

export const AccountQuoteSource = Type.Object(
  {
    sourceType: StringEnum(['ACCOUNT']),
    accountId: Type.String({
      ...AccountId,
      description: 'An internal account, or a first-party external bank account money can be pulled from (ACH debit for USD, SEPA Direct Debit for EUR).',
    }),
    customerId: Type.Optional(ResourceId('Customer', { description: 'The customer the transfer is for; must own the account when given. Default: the account’s owner.' })),
  },
  { additionalProperties: false, title: 'AccountQuoteSource' },
);

export const RealtimeFundingQuoteSource = Type.Object(
  {
    sourceType: StringEnum(['REALTIME_FUNDING']),
    customerId: Type.Optional(ResourceId('Customer', { description: 'The customer the transfer is for; absent: the platform itself.' })),
    currency: CurrencyCode({ description: 'The currency the platform pays in, just in time, by the quote’s paymentInstructions.' }),
    cryptoNetwork: Type.Optional(StringEnum(CRYPTO_NETWORKS, { description: 'Required for a crypto currency: the network of the deposit.' })),
  },
  { additionalProperties: false, title: 'RealtimeFundingQuoteSource' },
);

export const QuoteSource = TaggedUnion('sourceType', [AccountQuoteSource, RealtimeFundingQuoteSource], { title: 'QuoteSourceOneOf' });

export const AccountDestination = Type.Object(
  {
    destinationType: StringEnum(['ACCOUNT']),
    accountId: Type.String({ ...AccountId, description: 'An external account, or an internal account of the platform.' }),
    paymentRail: Type.Optional(PaymentRailSchema),
    // The upstream's wallet walkthrough sends it; the account alone decides the currency.
    currency: Type.Optional(CurrencyCode({ description: 'The destination account’s currency, if given; any other is 400.' })),
  },
  { additionalProperties: false, title: 'AccountDestination' },
);

export const UmaAddressDestination = Type.Object(
  {
    destinationType: StringEnum(['UMA_ADDRESS']),
    umaAddress: Type.String({ minLength: 3, maxLength: 255, examples: ['$receiver@uma.domain.com'] }),
    currency: Type.Optional(CurrencyCode()),
  },
  { additionalProperties: false, title: 'UmaAddressDestination' },
);

export const QuoteDestination = TaggedUnion('destinationType', [AccountDestination, UmaAddressDestination], { title: 'QuoteDestinationOneOf' });

const FixedFee = Type.Object(
  { amount: MinorAmount({ description: 'Minor units of `currency`.' }), currency: CurrencyCode() },
  { additionalProperties: false, title: 'FixedFee' },
);

export const QuoteRequest = Type.Object(
  {
    lookupId: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'The lookupId of GET /receiver/uma/{receiverUmaAddress}; required for UMA_ADDRESS destinations. To an ACCOUNT destination it may be left out; given, it must be the lookupId of GET /receiver/external-account/{accountId} for the destination account, not expired (an estimate: the quote fixes its own price).' })),
    source: QuoteSource,
    destination: QuoteDestination,
    lockedCurrencySide: StringEnum(['SENDING', 'RECEIVING'], {
      description: 'SENDING: `lockedCurrencyAmount` is what the sender pays, fees included. RECEIVING: it is what the receiver gets.',
    }),
    lockedCurrencyAmount: Type.Integer({ minimum: 1, maximum: 9_000_000_000_000_000, format: 'int64', description: 'Minor units of the locked side’s currency.' }),
    immediatelyExecute: Type.Optional(Type.Boolean({ default: false, description: 'Create and execute in one request. Not for EMBEDDED_WALLET sources.' })),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    remittanceInformation: Type.Optional(Type.String({ maxLength: 80 })),
    purposeOfPayment: Type.Optional(StringEnum(PURPOSES_OF_PAYMENT)),
    platformFeeOverride: Type.Optional(
      Type.Object(
        {
          platformFixedFee: FixedFee,
          platformVariableFeeBps: Type.Integer({ minimum: 0, maximum: 10000 }),
        },
        { additionalProperties: false, title: 'PlatformFeeOverride', description: 'Replaces the platform’s configured fee for this transfer. USD sources only; the fixed fee in USD.' },
      ),
    ),
    scaFactor: Type.Optional(StringEnum(['SMS_OTP', 'PASSKEY'], { description: 'Strong Customer Authentication is not required by Corridor; accepted and ignored.' })),
    senderCustomerInfo: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 50 })),
  },
  { additionalProperties: false, title: 'QuoteRequest' },
);

export const ExecuteQuoteRequest = Type.Object(
  { scaFactor: Type.Optional(StringEnum(['SMS_OTP', 'PASSKEY'])) },
  { additionalProperties: false, title: 'ExecuteQuoteRequest' },
);

/** An embedded wallet's execution carries its stamp (no Request-Id: the quote names the challenge). */
/** No length limit: a stamp too long to be one is 401 WALLET_SIGNATURE_MALFORMED (wallet-auth's SignedRetryHeaders says why). */
export const ExecuteHeaders = Type.Object({
  'service-wallet-signature': Type.Optional(
    Type.String({ description: 'EMBEDDED_WALLET sources: the stamp of an active session over the quote’s payloadToSign. `Grid-Wallet-Signature` is an alias.' }),
  ),
  'grid-wallet-signature': Type.Optional(Type.String({ description: 'Alias of `Service-Wallet-Signature` (the upstream SDK’s name).' })),
});

export const QuoteParams = Type.Object({ quoteId: IdParam('Quote', 'QUOTE_NOT_FOUND') });

const PaymentInstructions = Type.Object(
  {
    instructionsNotes: Type.Optional(Type.String()),
    isPlatformAccount: Type.Optional(Type.Boolean()),
    accountOrWalletInfo: Type.Object(
      { accountType: Type.String({ description: 'USD_ACCOUNT, EUR_ACCOUNT, …, SOLANA_WALLET, …, EMBEDDED_WALLET.' }) },
      { additionalProperties: true },
    ),
  },
  { title: 'PaymentInstructions' },
);

const RateDetails = Type.Object(
  {
    counterpartyMultiplier: Type.Number({ description: 'The corridor’s mid-market rate (receiving per sending unit).' }),
    counterpartyFixedFee: Type.Integer({ format: 'int64', description: 'Fixed fee of the receiving institution, receiving minor units (0: none).' }),
    gridApiMultiplier: Type.Number({ description: 'The rate applied: mid-market less Corridor’s spread.' }),
    gridApiFixedFee: Type.Integer({ format: 'int64', description: 'Corridor’s fixed service fee, sending minor units.' }),
    gridApiVariableFeeRate: Type.Number({ description: 'Corridor’s variable service fee as a fraction of the amount sent.' }),
    gridApiVariableFeeAmount: Type.Integer({ format: 'int64', description: 'Corridor’s variable service fee, sending minor units.' }),
  },
  { title: 'OutgoingRateDetails' },
);

const QuoteShape = Type.Object(
  {
    id: ResourceId('Quote'),
    status: StringEnum(QUOTE_STATUSES),
    createdAt: DateTime(),
    expiresAt: DateTime({ description: 'After this the quote cannot be executed: its rate is no longer held.' }),
    source: QuoteSource,
    destination: QuoteDestination,
    sendingCurrency: CurrencyView,
    receivingCurrency: CurrencyView,
    totalSendingAmount: Type.Integer({ format: 'int64', description: 'What the sender pays, fees included (sending minor units).' }),
    totalReceivingAmount: Type.Integer({ format: 'int64', description: 'What the receiver gets (receiving minor units).' }),
    exchangeRate: Type.Number({ description: 'Receiving currency units per sending currency unit, spread included; fixed for the quote’s life.' }),
    feesIncluded: Type.Integer({ format: 'int64', description: 'Every fee in totalSendingAmount (sending minor units), the platform’s included.' }),
    platformFeesIncluded: Type.Integer({ format: 'int64', description: 'The platform’s part of feesIncluded.' }),
    paymentInstructions: Type.Optional(Type.Array(PaymentInstructions)),
    transactionId: ResourceId('Transaction', { description: 'The transaction this quote’s execution creates.' }),
    rateDetails: RateDetails,
  },
  { $id: 'Quote', title: 'Quote' },
);
export type Quote = Static<typeof QuoteShape>;
/** The three quote routes answer with the shape by `$ref`: it lives once in the OpenAPI document. */
export const Quote = Type.Unsafe<Quote>({ $ref: 'Quote#' });
/** The app registers these once (`app.addSchema`): the components the ref above names. */
export const QUOTE_SCHEMAS = [QuoteShape];

export type QuoteRequest = Static<typeof QuoteRequest>;
export type QuoteSource = Static<typeof QuoteSource>;
export type QuoteDestination = Static<typeof QuoteDestination>;
export type AccountDestinationT = Static<typeof AccountDestination>;
