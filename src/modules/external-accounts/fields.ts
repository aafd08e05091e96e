import Type, { type TSchema } from 'typebox';
import { StringEnum } from '../../platform/http/schemas.js';
import { Address, Country, DateOnly, Email, Phone } from '../customers/index.js';
import {
  checkBic,
  checkBicOfIban,
  checkBolt11,
  checkBolt12,
  checkClabe,
  checkCpfOrCnpj,
  checkEvmAddress,
  checkIban,
  checkLightningAddress,
  checkPhone,
  checkPixKey,
  checkRoutingNumber,
  checkSolanaAddress,
  checkSparkAddress,
  checkTronAddress,
  type NetworkScope,
  type Problem,
} from './formats.js';

/** What a field's rule may look at besides its own value. */
export interface RuleContext {
  /** The whole accountInfo as sent. */
  info: Record<string, unknown>;
  /** The account's country, where the account type has one. */
  country?: string;
  scope: NetworkScope;
  now: Date;
}
export type FieldRule = (value: string, context: RuleContext) => Problem;

/** One accountInfo field: its schema (shape, from upstream's facets) and its real rule, if any. */
export interface FieldSpec {
  schema: TSchema;
  rule?: FieldRule;
  /** Free text (a name, a number as the bank writes it): not blank, no control characters; `lines` may hold line breaks. */
  text?: 'line' | 'lines';
}

const text = (min: number, max: number, options: Record<string, unknown> = {}) => Type.String({ minLength: min, maxLength: max, ...options });

/** The region whose numbering plan a phone must follow: the XOF/XAF `region` field, else the account's country. */
const phoneRegion = (context: RuleContext) => (typeof context.info.region === 'string' ? context.info.region : context.country!);

