import { createHmac, hkdfSync } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import { base64url, sha256Hex } from '../../platform/crypto/encoding.js';
import type { TenantSecretBox } from '../../platform/crypto/secret-box.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { liveCustomerIdByPlatformCustomerId, loadCustomerForReview, updateCustomer, type EndUserTerms } from '../customers/index.js';
import { getDocument } from '../documents/index.js';
import { unverifiedContacts } from '../wallet-auth/index.js';
import { findKycLinkByToken, insertKycLink, useKycLink, type KycLinkRow } from './repo.js';
import { missingRequirements, reviewDocuments, type ReviewInput } from './rules.js';
import type { KycLinkByPlatformCustomerIdQuery, KycLinkCreateRequest, KycLinkResponse, KycPageFields, VerificationError, VerificationStatus } from './schemas.js';
import { loadReviewInput, startVerification } from './service.js';

// Hosted KYC/KYB links (POST /customers/{customerId}/kyc-link) and what the page they open may do.

/** How long the customer has to finish the hosted flow. */
export const KYC_LINK_TTL_MS = 24 * 60 * 60_000;
/** Where the page lives, under the versioned base path; the token follows. */
export const KYC_PAGE_PATH = '/kyc';

/**
 * A link's token is an HMAC of its id under a key derived from the master key: unguessable,
 * never stored (the row keeps its SHA-256), yet re-derivable, so an idempotent replay of the
 * create answers the same URL without the idempotency record holding it.
 */
export class KycLinkTokens {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'corridor/kyc-link', 32));
  }

  tokenOf(linkUuid: string): string {
    return base64url(createHmac('sha256', this.key).update(linkUuid).digest());
  }
}

/** What the idempotency record keeps of a created link: everything but the token. */
export interface StoredKycLink {
  linkId: string;
  expiresAt: string;
}

export function presentKycLink(tokens: KycLinkTokens, pageBaseUrl: string, stored: StoredKycLink): KycLinkResponse {
  return { kycUrl: `${pageBaseUrl}${KYC_PAGE_PATH}/${tokens.tokenOf(stored.linkId)}`, expiresAt: stored.expiresAt, provider: 'CORRIDOR' };
}

/**
 * Issues a link for a live customer (404 USER_NOT_FOUND, 410 CUSTOMER_DELETED). While a contact
 * the customer's wallet signs in with (EMAIL_OTP / SMS_OTP) was never confirmed by its one-time
 * code, 409 CONFLICT: the page must not be handed to someone who has not proven the contact.
 */
export async function createKycLink(
  trx: Tx,
  clock: Clock,
  tokens: KycLinkTokens,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  customerId: string,
  body: KycLinkCreateRequest,
): Promise<StoredKycLink> {
  if (body.redirectUri && caller.environment === 'production' && !body.redirectUri.startsWith('https://')) {
    throw invalidInput([{ field: 'redirectUri', constraint: { format: 'url', pattern: '^https://' }, message: 'must be an https:// URL for a production platform' }]);
  }
  const customer = await loadCustomerForReview(trx, caller.platformId, customerId);
  const unverified = await unverifiedContacts(trx, caller.platformId, customer.uuid);
  if (unverified.length > 0) {
    throw new AppError(
      'CONFLICT',
      `Contact verification is incomplete: the customer has not yet confirmed the one-time code sent to their ${unverified.map((u) => (u.kind === 'email' ? 'e-mail' : 'phone')).join(' and ')}. ` +
        'Have them sign in to their wallet with it once, then ask for the link again.',
      { details: { reason: 'CONTACT_VERIFICATION_INCOMPLETE', unverified: unverified.map((u) => ({ contact: u.kind === 'email' ? 'EMAIL' : 'PHONE', credentialId: u.credentialId })) } },
    );
  }
  const now = clock.now();
  const id = uuidv7(now.getTime());
  const expiresAt = new Date(now.getTime() + KYC_LINK_TTL_MS);
  await insertKycLink(trx, {
    id,
    platform_id: caller.platformId,
    customer_id: customer.uuid,
    environment: caller.environment,
    token_sha256: sha256Hex(tokens.tokenOf(id)),
    redirect_uri: body.redirectUri ?? null,
    expires_at: expiresAt,
    submitted_at: null,
    verification_id: null,
    created_at: now,
  });
  return { linkId: id, expiresAt: expiresAt.toISOString() };
}

/**
 * GET /customers/kyc-link, the operation the upstream's published SDK calls (`getKYCLink`): the
 * live customer holding `platformCustomerId` (404 USER_NOT_FOUND when none does; a deleted
 * customer's id is free for reuse, so it is not 410 here) gets a link as createKycLink issues one.
 */
