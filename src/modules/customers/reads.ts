import type { DbOrTx } from '../../platform/db/database.js';
import { isoInstant } from '../../platform/db/timestamps.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { findCustomer, findCustomerAnswer, listCustomers as listCustomerRows, type CustomerAnswerRow, type CustomerRow } from './repo.js';
import type { BeneficialOwner, Customer, CustomerListQuery, CustomerType, ReviewStatus } from './schemas.js';

// Reading customers: the response shape, point and list reads, and the live-customer lookups
// every flow (and other modules) start from.

function statusField(type: CustomerType): 'kycStatus' | 'kybStatus' {
  return type === 'INDIVIDUAL' ? 'kycStatus' : 'kybStatus';
}

/** The stored profile without any tax identifier: a business's taxId is write-only, like an individual's identifier. */
export function withoutTaxId(profile: Record<string, unknown>): Record<string, unknown> {
  const info = profile.businessInfo as Record<string, unknown> | undefined;
  if (!info || !('taxId' in info)) return profile;
  const { taxId: _taxId, ...rest } = info;
  return { ...profile, businessInfo: rest };
}

/**
 * A customer as the API answers it. Fields are set one by one, in the order a webhook payload's
 * JSON shows them, rather than spread from conditional literals: those copied a temporary object
 * per optional field, and a list maps 20 customers per request (this was a tenth of its CPU,
 * bench/README.md).
 */
export function toCustomer(row: CustomerAnswerRow): Customer {
  const customer: Record<string, unknown> = {
    id: formatId('Customer', row.id),
    platformCustomerId: row.platform_customer_id,
    customerType: row.customer_type,
  };
  customer[statusField(row.customer_type)] = row.review_status;
  if (row.region) customer.region = row.region;
  if (row.currencies) customer.currencies = row.currencies;
  if (row.email) customer.email = row.email;
  if (row.phone_number) customer.phoneNumber = row.phone_number;
  customer.umaAddress = row.uma_address;
  if (row.terms_version) {
    customer.endUserTermsConsent = {
      acceptedAt: isoInstant(row.terms_accepted_at!),
      ipAddress: row.terms_ip_address!,
      termsVersion: row.terms_version,
      acceptanceMethod: row.terms_acceptance_method as 'CHECKBOX' | 'CLICK_TO_ACCEPT',
    };
  }
  Object.assign(customer, withoutTaxId(row.profile));
  customer.isDeleted = row.deleted_at !== null;
  customer.createdAt = isoInstant(row.created_at);
  customer.updatedAt = isoInstant(row.updated_at);
  return customer as Customer;
}

/** How a read locks the customer row: FOR UPDATE, or FOR SHARE (writes beside it that only a review's opening must wait for). */
export interface CustomerLock {
  forUpdate?: boolean;
  forShare?: boolean;
}

export function notFound(customerId: string): AppError {
  return new AppError('USER_NOT_FOUND', `Customer ${customerId} was not found.`);
}

function deleted(customerId: string): AppError {
  return new AppError('CUSTOMER_DELETED', `Customer ${customerId} has been deleted.`);
}

export async function loadLive(db: DbOrTx, platformId: string, customerId: string, lock: CustomerLock = {}): Promise<CustomerRow> {
  const uuid = parseId('Customer', customerId);
  const row = uuid && (await findCustomer(db, platformId, uuid, lock));
  if (!row) throw notFound(customerId);
  if (row.deleted_at) throw deleted(customerId);
  return row;
}

export async function getCustomer(db: DbOrTx, platformId: string, customerId: string): Promise<Customer> {
  const uuid = parseId('Customer', customerId);
  const row = uuid && (await findCustomerAnswer(db, platformId, uuid));
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

/** What modules that hang records on customers need of a live one (USER_NOT_FOUND otherwise). */
export interface CustomerKind {
  uuid: string;
  type: CustomerType;
  platformCustomerId: string;
  reviewStatus: ReviewStatus;
  /** A verification is IN_PROGRESS or PENDING_MANUAL_REVIEW: what it reads (owners, profile) is held. */
  underReview: boolean;
}

/** A live customer's type and review state, for modules that hang records on customers (USER_NOT_FOUND otherwise). */
export async function customerTypeOf(db: DbOrTx, platformId: string, customerId: string, lock: CustomerLock = {}): Promise<CustomerKind> {
  const row = await loadLive(db, platformId, customerId, lock);
  return { uuid: row.id, type: row.customer_type, platformCustomerId: row.platform_customer_id, reviewStatus: row.review_status, underReview: row.under_review_since !== null };
}

/**
 * Where business customers' beneficial owners come from. beneficial-owners sits above customers
 * in the module graph, so app.ts hands its implementation in (CustomerRouteDeps.owners).
 */
export interface OwnerLookup {
  /** Owners by customer uuid, oldest first; customers without owners are absent. */
  ownersOf(db: DbOrTx, platformId: string, customerUuids: string[]): Promise<Map<string, BeneficialOwner[]>>;
}

/** Sets `beneficialOwners` (`[]` when none) on every BUSINESS customer among `customers`, in one query. */
export async function attachOwners(db: DbOrTx, lookup: OwnerLookup, platformId: string, customers: unknown[]): Promise<void> {
  const businesses = customers.filter((c): c is Customer => (c as Partial<Customer> | null)?.customerType === 'BUSINESS');
  if (businesses.length === 0) return;
  const uuidOf = (c: Customer) => c.id.slice('Customer:'.length);
  const owners = await lookup.ownersOf(db, platformId, businesses.map(uuidOf));
  for (const customer of businesses) customer.beneficialOwners = owners.get(uuidOf(customer)) ?? [];
}
