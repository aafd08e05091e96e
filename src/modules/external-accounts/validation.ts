import type { ErrorObject } from 'ajv';
import type { TSchema } from 'typebox';
import { CRYPTO_CURRENCY_CODES, isCurrency } from '../../platform/currencies.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { compileBodySchema, type Validator } from '../../platform/http/validation.js';
import type { NetworkScope } from './formats.js';
import type { RuleContext } from './fields.js';
import { CREATE_INFO_BRANCHES, type AccountInfo } from './schemas.js';
import { VARIANT_BY_TYPE, type BankVariant, type PaymentRail, type Variant } from './variants.js';

const branchValidators = new Map<string, Validator>();

/** The validator of one accountType's create branch, made on first use and kept. */
function branchValidator(accountType: string): Validator | undefined {
  const schema = CREATE_INFO_BRANCHES.get(accountType);
  if (!schema) return undefined;
  let validate = branchValidators.get(accountType);
  if (!validate) {
    validate = compileBodySchema(schema as object);
    branchValidators.set(accountType, validate);
  }
  return validate;
}

/**
 * A Fastify body validator for a create request: the request with accountInfo's tag, then the
 * accountInfo against the branch its accountType names, errors of both reported together.
 */
export function createRequestValidator(envelope: TSchema) {
  const validateRequest = compileBodySchema(envelope as object);
  const validate = (data: unknown): boolean => {
    const errors: ErrorObject[] = validateRequest(data) ? [] : [...(validateRequest.errors ?? [])];
    const info = isObject(data) ? data.accountInfo : undefined;
    const branch = isObject(info) && typeof info.accountType === 'string' ? branchValidator(info.accountType) : undefined;
    if (branch && !branch(info)) errors.push(...(branch.errors ?? []).map((e) => ({ ...e, instancePath: `/accountInfo${e.instancePath}` })));
    validate.errors = errors.length ? errors : null;
    return errors.length === 0;
  };
  validate.errors = null as ErrorObject[] | null;
  return validate;
}

