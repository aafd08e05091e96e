import Type, { type Static, type TSchema } from 'typebox';
import { CurrencyCode, DateTime, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum, TaggedUnion } from '../../platform/http/schemas.js';
import { Country } from '../customers/index.js';
import { BusinessBeneficiary, individualBeneficiaryFields, WalletIndividualBeneficiary } from './fields.js';
import type { EventGroup } from '../../platform/outbox.js';
import { VARIANTS, type BankVariant, type ExternalAccountType, type Variant } from './variants.js';

export const EXTERNAL_ACCOUNT_STATUSES = ['PENDING', 'ACTIVE', 'PENDING_OWNERSHIP_VERIFICATION', 'UNVERIFIED', 'UNDER_REVIEW', 'INACTIVE'] as const;
export type ExternalAccountStatus = (typeof EXTERNAL_ACCOUNT_STATUSES)[number];
export const OWNERSHIP_TYPES = ['FIRST_PARTY', 'THIRD_PARTY'] as const;
export type OwnershipType = (typeof OWNERSHIP_TYPES)[number];
export const BENEFICIARY_VERIFICATION_STATUSES = ['MATCHED', 'PARTIAL_MATCH', 'NOT_MATCHED', 'UNSUPPORTED', 'CHECKED_BY_RECEIVING_FI', 'PENDING'] as const;
export type BeneficiaryVerificationStatus = (typeof BENEFICIARY_VERIFICATION_STATUSES)[number];
export const OWNERSHIP_METHODS = ['WALLET_SIGNATURE', 'LIVENESS'] as const;
export type OwnershipMethod = (typeof OWNERSHIP_METHODS)[number];

const optionalUnless = (required: readonly string[], properties: Record<string, TSchema>) =>
  Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, required.includes(name) ? schema : Type.Optional(schema)]));

const pascal = (accountType: string) =>
  accountType
    .toLowerCase()
    .split('_')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

/** A schema that lives once in the OpenAPI document as a component, referenced by `$ref`. */
const ref = (id: string) => Type.Unsafe({ $ref: `${id}#` });
const component = (schema: TSchema, id: string): TSchema => ({ ...schema, $id: id, title: id }) as TSchema;

/** An individual account holder: the shared fields, plus what the variant requires or adds. */
function individualBeneficiary(variant: Pick<BankVariant, 'accountType' | 'individual'> | undefined, strict: boolean) {
  const extra = Object.fromEntries(Object.entries(variant?.individual?.fields ?? {}).map(([name, spec]) => [name, spec.schema]));
  const required = ['beneficiaryType', 'fullName', ...(variant?.individual?.required ?? [])];
  return Type.Object(optionalUnless(required, { ...individualBeneficiaryFields, ...extra }), {
    title: variant?.individual ? `${pascal(variant.accountType)}IndividualBeneficiary` : 'IndividualBeneficiary',
    ...(strict ? { additionalProperties: false } : {}),
  });
}

/**
 * One accountInfo branch: the create request's (strict, no rails) or the response's (with
 * `paymentRails`). `documented`: beneficiaries as `$ref`s to shared components, for the OpenAPI
 * document; otherwise inline, for validation.
 */
function accountInfoBranch(variant: Variant, form: 'create' | 'response', documented: boolean) {
  const strict = form === 'create';
  const properties: Record<string, TSchema> = {
    accountType: StringEnum([variant.accountType]),
    ...Object.fromEntries(Object.entries(variant.fields).map(([name, spec]) => [name, spec.schema])),
  };
  const required = ['accountType', ...variant.required];
  if (variant.kind === 'bank') {
    const individual = documented && !variant.individual ? ref('IndividualBeneficiary') : individualBeneficiary(variant, strict);
    properties.beneficiary = TaggedUnion('beneficiaryType', [individual, documented ? ref('BusinessBeneficiary') : BusinessBeneficiary], {
      description: 'Who holds the account. Its name is checked against the receiving institution (beneficiaryVerificationStatus).',
    });
    required.push('beneficiary');
    if (form === 'response') {
      properties.paymentRails = Type.Array(StringEnum(variant.rails), { description: 'Rails this account can be paid on.' });
      required.push('paymentRails');
    } else {
      // The upstream's SDKs send the rails with the account; Corridor derives them from its fields.
      properties.paymentRails = Type.Array(StringEnum(variant.rails), {
        minItems: 1,
        maxItems: variant.rails.length,
        uniqueItems: true,
        description: 'The rails to pay the account on: some of those its fields allow (default all of them).',
      });
      // The upstream's published SDK 0.7 requires `countries` on every bank account (its document
      // had it then). Corridor knows the country from the type or the fields: checked, not kept.
      properties.countries = Type.Array(Country(), {
        minItems: 1,
        maxItems: 60,
        uniqueItems: true,
        description: "Accepted for the upstream's earlier SDK, which requires it: must include the account's country where its type or fields name one. Not stored or returned.",
      });
    }
  } else if (variant.kind === 'wallet') {
    const owners = documented ? [ref('WalletIndividualBeneficiary'), ref('BusinessBeneficiary')] : [WalletIndividualBeneficiary, BusinessBeneficiary];
    properties.beneficiary = TaggedUnion('beneficiaryType', owners, {
      description: "The wallet's owner. Required for THIRD_PARTY wallets (Travel Rule); a FIRST_PARTY wallet is the customer's own.",
    });
    properties.vaspName = Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'The custodial platform (VASP) holding the wallet; omit for a self-custody wallet. Only self-custody wallets need ownership verification.',
    });
  }
  return Type.Object(optionalUnless(required, properties), {
    title: `${pascal(variant.accountType)}ExternalAccount${form === 'create' ? 'CreateInfo' : 'Info'}`,
    ...(variant.kind === 'lightning' ? { description: 'Exactly one of `invoice`, `bolt12` or `lightningAddress`.' } : {}),
    ...(strict ? { additionalProperties: false } : {}),
  });
}

