import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { parseDateTime, validDateTime } from '../../platform/datetime.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { CUSTOM_FORMATS } from '../../platform/http/validation.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { recordEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { getConfigRow } from '../config/service.js';
import { provisionCustomerAccounts } from '../internal-accounts/service.js';
import { accountTiedToEmail, retieEmailCredentials } from '../wallet-auth/service.js';
import {
  findCustomer,
  findSettings,
  insertCustomer,
  listCustomers as listCustomerRows,
  liveCustomerIdByPlatformCustomerId,
  umaAddressTaken,
  UNIQUE_PLATFORM_CUSTOMER_ID,
  UNIQUE_UMA_ADDRESS,
  updateCustomer as updateCustomerRow,
  upsertSettings,
  type CustomerRow,
} from './repo.js';
import type {
  AddressT,
  BusinessInfoT,
  Customer,
  CustomerCreate,
  CustomerListQuery,
  CustomerSettings,
  CustomerType,
  CustomerUpdate,
  EndUserTermsConsentT,
  ReviewStatus,
} from './schemas.js';

export interface CallerContext {
  platformId: string;
  environment: 'sandbox' | 'production';
}

export interface EndUserTerms {
  version: string;
  url: string;
}

/** Consent timestamps may run a little ahead of our clock; more than this is a mistake. */
const CLOCK_SKEW_MS = 5 * 60_000;
const EARLIEST_DATE = '1900-01-01';
const DEFAULT_UMA_DOMAIN = 'uma.corridor.local';

/** Keys of the request that are columns, not profile fields. */
const COMMON_KEYS = new Set(['customerType', 'platformCustomerId', 'region', 'currencies', 'email', 'phoneNumber', 'umaAddress', 'endUserTermsConsent', 'identifier']);

/** `*OtherDescription` fields and the list or enum whose OTHER value makes them required. */
const OTHER_PAIRS: Record<CustomerType, Array<[string, string]>> = {
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function at(obj: Record<string, unknown>, path: string): unknown {
  let current: unknown = obj;
  for (const key of path.split('.')) current = isObject(current) ? current[key] : undefined;
  return current;
}

function holdsOther(value: unknown): boolean {
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
      errors.push({ field: 'idType', constraint: { enum: ['SSN', 'ITIN'] }, message: 'is required when identifier is given' });
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
  } else {
    const info = isObject(input.businessInfo) ? input.businessInfo : {};
    checkPastDate(info.incorporatedOn, 'businessInfo.incorporatedOn', now, errors);
    const country = at(merged, 'businessInfo.country');
    const taxId = info.taxId;
    if (country === 'US' && typeof taxId === 'string' && !/^\d{2}-?\d{7}$/.test(taxId)) {
      errors.push({ field: 'businessInfo.taxId', constraint: { pattern: '^\\d{2}-?\\d{7}$' }, message: 'must be an EIN (##-#######) for a US business' });
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

function checkTermsVersion(consent: EndUserTermsConsentT | undefined, terms: EndUserTerms): void {
  if (consent && consent.termsVersion !== terms.version) {
    throw new AppError('END_USER_TERMS_VERSION_NOT_FOUND', `End-user terms version ${consent.termsVersion} does not exist; the current version is ${terms.version}.`, {
      details: { termsVersion: consent.termsVersion, currentVersion: terms.version },
    });
  }
}

function statusField(type: CustomerType): 'kycStatus' | 'kybStatus' {
  return type === 'INDIVIDUAL' ? 'kycStatus' : 'kybStatus';
}

export function toCustomer(row: CustomerRow): Customer {
  const profile = row.profile as Record<string, unknown>;
  return {
    id: formatId('Customer', row.id),
    platformCustomerId: row.platform_customer_id,
    customerType: row.customer_type,
    [statusField(row.customer_type)]: row.review_status,
    ...(row.region ? { region: row.region } : {}),
    ...(row.currencies ? { currencies: row.currencies } : {}),
    ...(row.email ? { email: row.email } : {}),
    ...(row.phone_number ? { phoneNumber: row.phone_number } : {}),
    umaAddress: row.uma_address,
    ...(row.terms_version
      ? {
          endUserTermsConsent: {
            acceptedAt: row.terms_accepted_at!.toISOString(),
            ipAddress: row.terms_ip_address!,
            termsVersion: row.terms_version,
            acceptanceMethod: row.terms_acceptance_method as 'CHECKBOX' | 'CLICK_TO_ACCEPT',
          },
        }
      : {}),
    ...profile,
    isDeleted: row.deleted_at !== null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  } as Customer;
}

function profileOf(input: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([k, v]) => !COMMON_KEYS.has(k) && v !== undefined));
}

function consentColumns(consent: EndUserTermsConsentT | undefined): Partial<CustomerRow> {
  if (!consent) return {};
  return {
    terms_version: consent.termsVersion,
    terms_accepted_at: validDateTime(consent.acceptedAt),
    terms_ip_address: consent.ipAddress,
    terms_acceptance_method: consent.acceptanceMethod,
  };
}

function uniqueViolation(error: unknown): 'platformCustomerId' | 'umaAddress' | undefined {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown } | null;
  if (e?.code !== '23505') return undefined;
  const where = `${String(e.constraint ?? '')} ${String(e.message ?? '')}`;
  if (where.includes(UNIQUE_PLATFORM_CUSTOMER_ID)) return 'platformCustomerId';
  if (where.includes(UNIQUE_UMA_ADDRESS)) return 'umaAddress';
  return undefined;
}

function platformCustomerIdTaken(value: string): AppError {
  return new AppError('CONFLICT', `A customer with platformCustomerId ${value} already exists.`, {
    details: { field: 'platformCustomerId', platformCustomerId: value },
  });
}

function umaTaken(value: string): AppError {
  return new AppError('UMA_ADDRESS_EXISTS', `The UMA address ${value} is already in use.`, { details: { field: 'umaAddress', umaAddress: value } });
}

/** Turns a lost race on a unique index into the same answer the pre-check gives. */
async function guardUnique<T>(values: { platformCustomerId: string; umaAddress: string }, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const which = uniqueViolation(error);
    if (which === 'platformCustomerId') throw platformCustomerIdTaken(values.platformCustomerId);
    if (which === 'umaAddress') throw umaTaken(values.umaAddress);
    throw error;
  }
}

