import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../../platform/clock.js';
import { validDateTime } from '../../platform/datetime.js';
import type { Tx } from '../../platform/db/database.js';
import { violatedUniqueIndex } from '../../platform/db/unique-violation.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import { recordEvent, recordEvents } from '../../platform/outbox.js';
import { getConfigRow } from '../config/index.js';
import { accountsHoldingMoney, provisionAccountsOf, provisionCustomerAccounts } from '../internal-accounts/index.js';
import { identifierKeyVersion } from '../platforms/index.js';
import type { TenantSecretBox } from '../../platform/crypto/secret-box.js';
import { clearValue, sealIdentifier } from './identifiers.js';
import { loadLive, toCustomer, withoutTaxId } from './reads.js';
import {
  insertCustomersIfFree,
  liveCustomerIdByPlatformCustomerId,
  livePlatformCustomerIds,
  liveUmaAddresses,
  paymentInFlightOf,
  umaAddressTaken,
  UNIQUE_PLATFORM_CUSTOMER_ID,
  UNIQUE_UMA_ADDRESS,
  updateCustomer as updateCustomerRow,
  type CustomerRow,
} from './repo.js';
import { initialReviewStatus, platformRunsKyc, sandboxAutoApprove, setReviewStatus } from './review-state.js';
import type { Customer, CustomerCreate, CustomerType, CustomerUpdate, EndUserTermsConsentT, ReviewStatus } from './schemas.js';
import { at, checkTermsVersion, holdsOther, isObject, mergeFieldErrors, OTHER_PAIRS, ruleErrors, type EndUserTerms } from './validation.js';

// Creating, updating and deleting a customer: its columns, profile, consent and unique
// platformCustomerId and UMA address.

export interface CallerContext {
  platformId: string;
  environment: 'sandbox' | 'production';
}

const DEFAULT_UMA_DOMAIN = 'uma.corridor.local';

/** Keys of the request that are columns, not profile fields. */
const COMMON_KEYS = new Set([
  'customerType',
  'platformCustomerId',
  'region',
  'currencies',
  'email',
  'phoneNumber',
  'umaAddress',
  'endUserTermsConsent',
  'identifier',
  'kycStatus',
  'kybStatus',
]);

/** The review status a create or an update asks for (`kycStatus`/`kybStatus`), if any. */
function requestedStatus(input: CustomerCreate | CustomerUpdate): { field: 'kycStatus' | 'kybStatus'; status: ReviewStatus | undefined } {
  const field = input.customerType === 'INDIVIDUAL' ? 'kycStatus' : 'kybStatus';
  return { field, status: (input as { kycStatus?: ReviewStatus; kybStatus?: ReviewStatus })[field] };
}

/** A status sent by a platform that does not run its own KYC/KYB: 400 naming the field and the setting. */
function statusNotHonoured(field: 'kycStatus' | 'kybStatus'): AppError {
  return invalidInput([
    {
      field,
      message:
        `is set by Corridor's own verification unless the platform runs its own ${field === 'kycStatus' ? 'KYC' : 'KYB'}: ` +
        'turn that on with PATCH /customers/settings {"platformKyc": true}, or leave the field out',
    },
  ]);
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

/** 409 while a verification reads the customer: a verdict must be about the data it was given. */
function underReview(customerId: string, fields: string[]): AppError {
  return new AppError(
    'CONFLICT',
    `Customer ${customerId} is under review (a verification is IN_PROGRESS or PENDING_MANUAL_REVIEW): ${fields.join(', ')} cannot change until its verdict. ` +
      'E-mail, phone, currencies, umaAddress and endUserTermsConsent can.',
    { details: { reason: 'UNDER_REVIEW', fields } },
  );
}

function platformCustomerIdTaken(value: string): AppError {
  return new AppError('CONFLICT', `A customer with platformCustomerId ${value} already exists.`, {
    details: { field: 'platformCustomerId', platformCustomerId: value },
  });
}

function umaTaken(value: string): AppError {
  return new AppError('UMA_ADDRESS_EXISTS', `The UMA address ${value} is already in use.`, { details: { field: 'umaAddress', umaAddress: value } });
}

/** Turns a lost race on a unique index (an update's new UMA address) into the same answer the pre-check gives. */
async function guardUnique<T>(values: { platformCustomerId: string; umaAddress: string }, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const which = violatedUniqueIndex(error, [UNIQUE_PLATFORM_CUSTOMER_ID, UNIQUE_UMA_ADDRESS]);
    if (which === UNIQUE_PLATFORM_CUSTOMER_ID) throw platformCustomerIdTaken(values.platformCustomerId);
    if (which === UNIQUE_UMA_ADDRESS) throw umaTaken(values.umaAddress);
    throw error;
  }
}

