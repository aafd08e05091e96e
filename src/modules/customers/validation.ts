import { isIP } from 'node:net';
import type { Config } from '../../config.js';
import { parseDateTime } from '../../platform/datetime.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { CUSTOM_FORMATS, FORMAT_PATTERNS } from '../../platform/http/validation.js';
import { isUmaAddress } from '../../platform/uma-address.js';
import type { CustomerType, EndUserTermsConsentT } from './schemas.js';

/**
 * A US business's taxId: an EIN; for a sole proprietorship also the owner's SSN or ITIN, by the
 * formats an individual's identifier is held to. The pattern is what a refusal names.
 */
const taxIdRule = (compiled: RegExp, named: string) => ({ pattern: compiled.source, compiled, named });
const US_EIN = taxIdRule(/^\d{2}-?\d{7}$/, 'an EIN (##-#######)');
const US_SOLE_PROPRIETOR_TIN = taxIdRule(
  new RegExp([US_EIN.pattern, FORMAT_PATTERNS['us-ssn'], FORMAT_PATTERNS['us-itin']].join('|')),
  'an EIN (##-#######) or the owner’s SSN/ITIN (###-##-####)',
);

// What a customer's fields must satisfy beyond their JSON Schema, on create, update and import.

export interface EndUserTerms {
  version: string;
  url: string;
}

/** Consent timestamps may run a little ahead of our clock; more than this is a mistake. */
const CLOCK_SKEW_MS = 5 * 60_000;
const EARLIEST_DATE = '1900-01-01';

/** `*OtherDescription` fields and the list or enum whose OTHER value makes them required. */
export const OTHER_PAIRS: Record<CustomerType, Array<[string, string]>> = {
  INDIVIDUAL: [
    ['sourceOfFundsCategories', 'sourceOfFundsOtherDescription'],
    ['sourceOfWealthCategories', 'sourceOfWealthOtherDescription'],
    ['purposeOfAccount', 'purposeOfAccountOtherDescription'],
  ],
  BUSINESS: [
    ['businessInfo.sourceOfFundsCategories', 'businessInfo.sourceOfFundsOtherDescription'],
    ['businessInfo.purposeOfAccount', 'businessInfo.purposeOfAccountOtherDescription'],
  ],
};