async function sandboxAutoApprove(db: DbOrTx, caller: CallerContext): Promise<boolean> {
  if (caller.environment !== 'sandbox') return false;
  return (await findSettings(db, caller.platformId))?.sandbox_auto_approve ?? true;
}

function notFound(customerId: string): AppError {
  return new AppError('USER_NOT_FOUND', `Customer ${customerId} was not found.`);
}

function deleted(customerId: string): AppError {
  return new AppError('CUSTOMER_DELETED', `Customer ${customerId} has been deleted.`);
}

/** Field validation of a create request, given the schema's own findings. Throws INVALID_INPUT. */
export function checkCreate(input: unknown, schemaErrors: FieldError[], now: Date): void {
  const type = isObject(input) && (input.customerType === 'INDIVIDUAL' || input.customerType === 'BUSINESS') ? input.customerType : undefined;
  const rules = type && isObject(input) ? ruleErrors(input, input, type, now, 'create') : [];
  const errors = mergeFieldErrors(schemaErrors, rules);
  if (errors.length) throw invalidInput(errors);
}

export async function createCustomer(trx: Tx, clock: Clock, caller: CallerContext, terms: EndUserTerms, input: CustomerCreate): Promise<Customer> {
  checkTermsVersion(input.endUserTermsConsent, terms);
  const now = clock.now();
  const id = uuidv7(now.getTime());
  const platformCustomerId = input.platformCustomerId ?? id;
  if (await liveCustomerIdByPlatformCustomerId(trx, caller.platformId, platformCustomerId)) throw platformCustomerIdTaken(platformCustomerId);
  let umaAddress = input.umaAddress;
  if (umaAddress) {
    if (await umaAddressTaken(trx, caller.platformId, umaAddress)) throw umaTaken(umaAddress);
  } else {
    const config = await getConfigRow(trx, caller.platformId);
    umaAddress = `$c${randomBytes(8).toString('hex')}@${config.uma_domain ?? DEFAULT_UMA_DOMAIN}`;
  }
  const profile = profileOf(input as Record<string, unknown>);
  if (input.customerType === 'INDIVIDUAL' && input.idType && !input.countryOfIssuance) profile.countryOfIssuance = 'US';
  const approve = input.customerType === 'INDIVIDUAL' && (await sandboxAutoApprove(trx, caller));
  const row: CustomerRow = {
    id,
    platform_id: caller.platformId,
    platform_customer_id: platformCustomerId,
    customer_type: input.customerType,
    review_status: approve ? 'APPROVED' : 'UNVERIFIED',
    region: input.region ?? null,
    currencies: input.currencies ?? null,
    email: input.email ?? null,
    phone_number: input.phoneNumber ?? null,
    uma_address: umaAddress,
    profile,
    identifier: (input.customerType === 'INDIVIDUAL' && input.identifier) || null,
    terms_version: null,
    terms_accepted_at: null,
    terms_ip_address: null,
    terms_acceptance_method: null,
    ...consentColumns(input.endUserTermsConsent),
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  await guardUnique({ platformCustomerId, umaAddress }, () => insertCustomer(trx, row));
  const customer = toCustomer(row);
  if (approve) {
    await provisionCustomerAccounts(trx, clock, caller.platformId, id, row.email);
    await recordEvent(trx, clock, { platformId: caller.platformId, type: 'CUSTOMER.KYC_APPROVED', resourceId: customer.id, data: customer });
  }
  return customer;
}

async function loadLive(db: DbOrTx, platformId: string, customerId: string, forUpdate = false): Promise<CustomerRow> {
  const uuid = parseId('Customer', customerId);
  const row = uuid && (await findCustomer(db, platformId, uuid, { forUpdate }));
  if (!row) throw notFound(customerId);
  if (row.deleted_at) throw deleted(customerId);
  return row;
}

export async function getCustomer(db: DbOrTx, platformId: string, customerId: string): Promise<Customer> {
  const uuid = parseId('Customer', customerId);
  const row = uuid && (await findCustomer(db, platformId, uuid));
  if (!row) throw notFound(customerId);
  return toCustomer(row);
}

export async function listCustomers(db: DbOrTx, platformId: string, query: CustomerListQuery): Promise<Page<Customer>> {
  const page = pageRequest(query);
  const { rows, totalCount } = await listCustomerRows(
    db,
    platformId,
    {
      platformCustomerId: query.platformCustomerId,
      customerType: query.customerType,
      timeRange: query,
      region: query.region,
      currency: query.currency,
      umaAddress: query.umaAddress,
      includeDeleted: query.isIncludingDeleted ?? false,
    },
    page,
  );
  return toPage(rows, page, toCustomer, totalCount);
}

/** The profile after applying an update: nested objects merge, a dropped OTHER drops its description. */
function mergeProfile(type: CustomerType, current: Record<string, unknown>, input: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...current, ...profileOf(input) };
  if (type === 'BUSINESS' && isObject(input.businessInfo)) {
    merged.businessInfo = { ...(isObject(current.businessInfo) ? current.businessInfo : {}), ...input.businessInfo };
  }
  for (const [listPath, descriptionPath] of OTHER_PAIRS[type]) {
    if (holdsOther(at(merged, listPath)) || at(input, descriptionPath) !== undefined) continue;
    const [head, leaf] = descriptionPath.includes('.') ? descriptionPath.split('.') : [undefined, descriptionPath];
    const holder = head ? (merged[head] as Record<string, unknown> | undefined) : merged;
    if (holder) delete holder[leaf!];
  }
  return merged;
}

