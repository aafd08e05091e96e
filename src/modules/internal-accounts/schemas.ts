import Type, { type Static, type TSchema } from 'typebox';
import { CurrencyCode, DateTime, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum, TaggedUnion } from '../../platform/http/schemas.js';
import type { EventGroup } from '../../platform/outbox.js';

export const ACCOUNT_TYPES = ['INTERNAL_FIAT', 'INTERNAL_CRYPTO', 'EMBEDDED_WALLET'] as const;
export const ACCOUNT_STATUSES = ['PENDING', 'ACTIVE', 'CLOSED', 'FROZEN', 'FAILED'] as const;

const Currency = Type.Object(
  {
    code: Type.String({ examples: ['USD'] }),
    name: Type.String({ examples: ['US Dollar'] }),
    symbol: Type.String({ examples: ['$'] }),
    decimals: Type.Integer({ minimum: 0, description: 'Digits after the decimal point of the minor unit.' }),
  },
  { title: 'Currency' },
);

const CurrencyAmount = Type.Object(
  { amount: Type.Integer({ format: 'int64', description: 'In the smallest unit of the currency.' }), currency: Currency },
  { title: 'CurrencyAmount' },
);

const Reference = Type.String({
  minLength: 1,
  maxLength: 18,
  description: 'Include it with the payment (memo, remittance information, concept) so the deposit is credited to this account. Unique per account.',
});
const BankName = Type.String({ minLength: 1, maxLength: 255 });
const Bic = Type.String({ pattern: '^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$', minLength: 8, maxLength: 11 });
const Iban = Type.String({ pattern: '^[A-Z]{2}[0-9]{2}[A-Za-z0-9]{11,30}$', minLength: 15, maxLength: 34 });

function bankInfo<const T extends string>(accountType: T, fields: Record<string, TSchema>, required: string[], title: string) {
  return Type.Object(
    { accountType: StringEnum([accountType]), ...fields },
    { title, required: ['accountType', ...required] },
  );
}

const PAYMENT_INFOS = [
  bankInfo(
    'USD_ACCOUNT',
    {
      accountNumber: Type.String({ minLength: 1, maxLength: 34 }),
      routingNumber: Type.String({ pattern: '^[0-9]{9}$', description: 'ABA routing number.' }),
      bankName: BankName,
      bankAddress: Type.String({ minLength: 1, maxLength: 255 }),
      paymentRails: Type.Array(StringEnum(['ACH', 'WIRE', 'RTP', 'FEDNOW'])),
      reference: Reference,
    },
    ['accountNumber', 'routingNumber', 'paymentRails', 'reference'],
    'PaymentUsdAccountInfo',
  ),
  bankInfo(
    'EUR_ACCOUNT',
    { iban: Iban, swiftCode: Bic, bankName: BankName, paymentRails: Type.Array(StringEnum(['SEPA', 'SEPA_INSTANT'])), reference: Reference },
    ['iban', 'paymentRails', 'reference'],
    'PaymentEurAccountInfo',
  ),
  bankInfo(
    'GBP_ACCOUNT',
    {
      sortCode: Type.String({ pattern: '^[0-9]{6}$' }),
      accountNumber: Type.String({ pattern: '^[0-9]{8}$' }),
      bankName: BankName,
      paymentRails: Type.Array(StringEnum(['FASTER_PAYMENTS'])),
      reference: Reference,
    },
    ['sortCode', 'accountNumber', 'paymentRails', 'reference'],
    'PaymentGbpAccountInfo',
  ),
  bankInfo(
    'MXN_ACCOUNT',
    { clabeNumber: Type.String({ pattern: '^[0-9]{18}$' }), bankName: BankName, paymentRails: Type.Array(StringEnum(['SPEI'])), reference: Reference },
    ['clabeNumber', 'paymentRails', 'reference'],
    'PaymentMxnAccountInfo',
  ),
  bankInfo(
    'BRL_ACCOUNT',
    {
      qrCode: Type.String({ minLength: 1, description: 'Pix "copia e cola" payload (EMV BR Code) to render as a QR code or paste into a banking app.' }),
      pixKey: Type.String({ description: 'The Pix key (random key) the payload pays.' }),
      paymentRails: Type.Array(StringEnum(['PIX'])),
      reference: Reference,
    },
    ['qrCode'],
    'PaymentBrlAccountInfo',
  ),
  bankInfo(
    'SWIFT_ACCOUNT',
    {
      country: Type.String({ pattern: '^[A-Z]{2}$' }),
      swiftCode: Bic,
      bankName: BankName,
      accountNumber: Type.String({ minLength: 1, maxLength: 34 }),
      iban: Iban,
      accountHolderName: Type.String({ minLength: 1, maxLength: 255 }),
      bankAddress: Type.String({ minLength: 1, maxLength: 1024 }),
      paymentRails: Type.Array(StringEnum(['SWIFT'])),
      reference: Reference,
    },
    ['country', 'swiftCode', 'bankName', 'accountHolderName', 'paymentRails'],
    'PaymentSwiftAccountInfo',
  ),
  ...(
    [
      ['SOLANA_WALLET', ['USDC', 'USDT'], 'PaymentSolanaWalletInfo'],
      ['ETHEREUM_WALLET', ['USDC', 'USDT'], 'PaymentEthereumWalletInfo'],
      ['BASE_WALLET', ['USDC'], 'PaymentBaseWalletInfo'],
      ['POLYGON_WALLET', ['USDC'], 'PaymentPolygonWalletInfo'],
      ['TRON_WALLET', ['USDT'], 'PaymentTronWalletInfo'],
      ['PLASMA_WALLET', ['USDT'], 'PaymentPlasmaWalletInfo'],
    ] as const
  ).map(([type, assets, title]) =>
    bankInfo(type, { address: Type.String({ description: 'Deposit address of this account alone.' }), assetType: StringEnum(assets) }, ['address'], title),
  ),
  bankInfo(
    'SPARK_WALLET',
    { address: Type.String({ description: 'Spark address of this account alone.' }), assetType: Type.String({ description: 'BTC or a Spark token.' }) },
    ['address', 'assetType'],
    'PaymentSparkWalletInfo',
  ),
  bankInfo('LIGHTNING', { invoice: Type.String({ description: 'BOLT11 invoice without an amount; pay any amount until it expires.' }) }, ['invoice'], 'PaymentLightningInvoiceInfo'),
  bankInfo(
    'BITCOIN_L1',
    { address: Type.String({ description: 'On-chain (bech32) deposit address of this account alone.' }), network: StringEnum(['BITCOIN']) },
    ['address'],
    'PaymentBitcoinDepositAddressInfo',
  ),
];

