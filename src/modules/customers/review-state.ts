import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { recordEvent } from '../../platform/outbox.js';
import { type ConfigRow, getConfigRow } from '../config/index.js';
import { provisionCustomerAccounts } from '../internal-accounts/index.js';
import { loadLive, notFound, toCustomer } from './reads.js';
import { findCustomer, findSettings, updateCustomer as updateCustomerRow, upsertSettings } from './repo.js';
import type { AddressT, BusinessInfoT, Customer, CustomerSettings, CustomerType, ReviewStatus } from './schemas.js';

// A customer's review state (kycStatus/kybStatus): what verification reads and moves, and what
// decides it at creation (sandbox auto-approve, sandbox test names).

/** What verification needs about a customer. */
export interface CustomerForReview {
  uuid: string;
  id: string;
  type: CustomerType;
  status: ReviewStatus;
  platformCustomerId: string;
  profile: Record<string, unknown> & { address?: AddressT; businessInfo?: BusinessInfoT };
}

/** A live customer of this platform, locked for the review; USER_NOT_FOUND or CUSTOMER_DELETED otherwise. */
export async function loadCustomerForReview(trx: Tx, platformId: string, customerId: string): Promise<CustomerForReview> {
  const row = await loadLive(trx, platformId, customerId, { forUpdate: true });
  return {
    uuid: row.id,
    id: formatId('Customer', row.id),
    type: row.customer_type,
    status: row.review_status,
    platformCustomerId: row.platform_customer_id,
    profile: row.profile as CustomerForReview['profile'],
  };
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

/**
 * Holds (or releases) what a review reads: while held, PATCH /customers cannot change the
 * customer's profile or tax identifier and its beneficial owners cannot be added or changed
 * (409 CONFLICT). Verifications hold a customer while one of its reviews is open.
 */
export async function holdForReview(trx: Tx, clock: Clock, platformId: string, customerUuid: string, held: boolean): Promise<void> {
  const row = await findCustomer(trx, platformId, customerUuid, { forUpdate: true });
  if (!row || (row.under_review_since !== null) === held) return;
  await updateCustomerRow(trx, platformId, customerUuid, { under_review_since: held ? clock.now() : null });
}

/** What a payment needs to know about its sending customer; undefined when it is not a live customer of the platform. */
export interface SenderReadiness {
  id: string;
  deleted: boolean;
  platformCustomerId: string;
  reviewStatus: ReviewStatus;
  termsAccepted: boolean;
}

/**
 * `forShare`: for a caller about to credit the customer's account in `db`'s transaction (a
 * deposit): it commits before a concurrent DELETE looks at the accounts, or waits for it and finds
 * the customer deleted (create-update.ts deleteCustomer).
 */
export async function senderReadiness(db: DbOrTx, platformId: string, customerUuid: string, options: { forShare?: boolean } = {}): Promise<SenderReadiness | undefined> {
  const row = await findCustomer(db, platformId, customerUuid, options);
  if (!row) return undefined;
  return { id: formatId('Customer', row.id), deleted: row.deleted_at !== null, platformCustomerId: row.platform_customer_id, reviewStatus: row.review_status, termsAccepted: row.terms_accepted_at !== null };
}

/**
 * Sandbox: upstream's test names, so integrators' suites run unchanged. An individual whose
 * fullName ends in one of these starts with that status whatever the auto-approve setting.
 */
const SANDBOX_NAME_STATUSES: ReadonlyMap<string, ReviewStatus> = new Map([
  ['001', 'PENDING'],
  ['002', 'REJECTED'],
  ['003', 'UNVERIFIED'],
]);

/**
 * The kycStatus/kybStatus of a customer whose create request sets none: a sandbox test name's
 * status, else APPROVED for individuals of an auto-approving sandbox, else UNVERIFIED.
 */
export function initialReviewStatus(
  input: { customerType: CustomerType; fullName?: string | undefined },
  sandbox: boolean,
  autoApproveIndividuals: boolean,
): ReviewStatus {
  if (input.customerType !== 'INDIVIDUAL') return 'UNVERIFIED';
  const byName = sandbox && input.fullName !== undefined ? SANDBOX_NAME_STATUSES.get(input.fullName.slice(-3)) : undefined;
  return byName ?? (autoApproveIndividuals ? 'APPROVED' : 'UNVERIFIED');
}

export async function sandboxAutoApprove(db: DbOrTx, caller: { platformId: string; environment: 'sandbox' | 'production' }): Promise<boolean> {
  if (caller.environment !== 'sandbox') return false;
  return (await findSettings(db, caller.platformId))?.sandbox_auto_approve ?? true;
}

/**
 * The settings as they apply: a production platform never auto-approves (its stored value, if
 * any, is ignored) and runs its own KYC only when it may (`mayRunOwnKyc`), so GET never shows a
 * setting that has no effect.
 */
export async function getSettings(db: DbOrTx, platformId: string): Promise<CustomerSettings> {
  return settingsAsTheyApply(db, await getConfigRow(db, platformId));
}

async function settingsAsTheyApply(db: DbOrTx, config: ConfigRow): Promise<CustomerSettings> {
  const row = await findSettings(db, config.platform_id);
  return {
    sandboxAutoApprove: config.environment === 'sandbox' && (row?.sandbox_auto_approve ?? true),
    platformKyc: (row?.platform_kyc ?? false) && mayRunOwnKyc(config),
  };
}

/**
 * Settings left out of the request keep their value. A production platform turns `platformKyc`
 * on only if the operator made it a regulated financial institution (`corridor platforms create
 * --regulated`): otherwise its own token could approve its customers without any review. It
 * cannot turn `sandboxAutoApprove` on: production customers are always reviewed.
 */
export async function updateSettings(trx: Tx, clock: Clock, platformId: string, input: Partial<CustomerSettings>): Promise<CustomerSettings> {
  const config = await getConfigRow(trx, platformId);
  if (input.sandboxAutoApprove === true && config.environment !== 'sandbox') {
    throw new AppError('FORBIDDEN', 'A production platform\'s customers are always reviewed: sandboxAutoApprove is only available to sandbox platforms.', {
      details: { field: 'sandboxAutoApprove' },
    });
  }
  if (input.platformKyc === true && !mayRunOwnKyc(config)) {
    throw new AppError('FORBIDDEN', 'A production platform runs its own KYC/KYB only as a regulated financial institution, which the operator sets when creating it.', {
      details: { field: 'platformKyc' },
    });
  }
  // Both settings already apply as stored: production's sandboxAutoApprove can only be false, platformKyc true only where it may.
  const next = { ...(await settingsAsTheyApply(trx, config)), ...input };
  await upsertSettings(trx, platformId, { sandbox_auto_approve: next.sandboxAutoApprove, platform_kyc: next.platformKyc }, clock.now());
  return next;
}

/**
 * Whether the platform runs its own KYC/KYB, so the kycStatus/kybStatus it sends is honoured: it
 * says so, and it may (`mayRunOwnKyc`). A production platform that turned the setting on before
 * that rule no longer skips review with it.
 */
export async function platformRunsKyc(db: DbOrTx, platformId: string): Promise<boolean> {
  return (await getSettings(db, platformId)).platformKyc;
}

/** A sandbox platform, or a production one the operator made a regulated financial institution. */
function mayRunOwnKyc(config: ConfigRow): boolean {
  return config.environment === 'sandbox' || config.is_regulated_financial_institution;
}