/**
 * Field validation of an update against the stored customer. Runs before any change, so a
 * rejected request leaves the customer untouched.
 */
export async function updateCustomer(
  trx: Tx,
  clock: Clock,
  platformId: string,
  terms: EndUserTerms,
  customerId: string,
  input: unknown,
  schemaErrors: FieldError[],
): Promise<Customer> {
  const row = await loadLive(trx, platformId, customerId, true);
  const body = isObject(input) ? input : {};
  const type = row.customer_type;
  const errors: FieldError[] = [...schemaErrors];
  if (body.customerType !== type && !errors.some((e) => e.field === 'customerType')) {
    errors.push({ field: 'customerType', constraint: { enum: [type] }, message: `must be ${type}, the type of this customer` });
  }
  const merged = mergeProfile(type, row.profile as Record<string, unknown>, body);
  const withPrevious = { ...merged, previousIdType: (row.profile as Record<string, unknown>).idType };
  const all = mergeFieldErrors(errors, body.customerType === type ? ruleErrors(body, withPrevious, type, clock.now(), 'update') : []);
  if (all.length) throw invalidInput(all);

  const update = body as CustomerUpdate;
  checkTermsVersion(update.endUserTermsConsent, terms);
  if (update.umaAddress && (await umaAddressTaken(trx, platformId, update.umaAddress, row.id))) throw umaTaken(update.umaAddress);
  if (type === 'INDIVIDUAL' && update.customerType === 'INDIVIDUAL' && update.idType && !merged.countryOfIssuance) merged.countryOfIssuance = 'US';
  const changes: Partial<CustomerRow> = {
    profile: merged,
    ...(update.currencies ? { currencies: update.currencies } : {}),
    ...(update.email !== undefined ? { email: update.email } : {}),
    ...(update.phoneNumber !== undefined ? { phone_number: update.phoneNumber } : {}),
    ...(update.umaAddress ? { uma_address: update.umaAddress } : {}),
    ...(update.customerType === 'INDIVIDUAL' && update.identifier ? { identifier: update.identifier } : {}),
    ...consentColumns(update.endUserTermsConsent),
    updated_at: clock.now(),
  };
  const updated = await guardUnique({ platformCustomerId: row.platform_customer_id, umaAddress: update.umaAddress ?? row.uma_address }, () =>
    updateCustomerRow(trx, platformId, row.id, changes),
  );
  // A customer approved without an e-mail gets the embedded wallet once one is set.
  if (!row.email && updated.email && updated.review_status === 'APPROVED') {
    await provisionCustomerAccounts(trx, clock, platformId, row.id, updated.email);
  }
  return toCustomer(updated);
}

