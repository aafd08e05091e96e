import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob } from '../../platform/jobs.js';
import { recordEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { ownersForReview, setBeneficialOwnerStatuses } from '../beneficial-owners/index.js';
import { loadCustomerForReview, type ReviewStatus, setReviewStatus } from '../customers/index.js';
import { documentsOfHolders } from '../documents/index.js';
import { findInProgress, findVerification, hasOpenReview, insertVerification, listVerifications as listRows, updateVerification, type VerificationRow } from './repo.js';
import {
  missingRequirements,
  reviewDocuments,
  sandboxOutcome,
  sandboxOwnerStatus,
  sandboxSuffixOutcome,
  suffixLowQuality,
  suffixRejection,
  type ReviewInput,
} from './rules.js';
import type { Verification, VerificationError, VerificationListQuery, VerificationStatus } from './schemas.js';

export const REVIEW_JOB = 'verification.review';

export interface ReviewJobPayload {
  verificationId: string;
  environment: 'sandbox' | 'production';
}

export function toVerification(row: VerificationRow): Verification {
  return {
    id: formatId('Verification', row.id),
    customerId: formatId('Customer', row.customer_id),
    verificationStatus: row.status,
    errors: row.errors,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export async function loadReviewInput(trx: Tx, platformId: string, customerId: string, sandbox: boolean): Promise<ReviewInput> {
  const customer = await loadCustomerForReview(trx, platformId, customerId);
  const owners = customer.type === 'BUSINESS' ? await ownersForReview(trx, platformId, customer.uuid) : [];
  const documents = await documentsOfHolders(trx, platformId, [customer.uuid, ...owners.map((o) => o.id)]);
  return { customer, owners, documents, sandbox };
}

async function announce(trx: Tx, clock: Clock, platformId: string, verification: Verification): Promise<void> {
  await recordEvent(trx, clock, { platformId, type: `VERIFICATION.${verification.verificationStatus}`, resourceId: verification.id, data: verification });
}

/** The customer's and its owners' statuses that follow a verification's status. */
const CUSTOMER_STATUS: Partial<Record<VerificationStatus, ReviewStatus>> = {
  IN_PROGRESS: 'PENDING',
  PENDING_MANUAL_REVIEW: 'PENDING',
  APPROVED: 'APPROVED',
  REJECTED: 'REJECTED',
  RESOLVE_ERRORS: 'UNVERIFIED',
};

/** What a review concludes: the verification's status and its entries. */
interface Verdict {
  status: VerificationStatus;
  errors: VerificationError[];
}

/**
 * Moves the customer (and its owners) to the status the verification implies. An APPROVED
 * customer is never downgraded by a review that merely runs or asks for more (IN_PROGRESS,
 * PENDING_MANUAL_REVIEW, RESOLVE_ERRORS): it stays APPROVED, its accounts stay usable, and the
 * verification itself says what is missing. Only a REJECTED verdict, announced as
 * CUSTOMER.KYC_REJECTED / KYB_REJECTED, changes an approved customer. Owners follow the
 * business, except that a business rejected by its sandbox registration-number suffix settles
 * each owner by its own lastName suffix.
 */
async function applyToCustomer(trx: Tx, clock: Clock, platformId: string, input: ReviewInput, status: VerificationStatus): Promise<void> {
  const next = CUSTOMER_STATUS[status];
  if (!next) return;
  if (input.customer.status === 'APPROVED' && next !== 'REJECTED') return;
  await setReviewStatus(trx, clock, platformId, input.customer.uuid, next);
  const rejectedBySuffix = input.customer.type === 'BUSINESS' && status === 'REJECTED' && sandboxSuffixOutcome(input) === 'REJECTED';
  const owners = new Map<ReviewStatus, string[]>();
  for (const owner of input.owners) {
    const ownerStatus = rejectedBySuffix ? sandboxOwnerStatus(owner) : next;
    owners.set(ownerStatus, [...(owners.get(ownerStatus) ?? []), owner.id]);
  }
  for (const [ownerStatus, ids] of owners) await setBeneficialOwnerStatuses(trx, clock, platformId, ids, ownerStatus);
}

/**
 * What POST /verifications answers at once: REJECTED for a sandbox 002 test value (before any
 * check), RESOLVE_ERRORS when something is missing, the verdict itself when a sandbox test value
 * decides it (nothing to wait for), else IN_PROGRESS for the review job.
 */
function opening(input: ReviewInput): Verdict {
  const suffix = sandboxSuffixOutcome(input);
  const missing = suffix === 'REJECTED' ? [] : missingRequirements(input);
  if (missing.length) return { status: 'RESOLVE_ERRORS', errors: missing };
  return suffix ? decide(input) : { status: 'IN_PROGRESS', errors: [] };
}

/**
 * Starts a review. Anything missing answers RESOLVE_ERRORS at once, one entry per problem;
 * otherwise the verification is IN_PROGRESS and a durable job gives the verdict (or, for a
 * sandbox test value, the verdict is given at once). While a review is in progress, starting
 * another returns it.
 */
export async function startVerification(
  trx: Tx,
  clock: Clock,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  customerId: string,
): Promise<Verification> {
  const input = await loadReviewInput(trx, caller.platformId, customerId, caller.environment === 'sandbox');
  const running = await findInProgress(trx, caller.platformId, input.customer.uuid);
  if (running) return toVerification(running);
  const { status, errors } = opening(input);
  const now = clock.now();
  const row: VerificationRow = { id: uuidv7(now.getTime()), platform_id: caller.platformId, customer_id: input.customer.uuid, status, errors, created_at: now, updated_at: now };
  await insertVerification(trx, row);
  if (status === 'IN_PROGRESS') {
    const payload: ReviewJobPayload = { verificationId: row.id, environment: caller.environment };
    await enqueueJob(trx, clock, { kind: REVIEW_JOB, payload, platformId: caller.platformId });
  }
  await applyToCustomer(trx, clock, caller.platformId, input, status);
  const verification = toVerification(row);
  await announce(trx, clock, caller.platformId, verification);
  return verification;
}

function decide(input: ReviewInput): Verdict {
  const suffix = sandboxSuffixOutcome(input);
  if (suffix === 'REJECTED') return { status: 'REJECTED', errors: [suffixRejection(input)] };
  const missing = missingRequirements(input);
  const documentProblems = reviewDocuments(input);
  if (documentProblems.some((p) => p.code === 'SUSPECTED_FRAUD')) return { status: 'REJECTED', errors: [...missing, ...documentProblems] };
  if (missing.length || documentProblems.length) return { status: 'RESOLVE_ERRORS', errors: [...missing, ...documentProblems] };
  const forced = sandboxOutcome(input);
  if (forced === 'REJECTED') {
    return {
      status: 'REJECTED',
      errors: [{ resourceId: input.customer.id, type: 'APPLICANT_REJECTED', reason: 'Sandbox trigger SANDBOX_REJECT in the platformCustomerId.' }],
    };
  }
  if (forced === 'PENDING_MANUAL_REVIEW') return { status: 'PENDING_MANUAL_REVIEW', errors: [] };
  if (suffix === 'PENDING_MANUAL_REVIEW') return { status: 'PENDING_MANUAL_REVIEW', errors: [] };
  if (suffix === 'LOW_QUALITY') return { status: 'RESOLVE_ERRORS', errors: [suffixLowQuality(input)] };
  // Without a screening vendor, production applicants wait for a person to decide.
  return { status: input.sandbox ? 'APPROVED' : 'PENDING_MANUAL_REVIEW', errors: [] };
}

/** The background verdict of one IN_PROGRESS verification; anything else is left alone. */
export async function reviewVerification(trx: Tx, clock: Clock, platformId: string, payload: ReviewJobPayload): Promise<void> {
  const row = await findVerification(trx, platformId, payload.verificationId, { forUpdate: true });
  if (!row || row.status !== 'IN_PROGRESS') return;
  let input: ReviewInput;
  try {
    input = await loadReviewInput(trx, platformId, formatId('Customer', row.customer_id), payload.environment === 'sandbox');
  } catch (error) {
    if (!(error instanceof AppError && error.code === 'CUSTOMER_DELETED')) throw error;
    const updated = await updateVerification(trx, platformId, row.id, {
      status: 'REJECTED',
      errors: [{ resourceId: formatId('Customer', row.customer_id), type: 'APPLICANT_REJECTED', reason: 'The customer was deleted during the review.' }],
      updated_at: clock.now(),
    });
    await announce(trx, clock, platformId, toVerification(updated));
    return;
  }
  const verdict = decide(input);
  const updated = await updateVerification(trx, platformId, row.id, { ...verdict, updated_at: clock.now() });
  await applyToCustomer(trx, clock, platformId, input, verdict.status);
  await announce(trx, clock, platformId, toVerification(updated));
}

export async function getVerification(db: DbOrTx, platformId: string, verificationId: string): Promise<Verification> {
  const uuid = parseId('Verification', verificationId);
  const row = uuid && (await findVerification(db, platformId, uuid));
  if (!row) throw new AppError('REFERENCE_NOT_FOUND', `Verification ${verificationId} was not found.`);
  return toVerification(row);
}

export async function listVerifications(db: DbOrTx, platformId: string, query: VerificationListQuery): Promise<Page<Verification>> {
  const page = pageRequest(query);
  const customerId = query.customerId ? parseId('Customer', query.customerId) : undefined;
  const { rows, totalCount } = await listRows(
    db,
    platformId,
    { ...(customerId ? { customerId } : {}), ...(query.verificationStatus ? { status: query.verificationStatus } : {}) },
    page,
  );
  return toPage(rows, page, toVerification, totalCount);
}

/** Whether a verification of this customer is IN_PROGRESS or PENDING_MANUAL_REVIEW, i.e. its documents are under review. */
export async function reviewUnderway(db: DbOrTx, platformId: string, customerUuid: string): Promise<boolean> {
  return hasOpenReview(db, platformId, customerUuid);
}
