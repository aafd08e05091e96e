import { isIP } from 'node:net';
import type { Config } from '../../config.js';
import { latestDateOnEarth, parseDateTime } from '../../platform/datetime.js';
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

function checkPastDate(value: unknown, field: string, now: Date, errors: FieldError[]): void {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return;
  if (value > latestDateOnEarth(now)) errors.push({ field, constraint: { format: 'date' }, message: 'must not be in the future' });
  else if (value < EARLIEST_DATE) errors.push({ field, constraint: { format: 'date' }, message: `must not be before ${EARLIEST_DATE}` });
}

/**
 * Rules JSON Schema cannot say: dates in the past, identifiers in the format their type
 * demands, `*OtherDescription` exactly when OTHER is chosen, a consent that is not from the
 * future, free text without control characters that is not blank (freeTextErrors). `merged` is
 * the customer as it will be after the write; `input` is what was sent.
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
    // An update that moves the country or entity type without a taxId is held to the one on file (`storedTaxId`).
    const onFile = info.taxId === undefined && mode === 'update' ? merged.storedTaxId : undefined;
    const taxId = info.taxId ?? onFile;
    // A US business files under its EIN; a sole proprietor without one files under the owner's SSN or ITIN.
    const soleProprietor = at(merged, 'businessInfo.entityType') === 'SOLE_PROPRIETORSHIP';
    const rule = soleProprietor ? US_SOLE_PROPRIETOR_TIN : US_EIN;
    if (country === 'US' && typeof taxId === 'string' && !rule.compiled.test(taxId)) {
      const message = `must be ${rule.named} for a US business${onFile === undefined ? '' : ': the taxId on file is not, so send one with this change'}`;
      errors.push({ field: 'businessInfo.taxId', constraint: { pattern: rule.pattern }, message });
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
  // One entry per field: a field another rule refuses keeps that rule's error.
  return mergeFieldErrors(errors, freeTextErrors(input));
}

const CONTROL = /\p{Cc}/u;
const CONTROL_BUT_LINE_BREAKS = /[^\P{Cc}\r\n]/u;
/** Nothing a reader would see: whitespace and invisible format characters (zero-width space, BOM) only. */
const BLANK = /^[\s\p{Cf}]+$/u;
/** Free text that may run over several lines: the descriptions of a choice of OTHER, a business's own words on its funds. */
const MULTILINE = /(OtherDescription|^businessInfo\.sourceOfFunds)$/;

/**
 * Free text's rule, as external accounts hold theirs: no control characters (line breaks only in
 * the longer descriptions), and not only spaces or invisible characters. A name of spaces would
 * count as given when a review asks for it, and terminal escapes would reach logs and the screens
 * of whoever reviews the customer. Every string of `value` is checked, named by its dot path
 * under `path`; a field the schema also refuses keeps the schema's error (mergeFieldErrors).
 */
export function freeTextErrors(value: unknown, path = ''): FieldError[] {
  if (typeof value === 'string') {
    const lines = MULTILINE.test(path);
    if ((lines ? CONTROL_BUT_LINE_BREAKS : CONTROL).test(value)) {
      return [{ field: path, message: `must not contain control characters (U+0000–U+001F, U+007F–U+009F)${lines ? ' other than line breaks' : ''}` }];
    }
    return BLANK.test(value) ? [{ field: path, message: 'must not be blank' }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => freeTextErrors(item, path ? `${path}.${i}` : String(i)));
  if (isObject(value)) return Object.entries(value).flatMap(([key, item]) => freeTextErrors(item, path ? `${path}.${key}` : key));
  return [];
}

/** Schema errors first; a rule error on a field the schema already rejected (or inside one: an unknown object) adds nothing. */
export function mergeFieldErrors(schemaErrors: FieldError[], rules: FieldError[]): FieldError[] {
  const seen = new Set(schemaErrors.map((e) => e.field));
  const covered = (field: string) => field.split('.').some((_, i, parts) => seen.has(parts.slice(0, i + 1).join('.')));
  return [...schemaErrors, ...rules.filter((e) => !covered(e.field))];
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