/**
 * When this update changes the e-mail that a wallet's EMAIL_OTP credential is tied to, the
 * wallet account whose session must sign it (spec §4.3); otherwise undefined.
 */
export async function emailChangeSigner(db: DbOrTx, platformId: string, customerId: string, input: unknown): Promise<string | undefined> {
  const email = isObject(input) && typeof input.email === 'string' ? input.email : undefined;
  const uuid = parseId('Customer', customerId);
  if (email === undefined || !uuid) return undefined;
  const row = await findCustomer(db, platformId, uuid);
  if (!row || row.deleted_at || row.email === email) return undefined;
  return accountTiedToEmail(db, platformId, uuid);
}

/** The signed e-mail change: the customer and its EMAIL_OTP credentials change together. */
export async function changeTiedEmail(trx: Tx, clock: Clock, platformId: string, terms: EndUserTerms, customerId: string, input: unknown): Promise<Customer> {
  const customer = await updateCustomer(trx, clock, platformId, terms, customerId, input, []);
  await retieEmailCredentials(trx, clock, platformId, parseId('Customer', customerId)!, customer.email!);
  return customer;
}

export async function deleteCustomer(trx: Tx, clock: Clock, platformId: string, customerId: string): Promise<Customer> {
  const row = await loadLive(trx, platformId, customerId, true);
  const now = clock.now();
  const updated = await updateCustomerRow(trx, platformId, row.id, { deleted_at: now, updated_at: now });
  const customer = toCustomer(updated);
  await recordEvent(trx, clock, { platformId, type: 'CUSTOMER.DELETED', resourceId: customer.id, data: customer });
  return customer;
}

