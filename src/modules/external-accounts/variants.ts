import { field, type FieldSpec } from './fields.js';

/**
 * Every `accountInfo` variant, declared once: its fields (schema and real rule), which are
 * required, the currencies it carries, the rails it is paid on, and which fields identify the
 * destination. `schemas.ts` derives the request and response schemas (OpenAPI, validation,
 * serialisation) from this table, and `validation.ts` its rules.
 */
export const PAYMENT_RAILS = [
  'ACH', 'ACH_COLOMBIA', 'BANK_TRANSFER', 'BRE_B', 'CIPS', 'FAST', 'FASTER_PAYMENTS', 'FEDNOW', 'INSTAPAY', 'MOBILE_MONEY', 'NEFT',
  'PAYNOW', 'PESONET', 'PIX', 'RTGS', 'RTP', 'SEPA', 'SEPA_INSTANT', 'SPEI', 'SWIFT', 'UNIONPAY', 'UPI', 'WIRE',
] as const;
export type PaymentRail = (typeof PAYMENT_RAILS)[number];

/** Where a crypto destination settles (upstream CryptoNetwork), plus Lightning. */
export type DestinationNetwork = 'BASE' | 'ETHEREUM' | 'POLYGON' | 'PLASMA' | 'SOLANA' | 'SPARK' | 'TRON' | 'LIGHTNING';

interface CommonVariant {
  accountType: ExternalAccountType;
  title: string;
  currencies: readonly string[];
  fields: Record<string, FieldSpec>;
  required: readonly string[];
  /** Fields whose values together name the destination: a second live account with the same values is a duplicate. */
  identity: readonly string[];
}

export interface BankVariant extends CommonVariant {
  kind: 'bank';
  /** The account's country; SWIFT accounts carry theirs in `country`. */
  country?: string;
  rails: readonly PaymentRail[];
  /** Multi-rail variants: the fields each rail needs; the account is paid on every rail whose fields are all present. */
  railNeeds?: Partial<Record<PaymentRail, readonly string[]>>;
  /** Rails that pay businesses only (CNY bank transfers are business-to-business). */
  businessOnlyRails?: readonly PaymentRail[];
  /** Extra required fields of an individual beneficiary, and extra fields it may carry. */
  individual?: { required?: readonly string[]; fields?: Record<string, FieldSpec> };
}

export interface WalletVariant extends CommonVariant {
  kind: 'wallet' | 'lightning';
  network: DestinationNetwork;
}

export type Variant = BankVariant | WalletVariant;

const GENERIC_PHONE = '^\\+[0-9]{6,14}$';
const IBAN_PATTERN = '^[A-Z]{2}[0-9]{2}[A-Za-z0-9]{11,30}$';

/** A single-country bank account. */
function bank(
  currency: string,
  country: string | undefined,
  fields: Record<string, FieldSpec>,
  required: readonly string[],
  rails: readonly PaymentRail[],
  extra: Partial<Pick<BankVariant, 'railNeeds' | 'individual' | 'identity' | 'currencies' | 'businessOnlyRails'>> = {},
): BankVariant {
  return {
    kind: 'bank',
    accountType: `${currency}_ACCOUNT` as ExternalAccountType,
    title: `${currency} account`,
    currencies: extra.currencies ?? [currency],
    ...(country ? { country } : {}),
    fields,
    required,
    rails,
    identity: extra.identity ?? required,
    ...(extra.railNeeds ? { railNeeds: extra.railNeeds } : {}),
    ...(extra.individual ? { individual: extra.individual } : {}),
    ...(extra.businessOnlyRails ? { businessOnlyRails: extra.businessOnlyRails } : {}),
  };
}

/** A mobile-money wallet with a provider, paid by MOBILE_MONEY. */
function mobileMoney(currency: string, country: string, phonePattern = GENERIC_PHONE, extra: Record<string, FieldSpec> = {}): BankVariant {
  return bank(
    currency,
    country,
    { phoneNumber: field.phone(phonePattern, true, 'Mobile money number in international format.'), provider: field.provider(), ...extra },
    ['phoneNumber', 'provider', ...Object.keys(extra)],
    ['MOBILE_MONEY'],
    { identity: ['phoneNumber', 'provider'] },
  );
}