/** Each variant's create schema by accountType: requests are validated against their own branch only. */
export const CREATE_INFO_BRANCHES: ReadonlyMap<string, TSchema> = new Map(VARIANTS.map((v) => [v.accountType, accountInfoBranch(v, 'create', false)]));

const ExternalAccountCreateInfo = TaggedUnion(
  'accountType',
  VARIANTS.map((v) => accountInfoBranch(v, 'create', true)),
  {
    $id: 'ExternalAccountCreateInfo',
    title: 'ExternalAccountCreateInfo',
    description: 'The account or wallet, by `accountType`. Every field is checked by its real rule (checksums, numbering plans, address encodings).',
  },
);

/** The stored and returned accountInfo: the variant's fields, plus `paymentRails` on bank accounts. */
export type AccountInfo = { accountType: ExternalAccountType } & Record<string, unknown>;

const requestFields = (accountInfo: TSchema) => ({
  currency: CurrencyCode({ description: 'Currency the account receives; must be one its accountType carries.' }),
  platformAccountId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Your own identifier for the account.' })),
  ownershipType: Type.Optional(
    StringEnum(OWNERSHIP_TYPES, {
      description: 'FIRST_PARTY: the customer’s (or platform’s) own account. A FIRST_PARTY self-custody wallet must prove ownership before it receives above the Travel Rule threshold.',
    }),
  ),
  accountInfo,
});
const customerFields = {
  customerId: Type.Optional(ResourceId('Customer', { description: 'The customer the account belongs to. Without it the account is the platform’s.' })),
  defaultUmaDepositAccount: Type.Optional(
    Type.Boolean({ description: 'Deposit incoming UMA payments here. At most one per customer: setting it moves the flag from the previous one.' }),
  ),
};

/**
 * The create requests with only accountInfo's tag: what is validated before the one branch its
 * accountType names (compiling the 46-branch union in every process would cost seconds).
 */
const AccountInfoTag = Type.Object({ accountType: StringEnum(VARIANTS.map((v) => v.accountType)) });
export const CustomerCreateEnvelope = Type.Object({ ...customerFields, ...requestFields(AccountInfoTag) }, { additionalProperties: false });
export const PlatformCreateEnvelope = Type.Object(requestFields(AccountInfoTag), { additionalProperties: false });
export type ExternalAccountCreate = Static<typeof CustomerCreateEnvelope>;

/** The create requests as documented, each once (route bodies reference them). */
const CustomerCreateRequest = Type.Object(
  { ...customerFields, ...requestFields(ref('ExternalAccountCreateInfo')) },
  { $id: 'ExternalAccountCreateRequest', title: 'ExternalAccountCreateRequest', additionalProperties: false },
);
const PlatformCreateRequest = Type.Object(requestFields(ref('ExternalAccountCreateInfo')), {
  $id: 'PlatformExternalAccountCreateRequest',
  title: 'PlatformExternalAccountCreateRequest',
  additionalProperties: false,
});
export const CustomerCreateBody = Type.Unsafe<ExternalAccountCreate>(ref('ExternalAccountCreateRequest'));
export const PlatformCreateBody = Type.Unsafe<ExternalAccountCreate>(ref('PlatformExternalAccountCreateRequest'));

const ExternalAccountInfo = TaggedUnion(
  'accountType',
  VARIANTS.map((v) => accountInfoBranch(v, 'response', true)),
  { $id: 'ExternalAccountInfo', title: 'ExternalAccountInfo' },
);

