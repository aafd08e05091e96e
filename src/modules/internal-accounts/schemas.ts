import Type, { type Static } from 'typebox';
import { DateTime, ListResponse, PaginationQuery, ResourceId, StringEnum } from '../../platform/http/schemas.js';
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

const AccountOrWalletInfo = Type.Object(
  {
    accountType: Type.String({ examples: ['USD_ACCOUNT'], description: '`<CCY>_ACCOUNT` for bank accounts.' }),
    accountNumber: Type.Optional(Type.String()),
    routingNumber: Type.Optional(Type.String()),
    bankName: Type.Optional(Type.String()),
    paymentRails: Type.Optional(Type.Array(Type.String())),
    reference: Type.Optional(Type.String({ description: 'Include with the payment so it is credited to this account.' })),
  },
  { title: 'AccountOrWalletInfo' },
);

const PaymentInstructions = Type.Object(
  {
    instructionsNotes: Type.Optional(Type.String()),
    isPlatformAccount: Type.Optional(Type.Boolean()),
    accountOrWalletInfo: AccountOrWalletInfo,
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
  currency: Type.Optional(Type.String({ format: 'iso4217', maxLength: 3 })),
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

export const InternalAccountParams = Type.Object({ id: ResourceId('InternalAccount') });
export const InternalAccountUpdate = Type.Object(
  { privateEnabled: Type.Optional(Type.Boolean({ description: 'Make the embedded wallet private (or not).' })) },
  { additionalProperties: false, minProperties: 1, title: 'InternalAccountUpdateRequest' },
);
export type InternalAccountUpdate = Static<typeof InternalAccountUpdate>;

export const SandboxFundParams = Type.Object({ accountId: ResourceId('InternalAccount') });
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
    'INTERNAL_ACCOUNT.STATUS_UPDATED': '`status` changed (e.g. ACTIVE to FROZEN).',
    'INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED': '`fundingPaymentInstructions` gained or lost coordinates.',
  },
};