/**
 * The fields that say who an approved customer is (the ones a review checks the person or the
 * business against): changing one that is on file to another value sets kycStatus/kybStatus back
 * to UNVERIFIED. The tax identifier counts too (compared in clear, `identifierChanged`).
 */
const IDENTITY_FIELDS: Readonly<Record<CustomerType, readonly string[]>> = {
  INDIVIDUAL: ['fullName', 'birthDate', 'nationality', 'address', 'idType', 'countryOfIssuance'],
  BUSINESS: ['address', 'businessInfo.legalName', 'businessInfo.country', 'businessInfo.registrationNumber', 'businessInfo.incorporatedOn', 'businessInfo.entityType'],
};

/** Whether an update moves an identity field that was on file to another value (filling one in that was missing is not a change of who it is). */
function identityChanged(type: CustomerType, stored: Record<string, unknown>, next: Record<string, unknown>): boolean {
  return IDENTITY_FIELDS[type].some((path) => at(stored, path) !== undefined && !isDeepStrictEqual(at(stored, path), at(next, path)));
}

/** The tax identifier a request carries: an individual's `identifier`, a business's `businessInfo.taxId`. */
function sentIdentifier(input: Record<string, unknown>): string | undefined {
  if (typeof input.identifier === 'string') return input.identifier;
  const taxId = isObject(input.businessInfo) ? input.businessInfo.taxId : undefined;
  return typeof taxId === 'string' ? taxId : undefined;
}

export async function createCustomer(
  trx: Tx,
  clock: Clock,
  identifiers: TenantSecretBox,
  caller: CallerContext,
  terms: EndUserTerms,
  input: CustomerCreate,
): Promise<Customer> {
  const [outcome] = await createCustomers(trx, clock, identifiers, caller, terms, [input]);
  if ('error' in outcome!) throw outcome.error;
  return outcome!.customer;
}

/** What became of one request of a bulk create: the customer, or why there is none. */
export type CreateOutcome = { customer: Customer } | { error: AppError };

/**
 * Creates customers as POST /customers creates one, with a fixed number of statements however
 * many there are (a bulk import's batch): one lookup of the platformCustomerIds and one of the
 * UMA addresses already taken, one insert, and the approved individuals' accounts and events
 * together. Each request gets the answer it would get alone, in order: of two requests with the
 * same platformCustomerId (or UMA address, ignoring case) the first is created and the second is
 * 409. The partial unique indexes hold against concurrent creates too: a row the insert had to
 * skip gets the same 409 as one the lookup found. Requests arrive validated (schema and rules).
 */