const ExternalAccountSchema = Type.Object(
  {
    id: ResourceId('ExternalAccount'),
    customerId: Type.Optional(ResourceId('Customer', { description: 'Absent on platform accounts.' })),
    status: StringEnum(EXTERNAL_ACCOUNT_STATUSES),
    platformAccountId: Type.Optional(Type.String()),
    ownershipType: Type.Optional(StringEnum(OWNERSHIP_TYPES)),
    currency: Type.String({ examples: ['USD'] }),
    defaultUmaDepositAccount: Type.Optional(Type.Boolean()),
    beneficiaryVerificationStatus: Type.Optional(StringEnum(BENEFICIARY_VERIFICATION_STATUSES)),
    beneficiaryVerifiedData: Type.Optional(
      Type.Object({ fullName: Type.Optional(Type.String({ description: 'The holder name on record at the receiving institution.' })) }),
    ),
    accountInfo: Type.Unsafe<AccountInfo>({ $ref: 'ExternalAccountInfo#' }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { $id: 'ExternalAccount', title: 'ExternalAccount' },
);
export interface ExternalAccount {
  id: string;
  customerId?: string;
  status: ExternalAccountStatus;
  platformAccountId?: string;
  ownershipType?: OwnershipType;
  currency: string;
  defaultUmaDepositAccount?: boolean;
  beneficiaryVerificationStatus?: BeneficiaryVerificationStatus;
  beneficiaryVerifiedData?: { fullName?: string };
  accountInfo: AccountInfo;
  createdAt: string;
  updatedAt: string;
}

/** Shared schemas the app registers once, so the OpenAPI document has each as one component. */
export const SHARED_SCHEMAS: TSchema[] = [
  component(individualBeneficiary(undefined, true), 'IndividualBeneficiary'),
  component(BusinessBeneficiary, 'BusinessBeneficiary'),
  component(WalletIndividualBeneficiary, 'WalletIndividualBeneficiary'),
  ExternalAccountCreateInfo,
  CustomerCreateRequest,
  PlatformCreateRequest,
  ExternalAccountInfo,
  ExternalAccountSchema,
];

export const ExternalAccountRef = Type.Unsafe<ExternalAccount>({ $ref: 'ExternalAccount#' });
export const ExternalAccountList = ListResponse(ExternalAccountRef, 'ExternalAccountListResponse');

export const CustomerListQuery = Type.Object(
  {
    currency: Type.Optional(CurrencyCode()),
    customerId: Type.Optional(ResourceId('Customer')),
    ...PaginationQuery,
  },
  { additionalProperties: false },
);
export type CustomerListQuery = Static<typeof CustomerListQuery>;
export const PlatformListQuery = Type.Object(
  { currency: Type.Optional(CurrencyCode()), ...PaginationQuery },
  { additionalProperties: false },
);
export type PlatformListQuery = Static<typeof PlatformListQuery>;

export const ExternalAccountParams = Type.Object({ externalAccountId: IdParam('ExternalAccount', 'REFERENCE_NOT_FOUND', 'external account') });

export const OwnershipChallengeRequest = Type.Object(
  { method: StringEnum(OWNERSHIP_METHODS, { description: 'WALLET_SIGNATURE: sign a message with the wallet key. LIVENESS: a hosted check by the owner.' }) },
  { additionalProperties: false, title: 'OwnershipChallengeRequest' },
);
export type OwnershipChallengeRequest = Static<typeof OwnershipChallengeRequest>;

const WalletSignatureChallenge = Type.Object(
  {
    method: StringEnum(['WALLET_SIGNATURE'] as const),
    messageToSign: Type.String({ description: 'Sign exactly this text (UTF-8) with the wallet key, then POST the signature to …/verify.' }),
    expiresAt: DateTime(),
  },
  { title: 'WalletSignatureChallenge' },
);
const LivenessChallenge = Type.Object(
  {
    method: StringEnum(['LIVENESS'] as const),
    verificationLink: Type.String({ format: 'uri', description: 'Page the account owner opens to complete the check. Single use.' }),
    expiresAt: DateTime(),
  },
  { title: 'LivenessChallenge' },
);
export const OwnershipChallenge = TaggedUnion('method', [WalletSignatureChallenge, LivenessChallenge], { title: 'OwnershipChallenge' });
export type OwnershipChallenge =
  | { method: 'WALLET_SIGNATURE'; messageToSign: string; expiresAt: string }
  | { method: 'LIVENESS'; verificationLink: string; expiresAt: string };

export const OwnershipVerifyRequest = Type.Object(
  {
    signature: Type.String({
      minLength: 1,
      maxLength: 600,
      description: 'Over the exact messageToSign: EIP-191 hex (0x…) for EVM wallets and Tron (TIP-191), base64 for Spark (Bitcoin message signature), base58 Ed25519 for Solana.',
    }),
    signatureScheme: Type.Optional(
      StringEnum(['bip137', 'electrum'] as const, { default: 'bip137', description: 'Bitcoin message-signature form (Spark wallets); ignored elsewhere.' }),
    ),
  },
  { additionalProperties: false, title: 'OwnershipVerifyRequest' },
);
export type OwnershipVerifyRequest = Static<typeof OwnershipVerifyRequest>;

/** Webhooks about an external account; `data` is the account. */
export const EXTERNAL_ACCOUNT_EVENTS: EventGroup = {
  name: 'external-account-status',
  summary: 'External account status',
  description: 'An external account changed status. `data` is the whole external account.',
  payload: ref('ExternalAccount'),
  types: {
    'EXTERNAL_ACCOUNT.STATUS_UPDATED':
      'Any status change, including the ownership-verification lifecycle (PENDING_OWNERSHIP_VERIFICATION to ACTIVE, or to UNVERIFIED on a failed attempt).',
  },
};
