import Type, { type Static, type TSchema } from 'typebox';
import { CurrencyCode, DateTime, FieldErrorSchema, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum, TaggedUnion, TimeRangeQuery } from '../../platform/http/schemas.js';
import type { EventGroup } from '../../platform/outbox.js';
import { UMA_ADDRESS_PATTERN } from '../../platform/uma-address.js';

export const REVIEW_STATUSES = ['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'HOLD'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];
export const CUSTOMER_TYPES = ['INDIVIDUAL', 'BUSINESS'] as const;
export type CustomerType = (typeof CUSTOMER_TYPES)[number];

export const INDIVIDUAL_SOURCE_OF_FUNDS = [
  'SALARY', 'SELF_EMPLOYMENT_INCOME', 'INVESTMENT_INCOME', 'PENSION', 'RENTAL_INCOME', 'GIFT', 'INHERITANCE', 'LOAN',
  'SAVINGS', 'SALE_OF_ASSETS', 'OTHER',
] as const;
export const SOURCE_OF_WEALTH = ['SALARY', 'BUSINESS_INCOME', 'INVESTMENTS', 'INHERITANCE', 'PROPERTY_SALE', 'GIFT', 'RETIREMENT', 'SAVINGS', 'OTHER'] as const;
export const PURPOSE_OF_ACCOUNT = [
  'CONTRACTOR_PAYOUTS', 'CREATOR_PAYOUTS', 'EMPLOYEE_PAYOUTS', 'MARKETPLACE_SELLER_PAYOUTS', 'SUPPLIER_PAYMENTS', 'CROSS_BORDER_B2B',
  'AR_AUTOMATION', 'AP_AUTOMATION', 'EMBEDDED_PAYMENTS', 'PLATFORM_FEE_COLLECTION', 'P2P_TRANSFERS', 'CHARITABLE_DONATIONS', 'OTHER',
] as const;
export const TRANSACTION_COUNT = ['COUNT_UNDER_10', 'COUNT_10_TO_100', 'COUNT_100_TO_500', 'COUNT_500_TO_1000', 'COUNT_OVER_1000'] as const;
export const TRANSACTION_VOLUME = ['VOLUME_UNDER_10K', 'VOLUME_10K_TO_100K', 'VOLUME_100K_TO_1M', 'VOLUME_1M_TO_10M', 'VOLUME_OVER_10M'] as const;
export const ANNUAL_INCOME = ['UNDER_50K', 'RANGE_50K_100K', 'RANGE_100K_250K', 'RANGE_250K_1M', 'OVER_1M'] as const;
export const NET_WORTH = ['UNDER_100K', 'RANGE_100K_500K', 'RANGE_500K_1M', 'RANGE_1M_5M', 'RANGE_5M_25M', 'OVER_25M'] as const;
export const PEP_STATUS = ['NONE', 'DOMESTIC', 'FOREIGN', 'HIO', 'FAMILY_OR_ASSOCIATE'] as const;
/** Upstream's IdentificationType for individuals: an EIN identifies a sole proprietor who has one. */
export const INDIVIDUAL_ID_TYPES = ['SSN', 'ITIN', 'EIN'] as const;
export const ENTITY_TYPES = [
  'SOLE_PROPRIETORSHIP', 'PARTNERSHIP', 'LLC', 'CORPORATION', 'S_CORPORATION', 'NON_PROFIT', 'PUBLICLY_LISTED_COMPANY', 'TRUST',
  'PRIVATE_FOUNDATION', 'CHARITY', 'OTHER',
] as const;
export const BUSINESS_TYPES = [
  'AGRICULTURE_FORESTRY_FISHING_AND_HUNTING', 'MINING_QUARRYING_AND_OIL_AND_GAS_EXTRACTION', 'UTILITIES', 'CONSTRUCTION',
  'MANUFACTURING', 'WHOLESALE_TRADE', 'RETAIL_TRADE', 'TRANSPORTATION_AND_WAREHOUSING', 'INFORMATION', 'FINANCE_AND_INSURANCE',
  'REAL_ESTATE_AND_RENTAL_AND_LEASING', 'PROFESSIONAL_SCIENTIFIC_AND_TECHNICAL_SERVICES', 'MANAGEMENT_OF_COMPANIES_AND_ENTERPRISES',
  'ADMINISTRATIVE_AND_SUPPORT_AND_WASTE_MANAGEMENT_AND_REMEDIATION_SERVICES', 'EDUCATIONAL_SERVICES', 'HEALTH_CARE_AND_SOCIAL_ASSISTANCE',
  'ARTS_ENTERTAINMENT_AND_RECREATION', 'ACCOMMODATION_AND_FOOD_SERVICES', 'OTHER_SERVICES', 'PUBLIC_ADMINISTRATION',
] as const;
export const BUSINESS_SOURCE_OF_FUNDS = [
  'OPERATING_REVENUE', 'INVESTMENT_INCOME', 'LOANS', 'VENTURE_CAPITAL', 'PERSONAL_SAVINGS', 'DONATIONS', 'OTHER',
] as const;
export const ACCEPTANCE_METHODS = ['CHECKBOX', 'CLICK_TO_ACCEPT'] as const;

export const Country = (options: Record<string, unknown> = {}) =>
  Type.String({ format: 'iso3166-1-alpha-2', maxLength: 2, examples: ['US'], description: 'ISO 3166-1 alpha-2 country code.', ...options });
export const Email = Type.String({ format: 'email', maxLength: 254, examples: ['jane@example.com'] });
export const Phone = Type.String({ format: 'e.164', maxLength: 16, examples: ['+14155550123'], description: 'E.164, e.g. +14155550123.' });
export const DateOnly = (options: Record<string, unknown> = {}) =>
  Type.String({ format: 'date', maxLength: 10, examples: ['1990-01-15'], description: 'A calendar date, YYYY-MM-DD.', ...options });
const Text = (max: number, options: Record<string, unknown> = {}) => Type.String({ minLength: 1, maxLength: max, ...options });
const CurrencyList = Type.Array(CurrencyCode(), { maxItems: 50, uniqueItems: true, examples: [['USD', 'USDC']] });
const CountryList = Type.Array(Country(), { maxItems: 250, uniqueItems: true });
const EnumList = <const T extends readonly string[]>(values: T) => Type.Array(StringEnum(values), { maxItems: values.length, uniqueItems: true });
export const UmaAddress = Type.String({
  // The one rule for UMA addresses; the domain may carry a port, as a platform's umaDomain may (config module).
  pattern: UMA_ADDRESS_PATTERN,
  maxLength: 320,
  examples: ['$jane.doe@pay.example.com'],
  description: 'UMA address `$user@domain`; generated when left out.',
});

export const Address = Type.Object(
  {
    line1: Text(255),
    line2: Type.Optional(Text(255)),
    city: Type.Optional(Text(100)),
    state: Type.Optional(Text(100)),
    postalCode: Text(20),
    country: Country(),
  },
  { additionalProperties: false, title: 'Address' },
);

export const EndUserTermsConsentRequest = Type.Object(
  {
    acceptedAt: DateTime({ description: 'When the customer accepted; not in the future.' }),
    ipAddress: Type.String({ minLength: 2, maxLength: 45, description: 'IPv4 or IPv6 address the customer accepted from.' }),
    termsVersion: Type.String({ minLength: 1, maxLength: 32, examples: ['V1'], description: 'Must be the current version (GET /customers/end-user-terms).' }),
    acceptanceMethod: StringEnum(ACCEPTANCE_METHODS),
  },
  { additionalProperties: false, title: 'EndUserTermsConsentRequest' },
);

const individualFields = {
  fullName: Type.Optional(Text(255)),
  birthDate: Type.Optional(DateOnly({ description: 'Date of birth, YYYY-MM-DD; not in the future.' })),
  nationality: Type.Optional(Country()),
  address: Type.Optional(Address),
  sourceOfFundsCategories: Type.Optional(EnumList(INDIVIDUAL_SOURCE_OF_FUNDS)),
  sourceOfFundsOtherDescription: Type.Optional(Text(500, { description: 'Required exactly when sourceOfFundsCategories holds OTHER.' })),
  sourceOfWealthCategories: Type.Optional(EnumList(SOURCE_OF_WEALTH)),
  sourceOfWealthOtherDescription: Type.Optional(Text(500, { description: 'Required exactly when sourceOfWealthCategories holds OTHER.' })),
  purposeOfAccount: Type.Optional(StringEnum(PURPOSE_OF_ACCOUNT)),
  purposeOfAccountOtherDescription: Type.Optional(Text(500, { description: 'Required exactly when purposeOfAccount is OTHER.' })),
  expectedMonthlyTransactionCount: Type.Optional(StringEnum(TRANSACTION_COUNT)),
  expectedMonthlyTransactionVolume: Type.Optional(StringEnum(TRANSACTION_VOLUME)),
  annualIncomeRange: Type.Optional(StringEnum(ANNUAL_INCOME)),
  netWorthRange: Type.Optional(StringEnum(NET_WORTH)),
  pepStatus: Type.Optional(StringEnum(PEP_STATUS)),
};

const identificationFields = {
  idType: Type.Optional(StringEnum(INDIVIDUAL_ID_TYPES, { description: 'Individuals: SSN, ITIN or EIN.' })),
  identifier: Type.Optional(
    Type.String({ minLength: 10, maxLength: 11, writeOnly: true, description: 'SSN or ITIN as ###-##-####, EIN as ##-#######. Write-only: never returned.' }),
  ),
  countryOfIssuance: Type.Optional(StringEnum(['US'], { description: 'Country that issued the identifier; only US is supported.' })),
};

const businessInfoFields = {
  legalName: Text(255),
  doingBusinessAs: Type.Optional(Text(255)),
  country: Country({ description: 'Country of incorporation.' }),
  registrationNumber: Type.Optional(Text(64)),
  incorporatedOn: DateOnly({ description: 'Date of incorporation; not in the future.' }),
  entityType: Type.Optional(StringEnum(ENTITY_TYPES)),
  taxId: Text(64, { description: 'Tax id; for a US business an EIN, ##-#######, or for a sole proprietorship also the owner’s SSN or ITIN, ###-##-####.' }),
  countriesOfOperation: Type.Optional(CountryList),
  businessType: Type.Optional(StringEnum(BUSINESS_TYPES)),
  purposeOfAccount: Type.Optional(StringEnum(PURPOSE_OF_ACCOUNT)),
  sourceOfFunds: Type.Optional(Text(500)),
  expectedMonthlyTransactionCount: Type.Optional(StringEnum(TRANSACTION_COUNT)),
  expectedMonthlyTransactionVolume: Type.Optional(StringEnum(TRANSACTION_VOLUME)),
  expectedRecipientJurisdictions: Type.Optional(CountryList),
  naicsCode: Type.Optional(Type.String({ pattern: '^\\d{2,6}$', maxLength: 6 })),
  sourceOfFundsCategories: Type.Optional(EnumList(BUSINESS_SOURCE_OF_FUNDS)),
  sourceOfFundsOtherDescription: Type.Optional(Text(500, { description: 'Required exactly when sourceOfFundsCategories holds OTHER.' })),
  purposeOfAccountOtherDescription: Type.Optional(Text(500, { description: 'Required exactly when purposeOfAccount is OTHER.' })),
  expectedCounterpartyCountries: Type.Optional(CountryList),
  primaryContactFirstName: Type.Optional(Text(250)),
  primaryContactLastName: Type.Optional(Text(250)),
};

export const BusinessInfo = Type.Object(businessInfoFields, { additionalProperties: false, title: 'BusinessInfo' });
const BusinessInfoUpdate = Type.Partial(BusinessInfo, { additionalProperties: false, title: 'BusinessInfoUpdate' });

const commonCreate = {
  platformCustomerId: Type.Optional(Text(255, { description: "The platform's own id for the customer; unique among live customers. Generated when left out." })),
  region: Type.Optional(Country({ description: 'Region the customer is served from, ISO 3166-1 alpha-2.' })),
  currencies: Type.Optional(CurrencyList),
  email: Type.Optional(Email),
  phoneNumber: Type.Optional(Phone),
  umaAddress: Type.Optional(UmaAddress),
  endUserTermsConsent: Type.Optional(EndUserTermsConsentRequest),
};

const commonUpdate = {
  currencies: Type.Optional(CurrencyList),
  email: Type.Optional(Email),
  phoneNumber: Type.Optional(Phone),
  umaAddress: Type.Optional(UmaAddress),
  endUserTermsConsent: Type.Optional(EndUserTermsConsentRequest),
};

function oneOfByType(title: string, individual: TSchema, business: TSchema, description: string) {
  return TaggedUnion('customerType', [individual, business], { title, description });
}

const honouredNote = 'Honoured only for a platform that runs its own KYC/KYB (`PATCH /customers/settings {platformKyc: true}`); otherwise 400.';
const platformKycNote = `${honouredNote} Without it a customer starts UNVERIFIED (or APPROVED by sandbox auto-approval).`;
const platformKycUpdateNote = `${honouredNote} APPROVED opens the customer's internal accounts; APPROVED, REJECTED and PENDING record the CUSTOMER.KY{C,B}_<status> event.`;
export const IndividualCustomerCreate = Type.Object(
  {
    customerType: StringEnum(['INDIVIDUAL']),
    kycStatus: Type.Optional(StringEnum(REVIEW_STATUSES, { description: `The KYC status the platform established. ${platformKycNote}` })),
    ...commonCreate,
    ...individualFields,
    ...identificationFields,
  },
  { additionalProperties: false, title: 'IndividualCustomerCreateRequest' },
);
export const BusinessCustomerCreate = Type.Object(
  {
    customerType: StringEnum(['BUSINESS']),
    kybStatus: Type.Optional(StringEnum(REVIEW_STATUSES, { description: `The KYB status the platform established. ${platformKycNote}` })),
    ...commonCreate,
    address: Type.Optional(Address),
    businessInfo: BusinessInfo,
  },
  { additionalProperties: false, title: 'BusinessCustomerCreateRequest' },
);
export const IndividualCustomerUpdate = Type.Object(
  {
    customerType: StringEnum(['INDIVIDUAL']),
    kycStatus: Type.Optional(StringEnum(REVIEW_STATUSES, { description: `The KYC status the platform established. ${platformKycUpdateNote}` })),
    ...commonUpdate,
    ...individualFields,
    ...identificationFields,
  },
  { additionalProperties: false, title: 'IndividualCustomerUpdateRequest' },
);
export const BusinessCustomerUpdate = Type.Object(
  {
    customerType: StringEnum(['BUSINESS']),
    kybStatus: Type.Optional(StringEnum(REVIEW_STATUSES, { description: `The KYB status the platform established. ${platformKycUpdateNote}` })),
    ...commonUpdate,
    address: Type.Optional(Address),
    businessInfo: Type.Optional(BusinessInfoUpdate),
  },
  { additionalProperties: false, title: 'BusinessCustomerUpdateRequest' },
);

export const CustomerCreateRequest = oneOfByType(
  'CustomerCreateRequest',
  IndividualCustomerCreate,
  BusinessCustomerCreate,
  '`customerType` selects the shape: INDIVIDUAL or BUSINESS (which needs `businessInfo`).',
);
export const CustomerUpdateRequest = oneOfByType(
  'CustomerUpdateRequest',
  IndividualCustomerUpdate,
  BusinessCustomerUpdate,
  '`customerType` must be the customer\'s type. Fields left out stay as they are; `currencies` replaces the whole list. ' +
    'E-mail and phone number cannot change in the same request.',
);

export type IndividualCreate = Static<typeof IndividualCustomerCreate>;
export type BusinessCreate = Static<typeof BusinessCustomerCreate>;
export type CustomerCreate = IndividualCreate | BusinessCreate;
export type IndividualUpdate = Static<typeof IndividualCustomerUpdate>;
export type BusinessUpdate = Static<typeof BusinessCustomerUpdate>;
export type CustomerUpdate = IndividualUpdate | BusinessUpdate;
export type AddressT = Static<typeof Address>;
export type BusinessInfoT = Static<typeof BusinessInfo>;
export type EndUserTermsConsentT = Static<typeof EndUserTermsConsentRequest>;

const EndUserTermsConsent = Type.Object(
  {
    acceptedAt: DateTime(),
    ipAddress: Type.String(),
    termsVersion: Type.String(),
    acceptanceMethod: StringEnum(ACCEPTANCE_METHODS),
  },
  { title: 'EndUserTermsConsent' },
);

export const ResponseAddress = Type.Object({
  line1: Type.String(),
  line2: Type.Optional(Type.String()),
  city: Type.Optional(Type.String()),
  state: Type.Optional(Type.String()),
  postalCode: Type.String(),
  country: Type.String(),
});

const ARRAY_BUSINESS_FIELDS = new Set(['countriesOfOperation', 'expectedRecipientJurisdictions', 'sourceOfFundsCategories', 'expectedCounterpartyCountries']);
const ResponseBusinessInfo = Type.Object(
  {
    ...Object.fromEntries(
      Object.keys(businessInfoFields).map((k) => [k, Type.Optional(ARRAY_BUSINESS_FIELDS.has(k) ? Type.Array(Type.String()) : Type.String())]),
    ),
    legalName: Type.String(),
  },
  { title: 'BusinessInfoResponse' },
);

/** A beneficial owner's roles (spec §3.3). */
export const OWNER_ROLES = ['UBO', 'DIRECTOR', 'COMPANY_OFFICER', 'CONTROL_PERSON', 'TRUSTEE', 'GENERAL_PARTNER'] as const;

/*
 * A beneficial owner as answered (upstream's BeneficialOwner). Declared here rather than in
 * beneficial-owners because a business customer's response embeds its owners, and modules
 * depend one way: beneficial-owners uses this declaration.
 */
const PersonalInfoResponse = Type.Object({
  firstName: Type.String(),
  middleName: Type.Optional(Type.String()),
  lastName: Type.String(),
  birthDate: Type.String({ format: 'date' }),
  nationality: Type.String(),
  email: Type.Optional(Type.String()),
  phoneNumber: Type.Optional(Type.String()),
  address: ResponseAddress,
  idType: Type.String(),
  identifier: Type.String({ description: 'Masked: the last four characters (at most half of a shorter identifier), the rest `*`.', examples: ['*******6789'] }),
  countryOfIssuance: Type.Optional(Type.String()),
});

export const BeneficialOwner = Type.Object(
  {
    id: ResourceId('BeneficialOwner'),
    customerId: ResourceId('Customer'),
    roles: Type.Array(StringEnum(OWNER_ROLES)),
    ownershipPercentage: Type.Integer(),
    personalInfo: PersonalInfoResponse,
    kycStatus: StringEnum(['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'HOLD']),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: 'BeneficialOwner' },
);
export type BeneficialOwner = Static<typeof BeneficialOwner>;

/** One flat shape for both types: the fields of the other type are simply absent. */
const CustomerShape = Type.Object(
  {
    id: ResourceId('Customer'),
    platformCustomerId: Type.String(),
    customerType: StringEnum(CUSTOMER_TYPES),
    kycStatus: Type.Optional(StringEnum(REVIEW_STATUSES, { description: 'INDIVIDUAL only.' })),
    kybStatus: Type.Optional(StringEnum(REVIEW_STATUSES, { description: 'BUSINESS only.' })),
    region: Type.Optional(Type.String()),
    currencies: Type.Optional(Type.Array(Type.String())),
    email: Type.Optional(Type.String()),
    phoneNumber: Type.Optional(Type.String()),
    umaAddress: Type.String(),
    endUserTermsConsent: Type.Optional(EndUserTermsConsent),
    fullName: Type.Optional(Type.String()),
    birthDate: Type.Optional(Type.String({ format: 'date' })),
    nationality: Type.Optional(Type.String()),
    address: Type.Optional(ResponseAddress),
    idType: Type.Optional(Type.String()),
    countryOfIssuance: Type.Optional(Type.String()),
    sourceOfFundsCategories: Type.Optional(Type.Array(Type.String())),
    sourceOfFundsOtherDescription: Type.Optional(Type.String()),
    sourceOfWealthCategories: Type.Optional(Type.Array(Type.String())),
    sourceOfWealthOtherDescription: Type.Optional(Type.String()),
    purposeOfAccount: Type.Optional(Type.String()),
    purposeOfAccountOtherDescription: Type.Optional(Type.String()),
    expectedMonthlyTransactionCount: Type.Optional(Type.String()),
    expectedMonthlyTransactionVolume: Type.Optional(Type.String()),
    annualIncomeRange: Type.Optional(Type.String()),
    netWorthRange: Type.Optional(Type.String()),
    pepStatus: Type.Optional(Type.String()),
    businessInfo: Type.Optional(ResponseBusinessInfo),
    beneficialOwners: Type.Optional(
      Type.Array(BeneficialOwner, { description: 'BUSINESS only: every beneficial owner of the business, oldest first (`[]` when none); identifiers masked.' }),
    ),
    isDeleted: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { $id: 'Customer', title: 'Customer', description: 'An INDIVIDUAL or BUSINESS customer. `identifier` is write-only and never returned.' },
);
export type Customer = Static<typeof CustomerShape>;
/** Routes, the list and webhook payloads refer to the shape by `$ref`: it lives once in the OpenAPI document. */
export const Customer = Type.Unsafe<Customer>({ $ref: 'Customer#' });
/** The app registers these once (`app.addSchema`): the components the refs above name. */
export const CUSTOMER_SCHEMAS = [CustomerShape];

export const CustomerListQuery = Type.Object(
  {
    platformCustomerId: Type.Optional(Text(255)),
    customerType: Type.Optional(StringEnum(CUSTOMER_TYPES)),
    ...TimeRangeQuery,
    region: Type.Optional(Country()),
    currency: Type.Optional(CurrencyCode({ description: 'Customers that use this currency.' })),
    umaAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    isIncludingDeleted: Type.Optional(Type.Boolean({ default: false, description: 'Also list deleted customers.' })),
    ...PaginationQuery,
  },
  { additionalProperties: false },
);
export type CustomerListQuery = Static<typeof CustomerListQuery>;

export const CustomerListResponse = ListResponse(Customer, 'CustomerListResponse');
export const CustomerParams = Type.Object({ customerId: IdParam('Customer', 'USER_NOT_FOUND') }, { additionalProperties: false });

export const EndUserTerms = Type.Object(
  { version: Type.String({ examples: ['V1'] }), url: Type.String({ format: 'uri' }) },
  { title: 'EndUserTerms' },
);

export const CustomerSettings = Type.Object(
  {
    sandboxAutoApprove: Type.Boolean({
      description: 'Sandbox only: individuals are KYC-approved at creation (default true). Turn off to exercise the full review.',
    }),
    platformKyc: Type.Boolean({
      description:
        'The platform runs its own KYC/KYB (default false): `kycStatus` (individuals) and `kybStatus` (businesses) sent on POST /customers ' +
        'are then taken as the customer’s review status. Otherwise sending them is 400.',
    }),
  },
  { additionalProperties: false, title: 'CustomerSettings' },
);
export type CustomerSettings = Static<typeof CustomerSettings>;
export const CustomerSettingsUpdate = Type.Partial(CustomerSettings, { additionalProperties: false, minProperties: 1, title: 'CustomerSettingsUpdate' });

/** The bulk import's multipart/form-data body (for the OpenAPI document; the handler reads the stream). */
export const CustomerCsvUpload = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      contentMediaType: 'text/csv',
      description: 'The CSV file (UTF-8, at most 10 MB). Its part needs a file name; the header row names the columns.',
    }),
  },
  { required: ['file'], title: 'CustomerCsvUploadRequest' },
);

export const ImportJobAccepted = Type.Object(
  { jobId: ResourceId('Job'), status: StringEnum(['PENDING', 'PROCESSING']) },
  { title: 'BulkCustomerImportJobAccepted' },
);

export const ImportJobParams = Type.Object({ jobId: IdParam('Job', 'BULK_UPLOAD_JOB_NOT_FOUND', 'bulk upload job') }, { additionalProperties: false });

export const ImportJobResponse = Type.Object(
  {
    id: ResourceId('Job'),
    status: StringEnum(['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED']),
    progress: Type.Object({ total: Type.Integer(), processed: Type.Integer(), successful: Type.Integer(), failed: Type.Integer() }),
    errors: Type.Array(
      Type.Object({
        row: Type.Optional(Type.Integer({ description: 'CSV record number; the header is record 1. Absent on an error of the whole job.' })),
        line: Type.Optional(Type.Integer({ description: 'Line of the file where the record starts (a quoted cell may span lines).' })),
        correlationId: Type.String({ description: 'The row\'s platformCustomerId, or `row <n>` when it has none.' }),
        code: Type.String(),
        message: Type.String(),
        details: Type.Optional(Type.Object({ errors: Type.Optional(Type.Array(FieldErrorSchema)) }, { additionalProperties: true })),
      }),
      { description: 'The first 1,000 failed rows, in row order (all of them: GET …/errors). Values from the file are neutralised against formula injection.' },
    ),
    completedAt: Type.Optional(DateTime()),
  },
  { title: 'BulkCustomerImportJob' },
);

/** Webhooks about a customer's KYC/KYB status; `data` is the customer. */
export const CUSTOMER_EVENTS: EventGroup = {
  name: 'customer-status',
  summary: 'Customer KYC/KYB status',
  description: 'A customer’s `kycStatus` (individuals) or `kybStatus` (businesses) changed. `data` is the whole customer.',
  payload: Customer,
  types: {
    'CUSTOMER.KYC_APPROVED':
      'An individual was approved: by a verification, at creation in sandbox with auto-approval on, or at creation by a platform that runs its own KYC. Its internal accounts are open.',
    'CUSTOMER.KYC_REJECTED': 'An individual was rejected by a verification (or created REJECTED by a platform that runs its own KYC).',
    'CUSTOMER.KYC_PENDING': 'An individual’s verification is under review (or it was created PENDING by a platform that runs its own KYC).',
    'CUSTOMER.KYB_APPROVED': 'A business was approved by a verification (or created APPROVED by a platform that runs its own KYB). Its internal accounts are open.',
    'CUSTOMER.KYB_REJECTED': 'A business was rejected by a verification (or created REJECTED by a platform that runs its own KYB).',
    'CUSTOMER.KYB_PENDING': 'A business’s verification is under review (or it was created PENDING by a platform that runs its own KYB).',
  },
};

/** Webhooks about a bulk CSV import; `data` is the import job. */
export const BULK_UPLOAD_EVENTS: EventGroup = {
  name: 'bulk-upload',
  summary: 'Bulk customer import',
  description: 'A bulk customer import (`POST /customers/bulk/csv`) finished. `data` is the job with its counts and per-row errors.',
  payload: ImportJobResponse,
  types: {
    'BULK_UPLOAD.COMPLETED': 'Every row was processed (rows may still have failed: see `progress.failed` and `errors`).',
    'BULK_UPLOAD.FAILED': 'No row created a customer, or the import stopped after repeated failures (a job-level entry in `errors`).',
  },
};