/** For quotes: whether a live customer has accepted end-user terms (END_USER_TERMS_NOT_ACCEPTED otherwise). */
export async function hasAcceptedEndUserTerms(db: DbOrTx, platformId: string, customerUuid: string): Promise<boolean> {
  const row = await findCustomer(db, platformId, customerUuid);
  return Boolean(row && !row.deleted_at && row.terms_version);
}

/** What verification needs about a customer, including the write-only identifier. */
export interface CustomerForReview {
  uuid: string;
  id: string;
  type: CustomerType;
  status: ReviewStatus;
  platformCustomerId: string;
  profile: Record<string, unknown> & { address?: AddressT; businessInfo?: BusinessInfoT };
  identifier: string | null;
}

/** A live customer of this platform, locked for the review; USER_NOT_FOUND or CUSTOMER_DELETED otherwise. */
export async function loadCustomerForReview(trx: Tx, platformId: string, customerId: string): Promise<CustomerForReview> {
  const row = await loadLive(trx, platformId, customerId, true);
  return {
    uuid: row.id,
    id: formatId('Customer', row.id),
    type: row.customer_type,
    status: row.review_status,
    platformCustomerId: row.platform_customer_id,
    profile: row.profile as CustomerForReview['profile'],
    identifier: row.identifier,
  };
}

/** A live customer's type, for modules that hang records on customers (USER_NOT_FOUND otherwise). */
export async function customerTypeOf(
  db: DbOrTx,
  platformId: string,
  customerId: string,
  options: { forUpdate?: boolean } = {},
): Promise<{ uuid: string; type: CustomerType }> {
  const row = await loadLive(db, platformId, customerId, options.forUpdate);
  return { uuid: row.id, type: row.customer_type };
}

/**
 * Moves a customer's kycStatus/kybStatus and records `CUSTOMER.KY{C,B}_<status>`. Approval
 * opens the customer's internal accounts in the same transaction.
 */
export async function setReviewStatus(trx: Tx, clock: Clock, platformId: string, customerUuid: string, status: ReviewStatus): Promise<Customer> {
  const row = await findCustomer(trx, platformId, customerUuid, { forUpdate: true });
  if (!row) throw notFound(formatId('Customer', customerUuid));
  if (row.review_status === status) return toCustomer(row);
  const updated = await updateCustomerRow(trx, platformId, customerUuid, { review_status: status, updated_at: clock.now() });
  const customer = toCustomer(updated);
  if (status === 'APPROVED') await provisionCustomerAccounts(trx, clock, platformId, customerUuid, updated.email);
  if (status === 'APPROVED' || status === 'REJECTED' || status === 'PENDING') {
    const prefix = row.customer_type === 'INDIVIDUAL' ? 'KYC' : 'KYB';
    await recordEvent(trx, clock, { platformId, type: `CUSTOMER.${prefix}_${status}`, resourceId: customer.id, data: customer });
  }
  return customer;
}

export async function getSettings(db: DbOrTx, platformId: string): Promise<CustomerSettings> {
  return { sandboxAutoApprove: (await findSettings(db, platformId))?.sandbox_auto_approve ?? true };
}

export async function updateSettings(trx: Tx, clock: Clock, platformId: string, input: CustomerSettings): Promise<CustomerSettings> {
  await upsertSettings(trx, platformId, input.sandboxAutoApprove, clock.now());
  return getSettings(trx, platformId);
}