export async function createKycLinkForPlatformCustomerId(
  trx: Tx,
  clock: Clock,
  tokens: KycLinkTokens,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  query: KycLinkByPlatformCustomerIdQuery,
): Promise<{ customerId: string; link: StoredKycLink }> {
  const uuid = await liveCustomerIdByPlatformCustomerId(trx, caller.platformId, query.platformCustomerId);
  if (!uuid) {
    throw new AppError('USER_NOT_FOUND', `No customer has platformCustomerId ${JSON.stringify(query.platformCustomerId)}.`, {
      details: { platformCustomerId: query.platformCustomerId },
    });
  }
  const customerId = formatId('Customer', uuid);
  const body = query.redirectUri === undefined ? {} : { redirectUri: query.redirectUri };
  return { customerId, link: await createKycLink(trx, clock, tokens, caller, customerId, body) };
}

export type LinkState = 'OPEN' | 'USED' | 'EXPIRED';

function stateOf(link: KycLinkRow, clock: Clock): LinkState {
  if (link.submitted_at) return 'USED';
  return link.expires_at.getTime() <= clock.now().getTime() ? 'EXPIRED' : 'OPEN';
}

const linkGone = () => new AppError('REFERENCE_NOT_FOUND', 'This verification link does not exist, has expired or was already submitted.');

/**
 * What a review of the link's customer would read; undefined once the platform deleted the
 * customer. The link then goes with it: its holder learns neither the customer's id nor that a
 * platform record existed (the API's 410 CUSTOMER_DELETED names both).
 */
async function linkReviewInput(trx: Tx, link: KycLinkRow): Promise<ReviewInput | undefined> {
  try {
    return await loadReviewInput(trx, link.platform_id, formatId('Customer', link.customer_id), link.environment === 'sandbox');
  } catch (error) {
    if (error instanceof AppError && error.code === 'CUSTOMER_DELETED') return undefined;
    throw error;
  }
}

/**
 * The link behind a token when it can still be used, with its customer's review input; 404
 * otherwise (unknown, expired, used and withdrawn look alike to the caller).
 */
export async function openLink(trx: Tx, clock: Clock, token: string): Promise<{ link: KycLinkRow; input: ReviewInput }> {
  const link = await findKycLinkByToken(trx, sha256Hex(token), { forUpdate: true });
  const input = link && stateOf(link, clock) === 'OPEN' ? await linkReviewInput(trx, link) : undefined;
  if (!link || !input) throw linkGone();
  return { link, input };
}

/** A person or business the page collects for, with how the page names it. */
export interface Holder {
  id: string;
  label: string;
  /** The country a document of this holder most likely comes from (prefilled on the page). */
  country?: string;
}

/** What the page shows: the link's state (WITHDRAWN: its customer was deleted) and, while it is open, what a review would still ask for. */
export type KycPageModel =
  | { state: 'USED' | 'EXPIRED' | 'WITHDRAWN' }
  | { state: 'OPEN'; customerType: 'INDIVIDUAL' | 'BUSINESS'; expiresAt: string; problems: VerificationError[]; holders: Holder[]; documents: Map<string, { holder: string; type: string }> };

function holdersOf(input: ReviewInput): Holder[] {
  const profile = input.customer.profile;
  const own: Holder = {
    id: input.customer.id,
    label: input.customer.type === 'INDIVIDUAL' ? 'you' : String(profile.businessInfo?.legalName ?? 'the business'),
    ...((profile.nationality ?? profile.address?.country ?? profile.businessInfo?.country) ? { country: String(profile.nationality ?? profile.address?.country ?? profile.businessInfo?.country) } : {}),
  };
  return [
    own,
    ...input.owners.map((o) => ({
      id: formatId('BeneficialOwner', o.id),
      label: `${o.personal_info.firstName} ${o.personal_info.lastName}`,
      ...(o.personal_info.nationality ? { country: o.personal_info.nationality } : {}),
    })),
  ];
}

/** The customer's current problems: what POST /verifications would answer RESOLVE_ERRORS with now. */
function problemsOf(input: ReviewInput): VerificationError[] {
  return [...missingRequirements(input), ...reviewDocuments(input)];
}