/** Bank transfer or mobile money: `bankFields` pay by BANK_TRANSFER, `bankName` + `phoneNumber` by MOBILE_MONEY. */
function bankOrMobile(currency: string, country: string, bankFields: Record<string, FieldSpec>, bankNeeds: readonly string[], extra: Partial<BankVariant> = {}): BankVariant {
  return bank(
    currency,
    country,
    { ...bankFields, phoneNumber: field.phone(GENERIC_PHONE, true, 'Mobile money number in international format (MOBILE_MONEY).') },
    extra.required ?? ['bankName'],
    ['BANK_TRANSFER', 'MOBILE_MONEY'],
    {
      railNeeds: { BANK_TRANSFER: bankNeeds, MOBILE_MONEY: [...(bankNeeds.includes('bankName') ? ['bankName'] : []), 'phoneNumber'] },
      identity: [...new Set([...bankNeeds, 'phoneNumber'])],
      ...(extra.individual ? { individual: extra.individual } : {}),
      ...(extra.businessOnlyRails ? { businessOnlyRails: extra.businessOnlyRails } : {}),
    },
  );
}

const bankWithSwift = (currency: string, country: string) =>
  bank(
    currency,
    country,
    { bankName: field.bankName(), accountNumber: field.accountNumber(1, 34, undefined, `${country} bank account number.`), swiftCode: field.swiftCode(true) },
    ['bankName', 'accountNumber', 'swiftCode'],
    ['BANK_TRANSFER'],
    { identity: ['swiftCode', 'accountNumber'] },
  );