export function getEndUserTerms(config: Pick<Config, 'endUserTerms'>): EndUserTerms {
  return { ...config.endUserTerms };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function at(obj: Record<string, unknown>, path: string): unknown {
  let current: unknown = obj;
  for (const key of path.split('.')) current = isObject(current) ? current[key] : undefined;
  return current;
}

export function holdsOther(value: unknown): boolean {
  return value === 'OTHER' || (Array.isArray(value) && value.includes('OTHER'));
}

function todayUtc(now: Date): string {
  return now.toISOString().slice(0, 10);
}

function checkPastDate(value: unknown, field: string, now: Date, errors: FieldError[]): void {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return;
  if (value > todayUtc(now)) errors.push({ field, constraint: { format: 'date' }, message: 'must not be in the future' });
  else if (value < EARLIEST_DATE) errors.push({ field, constraint: { format: 'date' }, message: `must not be before ${EARLIEST_DATE}` });
}

/**
 * Rules JSON Schema cannot say: dates in the past, identifiers in the format their type
 * demands, `*OtherDescription` exactly when OTHER is chosen, a consent that is not from the
 * future. `merged` is the customer as it will be after the write; `input` is what was sent.
 * Robust to any input shape, since schema errors are collected beside these.
 */
export function ruleErrors(input: unknown, merged: Record<string, unknown>, type: CustomerType, now: Date, mode: 'create' | 'update'): FieldError[] {
  if (!isObject(input)) return [];
  const errors: FieldError[] = [];
  if (type === 'INDIVIDUAL') {
    checkPastDate(input.birthDate, 'birthDate', now, errors);
    const idType = merged.idType;
    const identifierSent = typeof input.identifier === 'string';
    if (identifierSent && idType === undefined) {
      errors.push({ field: 'idType', constraint: { enum: ['SSN', 'ITIN', 'EIN'] }, message: 'is required when identifier is given' });
    }
    if (input.idType !== undefined && !identifierSent && (mode === 'create' || input.idType !== merged.previousIdType)) {
      errors.push({ field: 'identifier', message: 'is required when idType is given' });
    }
    if (identifierSent && (idType === 'SSN' || idType === 'ITIN')) {
      const format = idType === 'SSN' ? 'us-ssn' : 'us-itin';
      if (!CUSTOM_FORMATS[format]!(input.identifier as string)) {
        errors.push({ field: 'identifier', constraint: { format }, message: `must be a valid ${idType} (###-##-####)` });
      }
    }
    if (identifierSent && idType === 'EIN' && !/^\d{2}-\d{7}$/.test(input.identifier as string)) {
      errors.push({ field: 'identifier', constraint: { pattern: '^\\d{2}-\\d{7}$' }, message: 'must be a valid EIN (##-#######)' });
    }
  } else {
    const info = isObject(input.businessInfo) ? input.businessInfo : {};
    checkPastDate(info.incorporatedOn, 'businessInfo.incorporatedOn', now, errors);
    const country = at(merged, 'businessInfo.country');
    const taxId = info.taxId;
    // A US business files under its EIN; a sole proprietor without one files under the owner's SSN or ITIN.
    const soleProprietor = at(merged, 'businessInfo.entityType') === 'SOLE_PROPRIETORSHIP';
    const rule = soleProprietor ? US_SOLE_PROPRIETOR_TIN : US_EIN;
    if (country === 'US' && typeof taxId === 'string' && !rule.compiled.test(taxId)) {
      errors.push({ field: 'businessInfo.taxId', constraint: { pattern: rule.pattern }, message: `must be ${rule.named} for a US business` });
    }
  }
  for (const [listPath, descriptionPath] of OTHER_PAIRS[type]) {
    const other = holdsOther(at(merged, listPath));
    if (other && typeof at(merged, descriptionPath) !== 'string') {
      errors.push({ field: descriptionPath, message: `is required when ${listPath} holds OTHER` });
    } else if (!other && at(input, descriptionPath) !== undefined) {
      errors.push({ field: descriptionPath, message: `is allowed only when ${listPath} holds OTHER` });
    }
  }
  // The schema's pattern holds the address's shape (its refusal wins where both refuse); a domain
  // no URL can name (`$a@999.0`) passes it, and no VASP could ever reach the customer there.
  if (typeof input.umaAddress === 'string' && !isUmaAddress(input.umaAddress)) {
    errors.push({ field: 'umaAddress', message: 'must name a domain a URL can reach (not a number or invalid punycode in its last label)' });
  }
  if (mode === 'update' && input.email !== undefined && input.phoneNumber !== undefined) {
    errors.push({ field: 'phoneNumber', message: 'cannot change in the same request as email' });
  }
  const consent = input.endUserTermsConsent;
  if (isObject(consent)) {
    if (typeof consent.ipAddress === 'string' && consent.ipAddress.length <= 45 && isIP(consent.ipAddress) === 0) {
      errors.push({ field: 'endUserTermsConsent.ipAddress', message: 'must be an IPv4 or IPv6 address' });
    }
    const acceptedAt = typeof consent.acceptedAt === 'string' ? parseDateTime(consent.acceptedAt) : undefined;
    if (acceptedAt && acceptedAt.getTime() > now.getTime() + CLOCK_SKEW_MS) {
      errors.push({ field: 'endUserTermsConsent.acceptedAt', constraint: { format: 'date-time' }, message: 'must not be in the future' });
    }
  }
  return errors;
}

/** Schema errors first; a rule error on a field the schema already rejected adds nothing. */
export function mergeFieldErrors(schemaErrors: FieldError[], rules: FieldError[]): FieldError[] {
  const seen = new Set(schemaErrors.map((e) => e.field));
  return [...schemaErrors, ...rules.filter((e) => !seen.has(e.field))];
}

export function checkTermsVersion(consent: EndUserTermsConsentT | undefined, terms: EndUserTerms): void {
  if (consent && consent.termsVersion !== terms.version) {
    throw new AppError('END_USER_TERMS_VERSION_NOT_FOUND', `End-user terms version ${consent.termsVersion} does not exist; the current version is ${terms.version}.`, {
      details: { termsVersion: consent.termsVersion, currentVersion: terms.version },
    });
  }
}

/** Field validation of a create request, given the schema's own findings (unknown currencies among them). */
export function checkCreate(input: unknown, schemaErrors: FieldError[], now: Date): void {
  const type = isObject(input) && (input.customerType === 'INDIVIDUAL' || input.customerType === 'BUSINESS') ? input.customerType : undefined;
  const rules = type && isObject(input) ? ruleErrors(input, input, type, now, 'create') : [];
  const errors = mergeFieldErrors(schemaErrors, rules);
  if (errors.length) throw invalidInput(errors);
}