export const field = {
  bankName: (max = 255, description = 'The name of the bank.'): FieldSpec => ({ schema: text(1, max, { description }), text: 'line' }),
  accountNumber: (min = 1, max = 34, pattern?: string, description = 'The account number at the bank.'): FieldSpec => ({
    schema: text(min, max, { ...(pattern ? { pattern } : {}), description }),
    text: 'line',
  }),
  /** `ACCOUNT_COUNTRY`: the IBAN must be of the account's country (SWIFT accounts name it). */
  iban: (length: { min: number; max: number }, pattern: string, countries: readonly string[] | 'SEPA' | 'ACCOUNT_COUNTRY'): FieldSpec => ({
    schema: text(length.min, length.max, { pattern, description: 'IBAN in electronic form (no spaces); its check digits are verified.' }),
    rule: (v, c) => checkIban(v, countries === 'ACCOUNT_COUNTRY' ? (c.country ? [c.country] : undefined) : countries),
  }),
  country: (description: string): FieldSpec => ({ schema: Country({ description }) }),
  /**
   * A BIC. `sameCountry`: the bank must be in the account's country; `IBAN_COUNTRY`: in the
   * country of the account's `iban` (or a SEPA territory using its IBANs, formats.ts).
   */
  swiftCode: (sameCountry: boolean | 'IBAN_COUNTRY'): FieldSpec => ({
    schema: text(8, 11, { pattern: '^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$', description: 'SWIFT/BIC code of the bank (ISO 9362).', examples: ['DEUTDEFF'] }),
    rule: (v, c) => (sameCountry === 'IBAN_COUNTRY' ? checkBicOfIban(v, c.info.iban) : checkBic(v, sameCountry ? c.country : undefined)),
  }),
  routingNumber: (description = 'ABA routing number; its checksum is verified.'): FieldSpec => ({
    schema: text(9, 9, { pattern: '^[0-9]{9}$', description, examples: ['021000021'] }),
    rule: checkRoutingNumber,
  }),
  clabe: (): FieldSpec => ({
    schema: text(18, 18, { pattern: '^[0-9]{18}$', description: 'CLABE; its control digit and bank code are verified.', examples: ['002010077777777771'] }),
    rule: checkClabe,
  }),
  /** `pattern` is upstream's per-country form; the rule checks the numbering plan. */
  phone: (pattern: string, mobile: boolean, description = 'Phone number in international format.'): FieldSpec => ({
    schema: text(7, 15, { pattern, description }),
    rule: (v, c) => checkPhone(v, phoneRegion(c), { mobile }),
  }),
  provider: (): FieldSpec => ({ schema: text(1, 255, { description: 'The mobile money provider.' }), text: 'line' }),
  bankAccountType: (): FieldSpec => ({ schema: StringEnum(['CHECKING', 'SAVINGS'] as const, { description: 'Checking or savings account.' }) }),
  digits: (length: number, description: string): FieldSpec => ({ schema: text(length, length, { pattern: `^[0-9]{${length}}$`, description }) }),
  enumOf: (values: readonly string[], description: string): FieldSpec => ({ schema: StringEnum(values, { description }) }),
  pixKey: (): FieldSpec => ({
    schema: text(1, 77, { description: 'The PIX key, of the type named by pixKeyType (CPF, CNPJ, EMAIL, PHONE in +55 form, RANDOM UUID).' }),
    rule: (v, c) => checkPixKey(v, c.info.pixKeyType),
  }),
  taxId: (): FieldSpec => ({
    schema: text(11, 14, { pattern: '^[0-9]{11,14}$', description: 'CPF (11 digits) or CNPJ (14 digits); check digits are verified.' }),
    rule: checkCpfOrCnpj,
  }),
  ifsc: (): FieldSpec => ({
    schema: text(11, 11, { pattern: '^[A-Z]{4}0[A-Z0-9]{6}$', description: 'IFSC of the branch: 4-letter bank code, 0, 6-character branch code.', examples: ['HDFC0001234'] }),
  }),
  vpa: (): FieldSpec => ({
    schema: text(3, 255, { pattern: '^[a-zA-Z0-9.\\-_]+@[a-zA-Z0-9]+$', description: 'UPI virtual payment address (name@handle).', examples: ['user@upi'] }),
  }),
  freeText: (max: number, description: string): FieldSpec => ({ schema: Type.String({ maxLength: max, description }), text: 'lines' }),
  evmAddress: (chain: string): FieldSpec => ({
    schema: text(42, 42, { description: `${chain} address: 0x and 40 hex digits; mixed case must carry a valid EIP-55 checksum.` }),
    rule: checkEvmAddress,
  }),
  solanaAddress: (): FieldSpec => ({ schema: text(32, 44, { description: 'Solana address: base58 of a 32-byte public key.' }), rule: checkSolanaAddress }),
  tronAddress: (): FieldSpec => ({ schema: text(34, 34, { description: 'Tron address (T…): base58check of 21 bytes, prefix 0x41.' }), rule: checkTronAddress }),
  sparkAddress: (): FieldSpec => ({
    schema: text(14, 120, { description: 'Spark address: bech32m of the wallet identity key (spark1… on mainnet).' }),
    rule: (v, c) => checkSparkAddress(v, c.scope),
  }),
  bolt11: (): FieldSpec => ({
    schema: text(20, 7089, { description: 'A BOLT11 invoice (one-time). Its signature and expiry are checked.' }),
    rule: (v, c) => checkBolt11(v, c.scope, c.now),
  }),
  bolt12: (): FieldSpec => ({ schema: text(10, 7089, { description: 'A BOLT12 offer (lno1…), reusable.' }), rule: checkBolt12 }),
  lightningAddress: (): FieldSpec => ({
    schema: text(3, 320, { description: 'A lightning address (LUD-16), user@domain.', examples: ['alice@wallet.example.com'] }),
    rule: checkLightningAddress,
  }),
};

/** Beneficiary fields every individual variant shares; per-currency variants require more of them. */
export const individualBeneficiaryFields: Record<string, TSchema> = {
  beneficiaryType: StringEnum(['INDIVIDUAL'] as const),
  fullName: text(1, 255, { description: 'Full name of the account holder, as the bank knows it.' }),
  birthDate: DateOnly(),
  nationality: Country(),
  email: Email,
  phoneNumber: Phone,
  countryOfResidence: Country(),
  address: Address,
};

export const BusinessBeneficiary = Type.Object(
  {
    beneficiaryType: StringEnum(['BUSINESS'] as const),
    legalName: text(1, 255, { description: 'Legal name of the business holding the account.' }),
    registrationNumber: Type.Optional(text(1, 100)),
    taxId: Type.Optional(text(1, 50)),
    email: Type.Optional(Email),
    phoneNumber: Type.Optional(Phone),
    countryOfResidence: Type.Optional(Country()),
    address: Type.Optional(Address),
  },
  { additionalProperties: false, title: 'BusinessBeneficiary' },
);

/** The owner of a crypto wallet: an individual (name and residence, for the Travel Rule) or a business. */
export const WalletIndividualBeneficiary = Type.Object(
  {
    beneficiaryType: StringEnum(['INDIVIDUAL'] as const),
    fullName: text(1, 255, { description: 'Full name of the wallet owner.' }),
    countryOfResidence: Country(),
  },
  { additionalProperties: false, title: 'WalletIndividualBeneficiary' },
);
