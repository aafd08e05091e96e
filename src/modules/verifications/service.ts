import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob } from '../../platform/jobs/index.js';
import { recordEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { ownersForReview, setBeneficialOwnerStatuses } from '../beneficial-owners/index.js';
import { holdForReview, loadCustomerForReview, type ReviewStatus, setReviewStatus } from '../customers/index.js';
import { documentsOfHolders, recordReviewReading, recordReviewVerdict } from '../documents/index.js';
import { findLatest, findVerification, hasOpenReview, insertVerification, listVerifications as listRows, OPEN_STATUSES, updateVerification, type VerificationRow } from './repo.js';
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
import type { ManualReviewDecision, Verification, VerificationError, VerificationListQuery, VerificationStatus } from './schemas.js';

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

/** The verdicts a review ends with; the other statuses leave it open (IN_PROGRESS, PENDING_MANUAL_REVIEW) or are never given. */
const DECIDED: ReadonlySet<VerificationStatus> = new Set(['APPROVED', 'REJECTED', 'RESOLVE_ERRORS']);

/** What a review concludes: the verification's status and its entries. */
interface Verdict {
  status: VerificationStatus;
  errors: VerificationError[];
}

/**
 * Moves the customer (and its owners) to the status the verification implies. An APPROVED
 * customer is never downgraded by a review that merely runs or asks for more (IN_PROGRESS,
 * PENDING_MANUAL_REVIEW, RESOLVE_ERRORS): it stays APPROVED, its accounts stay usable, and the
 * verification itself says what is missing; an APPROVED verdict approves its owners again. Only
 * a REJECTED verdict, announced as CUSTOMER.KYC_REJECTED / KYB_REJECTED, changes an approved
 * customer. A REJECTED customer never
 * moves again (verdicts reaching one are REJECTED: `finalRejection`). Owners follow the
 * business, except that a business rejected by its sandbox registration-number suffix settles
 * each owner by its own lastName suffix; so a review that ends after the platform rejected its
 * business still settles the owners it held PENDING, rather than leave them pending with no
 * review open.
 */
async function applyToCustomer(trx: Tx, clock: Clock, platformId: string, input: ReviewInput, status: VerificationStatus): Promise<void> {
  const next = CUSTOMER_STATUS[status];
  if (!next) return;
  // An approving review of an approved business still judges its owners: one changed or added
  // since the last approval is UNVERIFIED until a review approves it.
  if (input.customer.status === 'APPROVED' && next !== 'REJECTED' && next !== 'APPROVED') return;
  await setReviewStatus(trx, clock, platformId, input.customer.uuid, next);
  const rejectedBySuffix = input.customer.type === 'BUSINESS' && status === 'REJECTED' && sandboxSuffixOutcome(input) === 'REJECTED';
  const owners = new Map<ReviewStatus, string[]>();
  for (const owner of input.owners) {
    const ownerStatus = rejectedBySuffix ? sandboxOwnerStatus(owner) : next;
    if (owner.kyc_status !== ownerStatus) owners.set(ownerStatus, [...(owners.get(ownerStatus) ?? []), owner.id]);
  }
  for (const [ownerStatus, ids] of owners) await setBeneficialOwnerStatuses(trx, clock, platformId, ids, ownerStatus);
}

/**
 * What the verification's change means for the customer's documents: `read` — the review read
 * the documents on file now (they are submitted, and a decided verdict judges them); `judged` —
 * it read them earlier and decides now; `untouched` — it read none (missing requirements, a
 * rejection without review, a deleted customer).
 */
type DocumentEffect = 'read' | 'judged' | 'untouched';

/**
 * What follows a verification's new status, in its transaction: the customer's and owners'
 * statuses; the documents' record (a decided verdict judges each document the review read:
 * REJECTED when its errors name it, else ACCEPTED); the hold on what the review reads (kept while
 * any review of the customer is open); and the VERIFICATION.<status> event.
 */
async function record(trx: Tx, clock: Clock, platformId: string, input: ReviewInput, row: VerificationRow, documents: DocumentEffect): Promise<Verification> {
  await applyToCustomer(trx, clock, platformId, input, row.status);
  if (documents === 'read') await recordReviewReading(trx, clock, platformId, input.documents.map((d) => d.id));
  if (documents !== 'untouched' && DECIDED.has(row.status)) {
    const rejected = row.errors.flatMap((e) => (e.resourceId.startsWith('Document:') ? [e.resourceId] : []));
    await recordReviewVerdict(trx, platformId, [input.customer.uuid, ...input.owners.map((o) => o.id)], rejected);
  }
  await holdForReview(trx, clock, platformId, input.customer.uuid, await hasOpenReview(trx, platformId, input.customer.uuid));
  const verification = toVerification(row);
  await announce(trx, clock, platformId, verification);
  return verification;
}

/**
 * A customer already REJECTED stays so (a rejection is final): a verdict reached on one is
 * REJECTED too, keeping its entries and saying why.
 */
function finalRejection(input: ReviewInput, verdict: Verdict): Verdict {
  if (input.customer.status !== 'REJECTED' || verdict.status === 'REJECTED') return verdict;
  return {
    status: 'REJECTED',
    errors: [{ resourceId: input.customer.id, type: 'APPLICANT_REJECTED', reason: 'The customer was rejected while this review ran; a rejection is final.' }, ...verdict.errors],
  };
}

/**
 * What POST /verifications answers at once: REJECTED for a sandbox 002 test value (before any
 * check), RESOLVE_ERRORS when something is missing, the verdict itself when a sandbox test value
 * decides it (nothing to wait for), else IN_PROGRESS for the review job.
 */
function opening(input: ReviewInput): Verdict & { documents: DocumentEffect } {
  const suffix = sandboxSuffixOutcome(input);
  if (suffix === 'REJECTED') return { ...decide(input), documents: 'untouched' };
  const missing = missingRequirements(input);
  if (missing.length) return { status: 'RESOLVE_ERRORS', errors: missing, documents: 'untouched' };
  return suffix ? { ...decide(input), documents: 'read' } : { status: 'IN_PROGRESS', errors: [], documents: 'read' };
}

/**
 * Starts a review. Anything missing answers RESOLVE_ERRORS at once, one entry per problem;
 * otherwise the verification is IN_PROGRESS and a durable job gives the verdict (or, for a
 * sandbox test value, the verdict is given at once). While a review is open (IN_PROGRESS or
 * PENDING_MANUAL_REVIEW), starting another returns it. A REJECTED customer is not reviewed
 * again: the answer is the verification that rejected it (README.md, "A rejection is final").
 */
export async function startVerification(
  trx: Tx,
  clock: Clock,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  customerId: string,
): Promise<Verification> {
  const input = await loadReviewInput(trx, caller.platformId, customerId, caller.environment === 'sandbox');
  const open = await findLatest(trx, caller.platformId, input.customer.uuid, OPEN_STATUSES);
  if (open) return toVerification(open);
  if (input.customer.status === 'REJECTED') {
    const rejection = await findLatest(trx, caller.platformId, input.customer.uuid, ['REJECTED']);
    if (rejection) return toVerification(rejection);
  }
  const { status, errors, documents } = input.customer.status === 'REJECTED' ? { ...rejectedWithoutReview(input), documents: 'untouched' as const } : opening(input);
  const now = clock.now();
  const row: VerificationRow = { id: uuidv7(now.getTime()), platform_id: caller.platformId, customer_id: input.customer.uuid, status, errors, created_at: now, updated_at: now };
  await insertVerification(trx, row);
  if (status === 'IN_PROGRESS') {
    const payload: ReviewJobPayload = { verificationId: row.id, environment: caller.environment };
    await enqueueJob(trx, clock, { kind: REVIEW_JOB, payload, platformId: caller.platformId });
  }
  return record(trx, clock, caller.platformId, input, row, documents);
}

/**
 * The one verification of a customer that is REJECTED without any verification having rejected
 * it (a sandbox 002 name at creation, or a platform that runs its own KYC): the rejection, in
 * the verification's shape, with nothing reviewed.
 */
function rejectedWithoutReview(input: ReviewInput): Verdict {
  if (sandboxSuffixOutcome(input) === 'REJECTED') return { status: 'REJECTED', errors: [suffixRejection(input)] };
  return { status: 'REJECTED', errors: [{ resourceId: input.customer.id, type: 'APPLICANT_REJECTED', reason: 'The customer is REJECTED; a rejection is final.' }] };
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
  // Without a screening vendor, production applicants wait for a person to decide (decideManualReview).
  return { status: input.sandbox ? 'APPROVED' : 'PENDING_MANUAL_REVIEW', errors: [] };
}

/** A review whose customer was deleted meanwhile ends REJECTED; nothing else of the customer moves. */
async function endForDeletedCustomer(trx: Tx, clock: Clock, platformId: string, row: VerificationRow): Promise<Verification> {
  const updated = await updateVerification(trx, platformId, row.id, {
    status: 'REJECTED',
    errors: [{ resourceId: formatId('Customer', row.customer_id), type: 'APPLICANT_REJECTED', reason: 'The customer was deleted during the review.' }],
    updated_at: clock.now(),
  });
  await holdForReview(trx, clock, platformId, row.customer_id, await hasOpenReview(trx, platformId, row.customer_id));
  const verification = toVerification(updated);
  await announce(trx, clock, platformId, verification);
  return verification;
}

/** The review input of a verification's customer, or undefined when the customer was deleted. */
async function inputOf(trx: Tx, platformId: string, row: VerificationRow, sandbox: boolean): Promise<ReviewInput | undefined> {
  try {
    return await loadReviewInput(trx, platformId, formatId('Customer', row.customer_id), sandbox);
  } catch (error) {
    if (error instanceof AppError && error.code === 'CUSTOMER_DELETED') return undefined;
    throw error;
  }
}

/** The background verdict of one IN_PROGRESS verification; anything else is left alone. */
export async function reviewVerification(trx: Tx, clock: Clock, platformId: string, payload: ReviewJobPayload): Promise<void> {
  const row = await findVerification(trx, platformId, payload.verificationId, { forUpdate: true });
  if (!row || row.status !== 'IN_PROGRESS') return;
  const input = await inputOf(trx, platformId, row, payload.environment === 'sandbox');
  if (!input) {
    await endForDeletedCustomer(trx, clock, platformId, row);
    return;
  }
  const verdict = finalRejection(input, decide(input));
  const updated = await updateVerification(trx, platformId, row.id, { ...verdict, updated_at: clock.now() });
  await record(trx, clock, platformId, input, updated, 'read');
}

/**
 * Ends a PENDING_MANUAL_REVIEW verification with a person's verdict: the operator's in production
 * (the review provider Corridor has there is a person), the sandbox endpoint's in sandbox.
 * APPROVED or REJECTED (one APPLICANT_REJECTED entry); the customer, its owners, its documents'
 * verdicts and the events follow as for any verdict. The same verdict again answers the
 * verification as it is; any other status is 409 CONFLICT. A deleted customer's review ends
 * REJECTED whatever the decision; a customer rejected meanwhile stays so.
 */
export async function decideManualReview(trx: Tx, clock: Clock, platformId: string, verificationId: string, decision: ManualReviewDecision): Promise<Verification> {
  const uuid = parseId('Verification', verificationId);
  const row = uuid && (await findVerification(trx, platformId, uuid, { forUpdate: true }));
  if (!row) throw new AppError('REFERENCE_NOT_FOUND', `Verification ${verificationId} was not found.`);
  if (row.status === decision.verificationStatus) return toVerification(row);
  if (row.status !== 'PENDING_MANUAL_REVIEW') {
    throw new AppError('CONFLICT', `Verification ${verificationId} is ${row.status}; only a PENDING_MANUAL_REVIEW verification awaits a person's decision.`, {
      details: { verificationStatus: row.status },
    });
  }
  const input = await inputOf(trx, platformId, row, false);
  if (!input) return endForDeletedCustomer(trx, clock, platformId, row);
  const verdict: Verdict =
    decision.verificationStatus === 'APPROVED'
      ? { status: 'APPROVED', errors: [] }
      : { status: 'REJECTED', errors: [{ resourceId: input.customer.id, type: 'APPLICANT_REJECTED', reason: decision.reason ?? 'Rejected in manual review.' }] };
  const updated = await updateVerification(trx, platformId, row.id, { ...finalRejection(input, verdict), updated_at: clock.now() });
  return record(trx, clock, platformId, input, updated, 'judged');
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