export async function createCustomers(
  trx: Tx,
  clock: Clock,
  identifiers: TenantSecretBox,
  caller: CallerContext,
  terms: EndUserTerms,
  inputs: readonly CustomerCreate[],
): Promise<CreateOutcome[]> {
  const { platformId } = caller;
  const now = clock.now();
  const ids = inputs.map(() => uuidv7(now.getTime()));
  const platformCustomerIds = inputs.map((input, i) => input.platformCustomerId ?? ids[i]!);
  const takenIds = await livePlatformCustomerIds(
    trx,
    platformId,
    inputs.flatMap((input) => (input.platformCustomerId ? [input.platformCustomerId] : [])),
  );
  const takenUma = await liveUmaAddresses(
    trx,
    platformId,
    inputs.flatMap((input) => (input.umaAddress ? [input.umaAddress.toLowerCase()] : [])),
  );
  const umaDomain = inputs.some((input) => !input.umaAddress) ? ((await getConfigRow(trx, platformId)).uma_domain ?? DEFAULT_UMA_DOMAIN) : DEFAULT_UMA_DOMAIN;
  const approveIndividuals = inputs.some((input) => input.customerType === 'INDIVIDUAL') && (await sandboxAutoApprove(trx, caller));
  const platformKyc = inputs.some((input) => requestedStatus(input).status !== undefined) && (await platformRunsKyc(trx, platformId));
  const keyVersion = inputs.some((input) => sentIdentifier(input as Record<string, unknown>)) ? await identifierKeyVersion(trx, platformId) : 0;

  const outcomes: Array<CreateOutcome | undefined> = inputs.map(() => undefined);
  const rows: Array<{ index: number; row: CustomerRow }> = [];
  inputs.forEach((input, index) => {
    try {
      checkTermsVersion(input.endUserTermsConsent, terms);
    } catch (error) {
      outcomes[index] = { error: error as AppError };
      return;
    }
    const requested = requestedStatus(input);
    if (requested.status !== undefined && !platformKyc) {
      outcomes[index] = { error: statusNotHonoured(requested.field) };
      return;
    }
    const id = ids[index]!;
    const platformCustomerId = platformCustomerIds[index]!;
    if (takenIds.has(platformCustomerId)) {
      outcomes[index] = { error: platformCustomerIdTaken(platformCustomerId) };
      return;
    }
    const umaAddress = input.umaAddress ?? `$c${randomBytes(8).toString('hex')}@${umaDomain}`;
    if (input.umaAddress && takenUma.has(umaAddress.toLowerCase())) {
      outcomes[index] = { error: umaTaken(umaAddress) };
      return;
    }
    // Later requests of the same call see this one as taken.
    takenIds.add(platformCustomerId);
    takenUma.add(umaAddress.toLowerCase());
    const profile = withoutTaxId(profileOf(input as Record<string, unknown>));
    if (input.customerType === 'INDIVIDUAL' && input.idType && !input.countryOfIssuance) profile.countryOfIssuance = 'US';
    const identifier = sentIdentifier(input as Record<string, unknown>);
    const sealed = identifier
      ? { identifier_sealed: identifiers.seal(platformId, keyVersion, identifier, id), identifier_key_version: keyVersion }
      : { identifier_sealed: null, identifier_key_version: null };
    rows.push({
      index,
      row: {
        id,
        platform_id: platformId,
        platform_customer_id: platformCustomerId,
        customer_type: input.customerType,
        review_status: requested.status ?? initialReviewStatus(input, caller.environment === 'sandbox', approveIndividuals),
        region: input.region ?? null,
        currencies: input.currencies ?? null,
        email: input.email ?? null,
        phone_number: input.phoneNumber ?? null,
        uma_address: umaAddress,
        profile,
        identifier: null,
        ...sealed,
        email_verified_at: null,
        phone_verified_at: null,
        terms_version: null,
        terms_accepted_at: null,
        terms_ip_address: null,
        terms_acceptance_method: null,
        ...consentColumns(input.endUserTermsConsent),
        under_review_since: null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      },
    });
  });

  const inserted = await insertCustomersIfFree(
    trx,
    rows.map((r) => r.row),
  );
  const approved: CustomerRow[] = [];
  const reviewed: CustomerRow[] = [];
  for (const { index, row } of rows) {
    if (!inserted.has(row.id)) {
      // Taken since the lookup, by a create that committed first.
      const byId = await liveCustomerIdByPlatformCustomerId(trx, platformId, row.platform_customer_id);
      outcomes[index] = { error: byId ? platformCustomerIdTaken(row.platform_customer_id) : umaTaken(row.uma_address) };
      continue;
    }
    outcomes[index] = { customer: toCustomer(row) };
    if (row.review_status === 'APPROVED') approved.push(row);
    if (row.review_status === 'APPROVED' || row.review_status === 'REJECTED' || row.review_status === 'PENDING') reviewed.push(row);
  }
  if (approved.length) {
    await provisionAccountsOf(
      trx,
      clock,
      platformId,
      approved.map((row) => ({ uuid: row.id, email: row.email })),
    );
  }
  if (reviewed.length) {
    await recordEvents(
      trx,
      clock,
      reviewed.map((row) => {
        const customer = toCustomer(row);
        const prefix = row.customer_type === 'INDIVIDUAL' ? 'KYC' : 'KYB';
        return { platformId, type: `CUSTOMER.${prefix}_${row.review_status}`, resourceId: customer.id, data: customer };
      }),
    );
  }
  return outcomes as CreateOutcome[];
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

/** An update of what a business's taxId is held to (its country, its entity type) that sends no taxId: the one on file is checked. */
function movesTaxIdRule(type: CustomerType, body: Record<string, unknown>): boolean {
  const info = body.businessInfo;
  return type === 'BUSINESS' && isObject(info) && info.taxId === undefined && (info.country !== undefined || info.entityType !== undefined);
}

/** The tax identifier on file (an individual's identifier, a business's taxId), in clear: sealed, or as a row stored before sealing existed holds it. */
function identifierOnFile(identifiers: TenantSecretBox, row: CustomerRow): string | undefined {
  const legacy = at(row.profile as Record<string, unknown>, 'businessInfo.taxId');
  return clearValue(identifiers, row, typeof legacy === 'string' ? legacy : undefined);
}

/**
 * Field validation of an update against the stored customer. Runs before any change, so a
 * rejected request leaves the customer untouched.
 */
export async function updateCustomer(
  trx: Tx,
  clock: Clock,
  identifiers: TenantSecretBox,
  platformId: string,
  terms: EndUserTerms,
  customerId: string,
  input: unknown,
  schemaErrors: FieldError[],
): Promise<Customer> {
  const row = await loadLive(trx, platformId, customerId, { forUpdate: true });
  const body = isObject(input) ? input : {};
  const type = row.customer_type;
  const errors: FieldError[] = [...schemaErrors];
  if (body.customerType !== type && !errors.some((e) => e.field === 'customerType')) {
    errors.push({ field: 'customerType', constraint: { enum: [type] }, message: `must be ${type}, the type of this customer` });
  }
  const merged = mergeProfile(type, row.profile as Record<string, unknown>, body);
  const withPrevious = {
    ...merged,
    previousIdType: (row.profile as Record<string, unknown>).idType,
    ...(movesTaxIdRule(type, body) ? { storedTaxId: identifierOnFile(identifiers, row) } : {}),
  };
  const all = mergeFieldErrors(errors, body.customerType === type ? ruleErrors(body, withPrevious, type, clock.now(), 'update') : []);
  if (all.length) throw invalidInput(all);

  const identifier = sentIdentifier(body);
  const stored = row.profile as Record<string, unknown>;
  const next = withoutTaxId(merged);
  const onFile = identifier !== undefined ? identifierOnFile(identifiers, row) : undefined;
  const identifierChanged = identifier !== undefined && identifier !== onFile;
  if (row.under_review_since) {
    // What the review reads (the profile and the tax identifier) stays as it was given to it.
    const changed = [...new Set([...Object.keys(stored), ...Object.keys(next)])].filter((field) => !isDeepStrictEqual(stored[field], next[field]));
    if (identifierChanged) changed.push(type === 'INDIVIDUAL' ? 'identifier' : 'businessInfo.taxId');
    if (changed.length) throw underReview(customerId, changed);
  }
  const update = body as CustomerUpdate;
  const requested = requestedStatus(update);
  // The approval was about the person (business) then on file: another one is not approved by it,
  // and must not send money on it until a new review (customers/README.md, "A change after approval").
  // A platform running its own KYC that sends its status with the change has decided already.
  const reapprovalNeeded =
    requested.status === undefined && row.review_status === 'APPROVED' && (identityChanged(type, stored, next) || (identifierChanged && onFile !== undefined));
  if (requested.status !== undefined && !(await platformRunsKyc(trx, platformId))) throw statusNotHonoured(requested.field);
  checkTermsVersion(update.endUserTermsConsent, terms);
  if (update.umaAddress && (await umaAddressTaken(trx, platformId, update.umaAddress, row.id))) throw umaTaken(update.umaAddress);
  if (type === 'INDIVIDUAL' && update.customerType === 'INDIVIDUAL' && update.idType && !merged.countryOfIssuance) merged.countryOfIssuance = 'US';
  const changes: Partial<CustomerRow> = {
    profile: withoutTaxId(merged),
    ...(identifier ? { identifier: null, ...(await sealIdentifier(trx, identifiers, platformId, row.id, identifier)) } : {}),
    ...(update.currencies ? { currencies: update.currencies } : {}),
    ...(update.email !== undefined ? { email: update.email } : {}),
    ...(update.phoneNumber !== undefined ? { phone_number: update.phoneNumber } : {}),
    ...(update.umaAddress ? { uma_address: update.umaAddress } : {}),
    ...consentColumns(update.endUserTermsConsent),
    ...(reapprovalNeeded ? { review_status: 'UNVERIFIED' as const } : {}),
    updated_at: clock.now(),
  };
  const updated = await guardUnique({ platformCustomerId: row.platform_customer_id, umaAddress: update.umaAddress ?? row.uma_address }, () =>
    updateCustomerRow(trx, platformId, row.id, changes),
  );
  // A customer approved without an e-mail gets the embedded wallet once one is set.
  if (!row.email && updated.email && updated.review_status === 'APPROVED') {
    await provisionCustomerAccounts(trx, clock, platformId, row.id, updated.email);
  }
  // The platform's own review moved on: as a verification's decision would (accounts, CUSTOMER.KY{C,B}_*).
  if (requested.status !== undefined && requested.status !== updated.review_status) {
    return setReviewStatus(trx, clock, platformId, row.id, requested.status);
  }
  return toCustomer(updated);
}

/**
 * Soft delete. Refused (409 CONFLICT) while money still depends on the customer: a deleted
 * customer can send nothing (quotes answer 410), so a balance left behind, or money a payment
 * in flight would bring back (a failed payout's refund, a pull's credit), could never be paid
 * out again. The row is locked first, and whatever credits the customer's account reads it FOR
 * SHARE in the crediting transaction (quotes' checkCreditable, deposits), so no credit lands
 * unseen; payments are read before balances, since a payment's end and the money it moves
 * commit together.
 */
export async function deleteCustomer(trx: Tx, clock: Clock, platformId: string, customerId: string): Promise<Customer> {
  const row = await loadLive(trx, platformId, customerId, { forUpdate: true });
  const inFlight = await paymentInFlightOf(trx, platformId, row.id);
  if (inFlight) {
    throw new AppError('CONFLICT', `Customer ${customerId} has a payment that has not ended (${formatId('Transaction', inFlight)}): it can be deleted once it has.`, {
      details: { reason: 'PAYMENT_IN_FLIGHT', customerId, transactionId: formatId('Transaction', inFlight) },
    });
  }
  const funded = await accountsHoldingMoney(trx, platformId, row.id);
  if (funded.length > 0) {
    throw new AppError('CONFLICT', `Customer ${customerId} still holds money in ${funded.map((a) => a.accountId).join(', ')}: pay it out before deleting the customer.`, {
      details: { reason: 'BALANCE_NOT_ZERO', customerId, accountIds: funded.map((a) => a.accountId) },
    });
  }
  const now = clock.now();
  const updated = await updateCustomerRow(trx, platformId, row.id, { deleted_at: now, updated_at: now });
  const customer = toCustomer(updated);
  await recordEvent(trx, clock, { platformId, type: 'CUSTOMER.DELETED', resourceId: customer.id, data: customer });
  return customer;
}
