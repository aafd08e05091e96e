import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../../platform/clock.js';
import type { TenantSecretBox } from '../../platform/crypto/secret-box.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { latestDateOnEarth } from '../../platform/datetime.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { CUSTOM_FORMATS } from '../../platform/http/validation.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { clearValue, customerTypeOf, freeTextErrors, maskIdentifier, mergeFieldErrors, openIdentifier, RESEAL_BATCH, sealIdentifier, setReviewStatus, type CustomerKind, type ReviewStatus } from '../customers/index.js';
import { findOwner, insertOwner, listOwners, ownersOf, ownersOfMany, ownersToReseal, setOwnerStatuses, updateOwner, type OwnerRow } from './repo.js';
import type { BeneficialOwner, BeneficialOwnerCreateRequest, BeneficialOwnerUpdateRequest, OwnerListQuery, PersonalInfo } from './schemas.js';

/**
 * US-issued identification types and the rule their identifier is held to: the formats an
 * individual customer's identifier of that type must match (customers/validation.ts ruleErrors).
 */
const US_ID_RULES: Record<string, { constraint: Record<string, string>; test: (value: string) => boolean; shape: string }> = {
  SSN: { constraint: { format: 'us-ssn' }, test: (v) => CUSTOM_FORMATS['us-ssn']!(v), shape: '###-##-####' },
  ITIN: { constraint: { format: 'us-itin' }, test: (v) => CUSTOM_FORMATS['us-itin']!(v), shape: '###-##-####' },
  EIN: { constraint: { pattern: '^\\d{2}-\\d{7}$' }, test: (v) => /^\d{2}-\d{7}$/.test(v), shape: '##-#######' },
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The owner's identifier in clear, from its sealed form (or a legacy plaintext row not yet sealed). */
function identifierOf(identifiers: TenantSecretBox, row: OwnerRow): string {
  if (row.identifier_sealed && row.identifier_key_version) {
    return openIdentifier(identifiers, row.platform_id, row.id, { identifier_sealed: row.identifier_sealed, identifier_key_version: row.identifier_key_version });
  }
  return row.identifier ?? '';
}

export function toBeneficialOwner(identifiers: TenantSecretBox, row: OwnerRow): BeneficialOwner {
  const personalInfo = { ...row.personal_info, identifier: maskIdentifier(identifierOf(identifiers, row)) };
  return {
    id: formatId('BeneficialOwner', row.id),
    customerId: formatId('Customer', row.customer_id),
    roles: row.roles as BeneficialOwner['roles'],
    ownershipPercentage: row.ownership_percentage,
    personalInfo,
    kycStatus: row.kyc_status,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The earliest birth date believed: the floor an individual customer's birthDate is held to (customers/validation.ts). */
const EARLIEST_BIRTH_DATE = '1900-01-01';

/**
 * Rules beyond the schema, on the personal info as it will be stored: birth date in the past and not before 1900,
 * US identifiers (SSN, ITIN, EIN) in their format and issued by the US, and what is sent free of control
 * characters and not blank (customers' freeTextErrors). Robust to any input shape.
 */
function personalInfoErrors(info: Record<string, unknown>, sent: Record<string, unknown>, now: Date): FieldError[] {
  const errors: FieldError[] = [];
  const birthDate = sent.birthDate;
  if (typeof birthDate === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(birthDate)) {
    if (birthDate > latestDateOnEarth(now)) {
      errors.push({ field: 'personalInfo.birthDate', constraint: { format: 'date' }, message: 'must not be in the future' });
    } else if (birthDate < EARLIEST_BIRTH_DATE) {
      errors.push({ field: 'personalInfo.birthDate', constraint: { format: 'date' }, message: `must not be before ${EARLIEST_BIRTH_DATE}` });
    }
  }
  const rule = typeof info.idType === 'string' ? US_ID_RULES[info.idType] : undefined;
  // Each pair is checked when either side of it is sent: a PATCH of the country alone is held to the stored idType too.
  const identification = sent.identifier !== undefined || sent.idType !== undefined;
  if (rule && identification && typeof info.identifier === 'string' && !rule.test(info.identifier)) {
    errors.push({ field: 'personalInfo.identifier', constraint: rule.constraint, message: `must be a valid ${String(info.idType)} (${rule.shape})` });
  }
  if (rule && (identification || sent.countryOfIssuance !== undefined) && info.countryOfIssuance !== undefined && info.countryOfIssuance !== 'US') {
    errors.push({ field: 'personalInfo.countryOfIssuance', constraint: { enum: ['US'] }, message: `must be US for ${String(info.idType)}` });
  }
  // One entry per field: a field another rule refuses keeps that rule's error.
  return mergeFieldErrors(errors, freeTextErrors(sent, 'personalInfo'));
}

function notFound(id: string): AppError {
  return new AppError('REFERENCE_NOT_FOUND', `Beneficial owner ${id} was not found.`);
}

async function checkOwnershipTotal(trx: Tx, platformId: string, customerUuid: string, exceptId: string | undefined, percentage: number): Promise<void> {
  const others = (await ownersOf(trx, platformId, customerUuid)).filter((o) => o.id !== exceptId);
  const total = others.reduce((sum, o) => sum + o.ownership_percentage, 0) + percentage;
  if (total > 100) {
    throw invalidInput([
      { field: 'ownershipPercentage', message: `would bring the customer's owners to ${total}%; at most ${100 - (total - percentage)}% is left` },
    ]);
  }
}

export function checkCreate(input: unknown, schemaErrors: FieldError[], now: Date): void {
  const info = isObject(input) && isObject(input.personalInfo) ? input.personalInfo : {};
  const errors = mergeFieldErrors(schemaErrors, personalInfoErrors(info, info, now));
  if (errors.length) throw invalidInput(errors);
}

export async function createBeneficialOwner(
  trx: Tx,
  clock: Clock,
  identifiers: TenantSecretBox,
  platformId: string,
  input: BeneficialOwnerCreateRequest,
): Promise<BeneficialOwner> {
  // Locking the customer serialises owner writes, so concurrent creates cannot pass 100% together.
  const customer = await customerTypeOf(trx, platformId, input.customerId, { forUpdate: true });
  if (customer.type !== 'BUSINESS') {
    throw invalidInput([{ field: 'customerId', message: 'must be a BUSINESS customer; individuals have no beneficial owners' }]);
  }
  if (customer.underReview) throw underReview(input.customerId);
  await checkOwnershipTotal(trx, platformId, customer.uuid, undefined, input.ownershipPercentage);
  const now = clock.now();
  const { identifier, ...personalInfo } = input.personalInfo;
  const id = uuidv7(now.getTime());
  const row: OwnerRow = {
    id,
    platform_id: platformId,
    customer_id: customer.uuid,
    roles: input.roles,
    ownership_percentage: input.ownershipPercentage,
    personal_info: { ...personalInfo, ...(US_ID_RULES[personalInfo.idType] && !personalInfo.countryOfIssuance ? { countryOfIssuance: 'US' } : {}) },
    identifier: null,
    ...(await sealIdentifier(trx, identifiers, platformId, id, identifier)),
    kyc_status: 'UNVERIFIED',
    created_at: now,
    updated_at: now,
  };
  await insertOwner(trx, row);
  await ownershipChanged(trx, clock, platformId, customer);
  return toBeneficialOwner(identifiers, row);
}

/**
 * An owner added to an APPROVED business, or an owner whose person changed, is someone its approval
 * never judged: the business is UNVERIFIED again (no event, as for a changed profile, customers/README)
 * until a new verification approves it with its owners as they now are. Quotes refuse it meanwhile.
 */
async function ownershipChanged(trx: Tx, clock: Clock, platformId: string, customer: CustomerKind): Promise<void> {
  if (customer.reviewStatus === 'APPROVED') await setReviewStatus(trx, clock, platformId, customer.uuid, 'UNVERIFIED');
}

export async function getBeneficialOwner(db: DbOrTx, identifiers: TenantSecretBox, platformId: string, ownerId: string): Promise<BeneficialOwner> {
  const uuid = parseId('BeneficialOwner', ownerId);
  const row = uuid && (await findOwner(db, platformId, uuid));
  if (!row) throw notFound(ownerId);
  return toBeneficialOwner(identifiers, row);
}

export async function listBeneficialOwners(db: DbOrTx, identifiers: TenantSecretBox, platformId: string, query: OwnerListQuery): Promise<Page<BeneficialOwner>> {
  const customerUuid = parseId('Customer', query.customerId)!;
  await customerTypeOf(db, platformId, query.customerId).catch((error: unknown) => {
    // A deleted customer's owners stay readable; only an unknown customer is an error.
    if (!(error instanceof AppError && error.code === 'CUSTOMER_DELETED')) throw error;
  });
  const page = pageRequest(query);
  const { rows, totalCount } = await listOwners(db, platformId, customerUuid, page);
  return toPage(rows, page, (row) => toBeneficialOwner(identifiers, row), totalCount);
}

export async function updateBeneficialOwner(
  trx: Tx,
  clock: Clock,
  identifiers: TenantSecretBox,
  platformId: string,
  ownerId: string,
  input: unknown,
  schemaErrors: FieldError[],
): Promise<BeneficialOwner> {
  const uuid = parseId('BeneficialOwner', ownerId);
  const unlocked = uuid && (await findOwner(trx, platformId, uuid));
  if (!unlocked) throw notFound(ownerId);
  // The customer first, then the owner: the order a verification takes them in.
  const customer = await customerTypeOf(trx, platformId, formatId('Customer', unlocked.customer_id), { forUpdate: true });
  const row = (await findOwner(trx, platformId, unlocked.id, { forUpdate: true }))!;
  const sent = isObject(input) && isObject(input.personalInfo) ? input.personalInfo : {};
  const current = { ...row.personal_info, identifier: identifierOf(identifiers, row) } as Record<string, unknown>;
  const merged = { ...current, ...sent };
  const errors = mergeFieldErrors(schemaErrors, personalInfoErrors(merged, sent, clock.now()));
  if (errors.length) throw invalidInput(errors);
  if (customer.underReview) throw underReview(formatId('Customer', row.customer_id));
  const update = input as BeneficialOwnerUpdateRequest;
  if (update.ownershipPercentage !== undefined) await checkOwnershipTotal(trx, platformId, row.customer_id, row.id, update.ownershipPercentage);
  const { identifier: _identifier, ...personalInfo } = merged as PersonalInfo & { identifier: string };
  // The person a review judged is no longer the one on file: its status starts over until a new verification.
  const personChanged = Object.keys(sent).some((field) => !isDeepStrictEqual(sent[field], current[field]));
  const updated = await updateOwner(trx, platformId, row.id, {
    ...(update.roles ? { roles: update.roles } : {}),
    ...(update.ownershipPercentage !== undefined ? { ownership_percentage: update.ownershipPercentage } : {}),
    personal_info: personalInfo,
    ...(typeof sent.identifier === 'string' ? { identifier: null, ...(await sealIdentifier(trx, identifiers, platformId, row.id, sent.identifier)) } : {}),
    ...(personChanged ? { kyc_status: 'UNVERIFIED' as const } : {}),
    updated_at: clock.now(),
  });
  if (personChanged) await ownershipChanged(trx, clock, platformId, customer);
  return toBeneficialOwner(identifiers, updated);
}

/** 409 while a verification of the business is open: it reads the owners, so they stay as it was given them. */
function underReview(customerId: string): AppError {
  return new AppError(
    'CONFLICT',
    `Customer ${customerId} is under review (a verification is IN_PROGRESS or PENDING_MANUAL_REVIEW): its beneficial owners cannot be added or changed until its verdict.`,
    { details: { reason: 'UNDER_REVIEW' } },
  );
}

/** What verification needs about a business's owners. */
/** Each customer's owners as answered (identifiers masked), for embedding in business customer responses. */
export async function ownersOfCustomers(db: DbOrTx, identifiers: TenantSecretBox, platformId: string, customerUuids: string[]): Promise<Map<string, BeneficialOwner[]>> {
  const owners = new Map<string, BeneficialOwner[]>();
  for (const row of await ownersOfMany(db, platformId, customerUuids)) {
    const list = owners.get(row.customer_id) ?? [];
    list.push(toBeneficialOwner(identifiers, row));
    owners.set(row.customer_id, list);
  }
  return owners;
}

export async function ownersForReview(db: DbOrTx, platformId: string, customerUuid: string): Promise<OwnerRow[]> {
  return ownersOf(db, platformId, customerUuid);
}

export async function setBeneficialOwnerStatuses(trx: Tx, clock: Clock, platformId: string, ownerUuids: string[], status: ReviewStatus): Promise<void> {
  await setOwnerStatuses(trx, platformId, ownerUuids, status, clock.now());
}

/**
 * The owning customer's uuid, for documents held by an owner (REFERENCE_NOT_FOUND otherwise).
 * With `live`, the customer must not be deleted (410 CUSTOMER_DELETED), as for owner writes.
 */
export async function ownerHolder(db: DbOrTx, platformId: string, ownerUuid: string, options: { live?: boolean } = {}): Promise<{ customerUuid: string }> {
  const row = await findOwner(db, platformId, ownerUuid);
  if (!row) throw notFound(formatId('BeneficialOwner', ownerUuid));
  if (options.live) await customerTypeOf(db, platformId, formatId('Customer', row.customer_id));
  return { customerUuid: row.customer_id };
}

/** Seals every owner identifier not yet sealed under its platform's current key, batch by batch (see resealCustomerIdentifiers). */
export async function resealOwnerIdentifiers(db: Db, identifiers: TenantSecretBox, platformId: string | undefined): Promise<number> {
  let done = 0;
  let after: string | undefined;
  for (;;) {
    const batch = await withTx(db, async (trx) => {
      const rows = await ownersToReseal(trx, platformId, RESEAL_BATCH, after);
      for (const row of rows) {
        const value = clearValue(identifiers, row) ?? '';
        await updateOwner(trx, row.platform_id, row.id, {
          identifier: null,
          identifier_sealed: identifiers.seal(row.platform_id, row.current_version, value, row.id),
          identifier_key_version: row.current_version,
        });
      }
      return { count: rows.length, last: rows.at(-1)?.id };
    });
    // Taken once the batch has committed: a retried transaction starts where this one did.
    after = batch.last;
    done += batch.count;
    if (batch.count < RESEAL_BATCH) return done;
  }
}