export const PaymentInstructions = Type.Object(
  {
    instructionsNotes: Type.Optional(Type.String()),
    isPlatformAccount: Type.Optional(Type.Boolean()),
    accountOrWalletInfo: TaggedUnion('accountType', PAYMENT_INFOS, { title: 'PaymentAccountOrWalletInfo' }),
  },
  { title: 'PaymentInstructions' },
);

export const InternalAccount = Type.Object(
  {
    id: ResourceId('InternalAccount'),
    customerId: Type.Optional(ResourceId('Customer', { description: 'Absent on platform-owned accounts.' })),
    type: StringEnum(ACCOUNT_TYPES),
    status: StringEnum(ACCOUNT_STATUSES),
    balance: CurrencyAmount,
    totalBalance: CurrencyAmount,
    fundingPaymentInstructions: Type.Array(PaymentInstructions),
    privateEnabled: Type.Optional(Type.Boolean({ description: 'EMBEDDED_WALLET only: whether the wallet is private.' })),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: 'InternalAccount', description: '`balance` is available to spend; `totalBalance` also counts pending and held funds.' },
);
export type InternalAccount = Static<typeof InternalAccount>;
export type PaymentInstructions = Static<typeof PaymentInstructions>;

const filters = {
  currency: Type.Optional(CurrencyCode()),
  type: Type.Optional(StringEnum(ACCOUNT_TYPES)),
};

export const CustomerAccountsQuery = Type.Object(
  { customerId: Type.Optional(ResourceId('Customer')), ...filters, ...PaginationQuery },
  { additionalProperties: false },
);
export type CustomerAccountsQuery = Static<typeof CustomerAccountsQuery>;
export const PlatformAccountsQuery = Type.Object(filters, { additionalProperties: false });
export type PlatformAccountsQuery = Static<typeof PlatformAccountsQuery>;

export const CustomerAccountList = ListResponse(InternalAccount, 'InternalAccountListResponse');
export const PlatformAccountList = Type.Object({ data: Type.Array(InternalAccount) }, { title: 'PlatformInternalAccountListResponse' });

export const InternalAccountParams = Type.Object({ id: IdParam('InternalAccount', 'REFERENCE_NOT_FOUND', 'internal account') });
export const InternalAccountUpdate = Type.Object(
  { privateEnabled: Type.Optional(Type.Boolean({ description: 'Make the embedded wallet private (or not).' })) },
  { additionalProperties: false, minProperties: 1, title: 'InternalAccountUpdateRequest' },
);
export type InternalAccountUpdate = Static<typeof InternalAccountUpdate>;

export const SandboxFundParams = Type.Object({ accountId: IdParam('InternalAccount', 'REFERENCE_NOT_FOUND', 'internal account') });
export const SandboxFundRequest = Type.Object(
  {
    amount: Type.Integer({
      format: 'int64',
      minimum: 1,
      maximum: 100_000_000_000,
      description: "How much to add, in the smallest unit of the account's currency (at most 1e11).",
    }),
  },
  { additionalProperties: false, title: 'SandboxFundRequest' },
);
export type SandboxFundRequest = Static<typeof SandboxFundRequest>;

/** Webhooks about an internal account; `data` is the account. */
export const INTERNAL_ACCOUNT_EVENTS: EventGroup = {
  name: 'internal-account-status',
  summary: 'Internal account',
  description: 'An internal account changed. `data` is the whole account, with its current balances and funding instructions.',
  payload: InternalAccount,
  types: {
    'INTERNAL_ACCOUNT.BALANCE_UPDATED': '`balance` or `totalBalance` changed (a payment, a hold, a release).',
    'INTERNAL_ACCOUNT.STATUS_UPDATED': '`status` changed (e.g. ACTIVE to FROZEN), or the account was opened ACTIVE (at approval, or when a configuration change adds a currency or enables wallets).',
    'INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED': '`fundingPaymentInstructions` gained or lost coordinates.',
  },
};