/** An account that passed every rule: its variant, the accountInfo to store, and the rails it is paid on. */
export interface CheckedAccount {
  variant: Variant;
  info: AccountInfo;
  rails: PaymentRail[];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const present = (info: Record<string, unknown>, name: string) => typeof info[name] === 'string' && info[name] !== '';

/** The rails whose required fields are all present (multi-rail variants), else the variant's rails. */
function railsOf(variant: BankVariant, info: Record<string, unknown>): PaymentRail[] {
  if (!variant.railNeeds) return [...variant.rails];
  return (Object.entries(variant.railNeeds) as Array<[PaymentRail, readonly string[]]>)
    .filter(([rail, needs]) => needs.every((n) => present(info, n)) && (!needs.includes('rail') || info.rail === rail))
    .map(([rail]) => rail);
}

function describeNeeds(variant: BankVariant): string {
  return (Object.entries(variant.railNeeds ?? {}) as Array<[PaymentRail, readonly string[]]>).map(([rail, needs]) => `${needs.join(' + ')} (${rail})`).join(', or ');
}

/** Rules between fields, whose failures are missing or contradictory input (INVALID_INPUT). */
function crossFieldErrors(variant: Variant, info: Record<string, unknown>, body: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  if (variant.kind === 'bank') {
    const rails = railsOf(variant, info);
    if (variant.railNeeds && rails.length === 0) errors.push({ field: 'accountInfo', message: `needs ${describeNeeds(variant)}` });
    if (Array.isArray(info.paymentRails)) {
      info.paymentRails.forEach((rail, i) => {
        if (typeof rail === 'string' && !rails.includes(rail as PaymentRail)) {
          errors.push({ field: `accountInfo.paymentRails.${i}`, constraint: { enum: rails }, message: `the account's fields do not allow ${rail}: it can be paid on ${rails.join(', ') || 'no rail'}` });
        }
      });
    }
    const beneficiaryType = isObject(info.beneficiary) ? info.beneficiary.beneficiaryType : undefined;
    for (const rail of variant.businessOnlyRails ?? []) {
      if (rails.includes(rail) && beneficiaryType === 'INDIVIDUAL') {
        errors.push({ field: 'accountInfo.beneficiary.beneficiaryType', constraint: { enum: ['BUSINESS'] }, message: `must be BUSINESS: ${rail} pays businesses only` });
      }
    }
    const country = variant.country ?? (typeof info.country === 'string' ? info.country : undefined);
    if (country && Array.isArray(info.countries) && !info.countries.includes(country)) {
      errors.push({ field: 'accountInfo.countries', message: `must include ${country}, the account's country` });
    }
    if (variant.accountType === 'SWIFT_ACCOUNT' && !present(info, 'accountNumber') && !present(info, 'iban')) {
      errors.push({ field: 'accountInfo.accountNumber', message: 'is required unless iban is given' });
    }
  }
  if (variant.kind === 'lightning') {
    const given = ['invoice', 'bolt12', 'lightningAddress'].filter((n) => info[n] !== undefined);
    if (given.length !== 1) errors.push({ field: 'accountInfo', message: 'needs exactly one of invoice, bolt12 or lightningAddress' });
  }
  if (variant.kind === 'wallet' && body.ownershipType === 'THIRD_PARTY' && info.beneficiary === undefined) {
    errors.push({ field: 'accountInfo.beneficiary', message: "is required for a THIRD_PARTY wallet: the Travel Rule needs its owner's name" });
  }
  return errors;
}

const CONTROL = /\p{Cc}/u;
const CONTROL_BUT_LINE_BREAKS = /[^\P{Cc}\r\n]/u;
/** Nothing a reader would see: whitespace and invisible format characters (zero-width space, BOM) only. */
const BLANK = /^[\s\p{Cf}]+$/u;

/** Free text's rule: no control characters (line breaks only where `lines`), and not only spaces. */
function textProblem(value: string, lines: boolean): string | undefined {
  if ((lines ? CONTROL_BUT_LINE_BREAKS : CONTROL).test(value)) {
    return `must not contain control characters (U+0000–U+001F, U+007F–U+009F)${lines ? ' other than line breaks' : ''}`;
  }
  return BLANK.test(value) ? 'must not be blank' : undefined;
}

/**
 * The free text of an account (bank and provider names, account numbers, a wallet's VASP) and
 * every text of its beneficiary (names, address, document numbers), by `textProblem`: names that
 * are only spaces or carry terminal escapes reach bank files, screens and name checks otherwise.
 */
function freeTextErrors(variant: Variant, info: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  const check = (value: unknown, path: string, lines = false) => {
    if (typeof value === 'string') {
      const problem = textProblem(value, lines);
      if (problem) errors.push({ field: path, message: problem });
    } else if (isObject(value)) {
      for (const [name, item] of Object.entries(value)) check(item, `${path}.${name}`);
    }
  };
  for (const [name, spec] of Object.entries(variant.fields)) if (spec.text) check(info[name], `accountInfo.${name}`, spec.text === 'lines');
  check(info.vaspName, 'accountInfo.vaspName');
  check(info.beneficiary, 'accountInfo.beneficiary');
  return errors;
}

function currencyError(variant: Variant, currency: unknown): FieldError | undefined {
  if (typeof currency !== 'string' || !isCurrency(currency)) return undefined;
  if (variant.accountType === 'SWIFT_ACCOUNT') {
    return CRYPTO_CURRENCY_CODES.has(currency) ? { field: 'currency', message: 'must be a fiat currency for a SWIFT account' } : undefined;
  }
  return variant.currencies.includes(currency)
    ? undefined
    : { field: 'currency', constraint: { enum: [...variant.currencies] }, message: `must be ${variant.currencies.join(' or ')} for ${variant.accountType}` };
}

/**
 * Checks a create request past its schema: every field's real rule (checksums, numbering plans,
 * address encodings), the rules between fields, and the currency. Throws one 400 naming every
 * problem: INVALID_INPUT when anything is missing or malformed, INVALID_BANK_ACCOUNT when the
 * shape is right but the account fails its rules, INVALID_CURRENCY when only the currency is
 * unknown. `schemaErrors` are the request's schema failures, reported together with the rest.
 */
export function checkAccount(body: unknown, schemaErrors: FieldError[], options: { scope: NetworkScope; now: Date }): CheckedAccount {
  const input = isObject(body) ? body : {};
  const info = isObject(input.accountInfo) ? input.accountInfo : {};
  const variant = typeof info.accountType === 'string' ? VARIANT_BY_TYPE.get(info.accountType) : undefined;
  const invalid = new Set(schemaErrors.map((e) => e.field));
  const inputErrors = [...schemaErrors];
  const accountErrors: FieldError[] = [];

  if (variant) {
    const country = variant.kind === 'bank' ? (variant.country ?? (typeof info.country === 'string' ? info.country : undefined)) : undefined;
    const context: RuleContext = { info, ...(country ? { country } : {}), scope: options.scope, now: options.now };
    for (const [name, spec] of Object.entries(variant.fields)) {
      const value = info[name];
      const path = `accountInfo.${name}`;
      if (!spec.rule || typeof value !== 'string' || invalid.has(path)) continue;
      const problem = spec.rule(value, context);
      if (problem) accountErrors.push({ field: path, message: problem });
    }
    inputErrors.push(...freeTextErrors(variant, info).filter((e) => !invalid.has(e.field)));
    inputErrors.push(...crossFieldErrors(variant, info, input).filter((e) => !invalid.has(e.field)));
    const wrongCurrency = currencyError(variant, input.currency);
    if (wrongCurrency) inputErrors.push(wrongCurrency);
  }

  // An unknown currency is a schema error (CurrencyCode): alone, invalidInput makes it INVALID_CURRENCY.
  if (inputErrors.length) throw invalidInput([...inputErrors, ...accountErrors]);
  if (accountErrors.length) throw new AppError('INVALID_BANK_ACCOUNT', 'The account details fail their checks.', { details: { errors: accountErrors } });
  // The schema held, so `variant` is known and `info` has its shape.
  const checked = variant!;
  const allowed = checked.kind === 'bank' ? railsOf(checked, info) : [];
  const chosen = Array.isArray(info.paymentRails) ? (info.paymentRails as PaymentRail[]) : undefined;
  const rails = chosen ? allowed.filter((rail) => chosen.includes(rail)) : allowed;
  const { countries: _countries, ...kept } = info;
  return { variant: checked, info: { ...(kept as AccountInfo), ...(checked.kind === 'bank' ? { paymentRails: rails } : {}) }, rails };
}