const BANK_VARIANTS: BankVariant[] = [
  bank('AED', 'AE', { iban: field.iban({ min: 23, max: 23 }, '^AE[0-9]{21}$', ['AE']), swiftCode: field.swiftCode(true) }, ['iban'], ['BANK_TRANSFER'], {
    individual: { required: ['address'] },
    identity: ['iban'],
  }),
  bankOrMobile(
    'BDT',
    'BD',
    {
      accountNumber: field.accountNumber(),
      bankName: field.bankName(),
      branchCode: field.digits(5, 'Branch routing code (5 digits).'),
      swiftCode: field.swiftCode(true),
    },
    ['accountNumber', 'bankName'],
  ),
  bank(
    'BRL',
    'BR',
    {
      pixKey: field.pixKey(),
      pixKeyType: field.enumOf(['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'RANDOM'], 'The kind of PIX key.'),
      taxId: field.taxId(),
    },
    ['pixKey', 'pixKeyType', 'taxId'],
    ['PIX'],
    { identity: ['pixKeyType', 'pixKey'] },
  ),
  mobileMoney('BWP', 'BW'),
  bank(
    'CAD',
    'CA',
    {
      bankCode: field.digits(3, 'Financial institution number (3 digits).'),
      branchCode: field.digits(5, 'Transit number of the branch (5 digits).'),
      accountNumber: field.accountNumber(7, 12, '^[0-9]{7,12}$', 'Account number (7–12 digits).'),
    },
    ['bankCode', 'branchCode', 'accountNumber'],
    ['BANK_TRANSFER'],
    { individual: { fields: { registrationNumber: { schema: field.accountNumber(1, 100).schema } } } },
  ),
  bankOrMobile(
    'CNY',
    'CN',
    { accountNumber: field.accountNumber(), bankName: field.bankName(255, 'The bank, or for MOBILE_MONEY the wallet (AliPay, WeChat Pay).') },
    ['accountNumber', 'bankName'],
    { businessOnlyRails: ['BANK_TRANSFER'] },
  ),
  bankOrMobile(
    'COP',
    'CO',
    { accountNumber: field.accountNumber(), bankAccountType: field.bankAccountType(), bankName: field.bankName() },
    ['accountNumber', 'bankAccountType', 'bankName'],
    {
      individual: {
        fields: {
          documentType: field.enumOf(['CC', 'CE', 'TI', 'NIT', 'PP'], 'Colombian identity document type.'),
          documentNumber: { schema: field.accountNumber(1, 50, undefined, 'Identity document number.').schema },
        },
      },
    },
  ),
  bank('DKK', 'DK', { iban: field.iban({ min: 18, max: 18 }, '^DK[0-9]{16}$', ['DK']), swiftCode: field.swiftCode(true) }, ['iban'], ['SEPA', 'SEPA_INSTANT'], {
    identity: ['iban'],
  }),
  bankOrMobile('EGP', 'EG', { iban: field.iban({ min: 29, max: 29 }, '^EG[0-9]{27}$', ['EG']), bankName: field.bankName() }, ['bankName', 'iban']),
  bank('EUR', undefined, { iban: field.iban({ min: 15, max: 34 }, IBAN_PATTERN, 'SEPA'), swiftCode: field.swiftCode('IBAN_COUNTRY') }, ['iban'], ['SEPA', 'SEPA_INSTANT'], {
    individual: { required: ['countryOfResidence'] },
    identity: ['iban'],
  }),
  bank(
    'GBP',
    'GB',
    { sortCode: field.digits(6, 'UK sort code (6 digits).'), accountNumber: field.accountNumber(8, 8, '^[0-9]{8}$', 'UK account number (8 digits).') },
    ['sortCode', 'accountNumber'],
    ['FASTER_PAYMENTS'],
  ),
  bankOrMobile('GHS', 'GH', { accountNumber: field.accountNumber(), bankName: field.bankName() }, ['accountNumber', 'bankName']),
  bank(
    'GTQ',
    'GT',
    { accountNumber: field.accountNumber(), bankAccountType: field.bankAccountType(), bankName: field.bankName() },
    ['accountNumber', 'bankAccountType', 'bankName'],
    ['BANK_TRANSFER'],
    { individual: { required: ['countryOfResidence', 'phoneNumber'] }, identity: ['bankName', 'accountNumber'] },
  ),
  bankWithSwift('HKD', 'HK'),
  // Haitian mobile money names no provider: the number alone reaches the wallet.
  bank('HTG', 'HT', { phoneNumber: field.phone(GENERIC_PHONE, true, 'Mobile money number in international format.') }, ['phoneNumber'], ['MOBILE_MONEY'], {
    identity: ['phoneNumber'],
  }),
  bank(
    'IDR',
    'ID',
    {
      bankName: field.bankName(),
      accountNumber: field.accountNumber(),
      swiftCode: field.swiftCode(true),
      phoneNumber: field.phone('^\\+62[0-9]{9,12}$', true, 'Indonesian mobile number for e-wallet payments.'),
    },
    ['bankName', 'accountNumber', 'swiftCode', 'phoneNumber'],
    ['BANK_TRANSFER'],
    { identity: ['swiftCode', 'accountNumber'] },
  ),
  bank(
    'INR',
    'IN',
    {
      vpa: field.vpa(),
      accountNumber: field.accountNumber(9, 18, '^[0-9]{9,18}$', 'Indian bank account number (9–18 digits).'),
      ifsc: field.ifsc(),
      rail: field.enumOf(['NEFT', 'RTGS'], 'The rail for an account number and IFSC: NEFT or RTGS.'),
      bankName: field.bankName(),
    },
    [],
    ['UPI', 'NEFT', 'RTGS'],
    { railNeeds: { UPI: ['vpa'], NEFT: ['accountNumber', 'ifsc', 'rail'], RTGS: ['accountNumber', 'ifsc', 'rail'] }, identity: ['vpa', 'ifsc', 'accountNumber'] },
  ),
  bank(
    'JMD',
    'JM',
    {
      accountNumber: field.accountNumber(),
      branchCode: field.digits(5, 'Branch code (5 digits).'),
      bankAccountType: field.bankAccountType(),
      bankName: field.bankName(),
    },
    ['accountNumber', 'branchCode', 'bankAccountType', 'bankName'],
    ['BANK_TRANSFER'],
    { individual: { required: ['address', 'phoneNumber'] }, identity: ['bankName', 'branchCode', 'accountNumber'] },
  ),
  mobileMoney('KES', 'KE', '^\\+254[0-9]{9}$'),
  mobileMoney('MWK', 'MW'),
  bank('MXN', 'MX', { clabeNumber: field.clabe() }, ['clabeNumber'], ['SPEI']),
  bankWithSwift('MYR', 'MY'),
  bank(
    'NGN',
    'NG',
    { accountNumber: field.accountNumber(10, 10, '^[0-9]{10}$', 'NUBAN account number (10 digits).'), bankName: field.bankName() },
    ['accountNumber', 'bankName'],
    ['BANK_TRANSFER'],
  ),
  bank(
    'PHP',
    'PH',
    { bankName: field.bankName(), accountNumber: field.accountNumber(8, 16, '^[0-9]{8,16}$', 'Account number (8–16 digits).') },
    ['bankName', 'accountNumber'],
    ['BANK_TRANSFER'],
  ),
  bankOrMobile(
    'PKR',
    'PK',
    { bankName: field.bankName(), accountNumber: field.accountNumber(), iban: field.iban({ min: 24, max: 24 }, '^PK[0-9]{2}[A-Z]{4}[0-9]{16}$', ['PK']) },
    ['accountNumber', 'bankName'],
  ),
  mobileMoney('RWF', 'RW', '^\\+250[0-9]{9}$'),
  bank(
    'SGD',
    'SG',
    { bankName: field.bankName(), accountNumber: field.accountNumber(), swiftCode: field.swiftCode(true) },
    ['accountNumber', 'swiftCode'],
    ['FAST', 'BANK_TRANSFER'],
    { identity: ['swiftCode', 'accountNumber'] },
  ),
  // El Salvador's money is the US dollar: an SLV account carries USD.
  {
    ...bankOrMobile(
      'SLV',
      'SV',
      { bankName: field.bankName(), accountNumber: field.accountNumber(), bankAccountType: field.bankAccountType() },
      ['bankAccountType', 'accountNumber'],
      { required: [] },
    ),
    currencies: ['USD'],
  },
  bankWithSwift('THB', 'TH'),
  mobileMoney('TZS', 'TZ', '^\\+255[0-9]{9}$'),
  mobileMoney('UGX', 'UG'),
  bank(
    'USD',
    'US',
    {
      accountNumber: field.accountNumber(4, 17, '^[0-9]{4,17}$', 'US account number (4–17 digits).'),
      routingNumber: field.routingNumber(),
      bankName: field.bankName(140, 'The bank holding the account; recommended for wires.'),
      bankAccountType: field.bankAccountType(),
      intermediaryBankName: field.bankName(140, 'Intermediary bank, for accounts reached through a correspondent (WIRE only).'),
      intermediaryRoutingNumber: field.routingNumber('ABA routing number of the intermediary bank (WIRE only); checksum verified.'),
      fiToFiInformation: field.freeText(210, 'Bank-to-bank instructions carried with a wire.'),
    },
    ['accountNumber', 'routingNumber'],
    ['ACH', 'WIRE', 'RTP', 'FEDNOW'],
  ),
  bankWithSwift('VND', 'VN'),
  mobileMoney('XAF', 'CM', GENERIC_PHONE, { region: field.enumOf(['CM', 'CG'], 'Country of the wallet within the Central African CFA zone.') }),
  mobileMoney('XOF', 'SN', GENERIC_PHONE, { region: field.enumOf(['BJ', 'CI', 'SN', 'TG'], 'Country of the wallet within the West African CFA zone.') }),
  bank(
    'ZAR',
    'ZA',
    { accountNumber: field.accountNumber(9, 13, '^[0-9]{9,13}$', 'South African account number (9–13 digits).'), bankName: field.bankName() },
    ['accountNumber', 'bankName'],
    ['BANK_TRANSFER'],
  ),
  mobileMoney('ZMW', 'ZM', '^\\+260[0-9]{9}$'),
];

/** Any fiat currency, to a bank named by BIC in any country; `iban` and/or `accountNumber`. */
const SWIFT_VARIANT: BankVariant = {
  kind: 'bank',
  accountType: 'SWIFT_ACCOUNT',
  title: 'SWIFT account',
  currencies: [],
  fields: {
    country: field.country('Country of the bank account (ISO 3166-1 alpha-2); the BIC and IBAN must be of it.'),
    swiftCode: field.swiftCode(true),
    bankName: field.bankName(),
    accountNumber: field.accountNumber(1, 34, undefined, 'The account number; required unless an IBAN is given.'),
    iban: field.iban({ min: 15, max: 34 }, IBAN_PATTERN, 'ACCOUNT_COUNTRY'),
  },
  required: ['swiftCode', 'bankName', 'country'],
  rails: ['SWIFT'],
  identity: ['swiftCode', 'iban', 'accountNumber'],
};

const wallet = (accountType: ExternalAccountType, network: DestinationNetwork, currencies: readonly string[], address: FieldSpec): WalletVariant => ({
  kind: 'wallet',
  accountType,
  title: `${network[0]}${network.slice(1).toLowerCase()} wallet`,
  network,
  currencies,
  fields: { address },
  required: ['address'],
  identity: ['address'],
});

const WALLET_VARIANTS: WalletVariant[] = [
  wallet('BASE_WALLET', 'BASE', ['USDC'], field.evmAddress('Base')),
  wallet('ETHEREUM_WALLET', 'ETHEREUM', ['USDC', 'USDT'], field.evmAddress('Ethereum')),
  wallet('POLYGON_WALLET', 'POLYGON', ['USDC'], field.evmAddress('Polygon')),
  wallet('PLASMA_WALLET', 'PLASMA', ['USDT'], field.evmAddress('Plasma')),
  wallet('SOLANA_WALLET', 'SOLANA', ['USDC', 'USDT'], field.solanaAddress()),
  wallet('SPARK_WALLET', 'SPARK', ['BTC'], field.sparkAddress()),
  wallet('TRON_WALLET', 'TRON', ['USDT'], field.tronAddress()),
  {
    kind: 'lightning',
    accountType: 'LIGHTNING',
    title: 'Lightning',
    network: 'LIGHTNING',
    currencies: ['BTC'],
    fields: { invoice: field.bolt11(), bolt12: field.bolt12(), lightningAddress: field.lightningAddress() },
    required: [],
    identity: ['invoice', 'bolt12', 'lightningAddress'],
  },
];

/** Every accountType, for the static type; the table above must declare exactly these. */
export const ACCOUNT_TYPES = [
  'AED_ACCOUNT', 'BDT_ACCOUNT', 'BRL_ACCOUNT', 'BWP_ACCOUNT', 'CAD_ACCOUNT', 'CNY_ACCOUNT', 'COP_ACCOUNT', 'DKK_ACCOUNT',
  'EGP_ACCOUNT', 'EUR_ACCOUNT', 'GBP_ACCOUNT', 'GHS_ACCOUNT', 'GTQ_ACCOUNT', 'HKD_ACCOUNT', 'HTG_ACCOUNT', 'IDR_ACCOUNT',
  'INR_ACCOUNT', 'JMD_ACCOUNT', 'KES_ACCOUNT', 'MWK_ACCOUNT', 'MXN_ACCOUNT', 'MYR_ACCOUNT', 'NGN_ACCOUNT', 'PHP_ACCOUNT',
  'PKR_ACCOUNT', 'RWF_ACCOUNT', 'SGD_ACCOUNT', 'SLV_ACCOUNT', 'THB_ACCOUNT', 'TZS_ACCOUNT', 'UGX_ACCOUNT', 'USD_ACCOUNT',
  'VND_ACCOUNT', 'XAF_ACCOUNT', 'XOF_ACCOUNT', 'ZAR_ACCOUNT', 'ZMW_ACCOUNT', 'SWIFT_ACCOUNT', 'BASE_WALLET', 'ETHEREUM_WALLET',
  'POLYGON_WALLET', 'PLASMA_WALLET', 'SOLANA_WALLET', 'SPARK_WALLET', 'TRON_WALLET', 'LIGHTNING',
] as const;
export type ExternalAccountType = (typeof ACCOUNT_TYPES)[number];

export const VARIANTS: readonly Variant[] = [...BANK_VARIANTS, SWIFT_VARIANT, ...WALLET_VARIANTS];
if (VARIANTS.map((v) => v.accountType).join() !== ACCOUNT_TYPES.join()) throw new Error('external-accounts: VARIANTS and ACCOUNT_TYPES disagree');
export const VARIANT_BY_TYPE: ReadonlyMap<string, Variant> = new Map(VARIANTS.map((v) => [v.accountType, v]));