export async function describeKycPage(trx: Tx, clock: Clock, token: string): Promise<KycPageModel | undefined> {
  const link = await findKycLinkByToken(trx, sha256Hex(token));
  if (!link) return undefined;
  const state = stateOf(link, clock);
  if (state !== 'OPEN') return { state };
  const input = await linkReviewInput(trx, link);
  if (!input) return { state: 'WITHDRAWN' };
  return {
    state,
    customerType: input.customer.type,
    expiresAt: link.expires_at.toISOString(),
    problems: problemsOf(input),
    holders: holdersOf(input),
    documents: new Map(input.documents.map((d) => [d.id, { holder: d.documentHolder, type: d.documentType }])),
  };
}

/**
 * Stores the fields the customer filled in. Only fields a review requires and the customer does
 * not have yet may be set here (400 naming any other): the page completes a profile, it does
 * not let whoever holds the link rewrite one. The update is validated as PATCH /customers is.
 */
export async function fillKycFields(trx: Tx, clock: Clock, identifiers: TenantSecretBox, terms: EndUserTerms, token: string, fields: KycPageFields): Promise<void> {
  const { link, input } = await openLink(trx, clock, token);
  const customerId = formatId('Customer', link.customer_id);
  const missing = new Set(missingRequirements(input).flatMap((p) => (p.type === 'MISSING_FIELD' && p.field ? [p.field.replace(/^customer\./, '')] : [])));
  const refused: FieldError[] = Object.keys(fields)
    .filter((field) => !missing.has(field))
    .map((field) => ({ field, message: 'is already on file or not needed for the review; only missing fields can be filled in here' }));
  if (refused.length) throw invalidInput(refused);
  await updateCustomer(trx, clock, identifiers, link.platform_id, terms, customerId, { customerType: input.customer.type, ...fields }, []);
}

/** The platform and holders an upload through the page may name: the link's customer and its beneficial owners. */
export async function uploadScope(trx: Tx, clock: Clock, token: string): Promise<{ platformId: string; environment: 'sandbox' | 'production'; holderIds: Set<string> }> {
  const { link, input } = await openLink(trx, clock, token);
  return { platformId: link.platform_id, environment: link.environment, holderIds: new Set(holdersOf(input).map((h) => h.id)) };
}

/**
 * Run first in the transaction that stores a page upload (new or replacement document): locks the
 * link's row as submit does and refuses (404, as every call on a used or expired link) unless it
 * is still open. An upload checks the link when it arrives and stores the file only after
 * screening it; a submit in another tab in between would otherwise see the customer without that
 * document and leave it attached to a submitted link. Under the lock the two are serialised:
 * either the document is committed before the submit reads the customer, or the upload is refused.
 */
export async function holdOpenLink(trx: Tx, clock: Clock, token: string): Promise<void> {
  await openLink(trx, clock, token);
}

export function checkHolderInScope(scope: { holderIds: Set<string> }, holderId: string): void {
  if (!scope.holderIds.has(holderId)) {
    throw invalidInput([{ field: 'documentHolder', message: 'must be the customer of this link or one of its beneficial owners' }]);
  }
}

/**
 * A document the page may replace: one of the scope's holders'; any other is 404 as if unknown.
 * Only the read's own refusal (not found) means unknown: a database that cannot answer stays
 * the error it is (503, retryable), not a 404 telling the customer the document is gone.
 */
export async function checkDocumentInScope(db: DbOrTx, scope: { platformId: string; holderIds: Set<string> }, documentId: string): Promise<void> {
  const uuid = parseId('Document', documentId);
  const document = uuid
    ? await getDocument(db, scope.platformId, documentId).catch((error: unknown) => {
        if (error instanceof AppError) return undefined;
        throw error;
      })
    : undefined;
  if (!document || !scope.holderIds.has(document.documentHolder)) throw new AppError('REFERENCE_NOT_FOUND', `Document ${documentId} was not found.`);
}

/**
 * The customer submits: with nothing missing, a review starts exactly as POST /verifications
 * starts one, and the link is used up. Anything still missing is 400 listing it, and the link
 * stays open so the customer can finish.
 */
export async function submitKycLink(trx: Tx, clock: Clock, token: string): Promise<{ verificationStatus: VerificationStatus; redirectUri?: string }> {
  const { link, input } = await openLink(trx, clock, token);
  const customerId = formatId('Customer', link.customer_id);
  const missing = missingRequirements(input);
  if (missing.length) {
    throw invalidInput(missing.map((p) => ({ field: p.field ?? p.resourceId, message: p.reason })));
  }
  const verification = await startVerification(trx, clock, { platformId: link.platform_id, environment: link.environment }, customerId);
  if (!(await useKycLink(trx, link.id, parseId('Verification', verification.id)!, clock.now()))) throw linkGone();
  return { verificationStatus: verification.verificationStatus, ...(link.redirect_uri ? { redirectUri: link.redirect_uri } : {}) };
}
