import { randomBytes } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { currency, isCurrency } from '../../platform/currencies.js';
import { validDateTime } from '../../platform/datetime.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { uuidv7 } from '../../platform/ids.js';
import { recordEvent } from '../../platform/outbox.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import { getConfigRow } from '../config/index.js';
import { findLiveCustomerByUmaAddress, freeTextErrors, senderReadiness } from '../customers/index.js';
import { platformEnvironment, type Environment } from '../platforms/index.js';
import { cancelIfClaimable, claimIfClaimable, findByCode, insertInvitation, type InvitationRow } from './repo.js';
import {
  CODE_ALPHABET,
  INVITATION_CLAIMED,
  type UmaInvitation,
  type UmaInvitationClaimRequest,
  type UmaInvitationCreateRequest,
} from './schemas.js';

/** A code of 10 characters from a 32-letter alphabet: each byte's low 5 bits pick a letter. */
function newCode(): string {
  return [...randomBytes(10)].map((b) => CODE_ALPHABET[b & 31]).join('');
}

const notFound = (code: string) => new AppError('INVITATION_NOT_FOUND', `No invitation has the code ${code}.`);

function isExpired(row: InvitationRow, now: Date): boolean {
  return row.status === 'PENDING' && row.expires_at !== null && row.expires_at.getTime() <= now.getTime();
}

/**
 * A PENDING invitation whose inviter has been deleted since reads as CANCELLED and can no longer
 * be claimed: nobody is left to send what it promises, and its `inviterUma` may by now be the
 * address of another customer, whom INVITATION.CLAIMED would name.
 */
async function inviterGone(db: DbOrTx, row: InvitationRow): Promise<boolean> {
  return row.status === 'PENDING' && !(await inviterLive(db, row));
}

/**
 * Whether the inviter is still a customer. A claim or cancel (`forShare`) reads its row FOR SHARE:
 * a concurrent deletion of the inviter (which locks it FOR UPDATE) waits for the claim to commit,
 * or is waited for and seen, so no claim commits for an inviter deleted meanwhile.
 */
async function inviterLive(db: DbOrTx, row: InvitationRow, options: { forShare?: boolean } = {}): Promise<boolean> {
  const inviter = await senderReadiness(db, row.platform_id, row.inviter_customer_id, options);
  return inviter !== undefined && !inviter.deleted;
}

/**
 * Sandbox and production are apart: an invitation is seen (read, claimed, cancelled) only by
 * platforms of its creator's environment; another environment's is 404 INVITATION_NOT_FOUND, as
 * another platform's id is. A sandbox platform's claim must not make a production platform send
 * real money (`amountToSend`) to an address it chose, nor a production claim land in a sandbox.
 */
async function visibleTo(db: DbOrTx, row: InvitationRow, environment: Environment): Promise<boolean> {
  return (await platformEnvironment(db, row.platform_id)) === environment;
}

export function toInvitation(row: InvitationRow, now: Date, options: { inviterGone?: boolean } = {}): UmaInvitation {
  return {
    code: row.code,
    createdAt: row.created_at.toISOString(),
    ...(row.claimed_at ? { claimedAt: row.claimed_at.toISOString() } : {}),
    url: row.url,
    ...(row.expires_at ? { expiresAt: row.expires_at.toISOString() } : {}),
    inviterUma: row.inviter_uma,
    ...(row.invitee_uma ? { inviteeUma: row.invitee_uma } : {}),
    status: options.inviterGone ? 'CANCELLED' : isExpired(row, now) ? 'EXPIRED' : row.status,
    ...(row.first_name ? { firstName: row.first_name } : {}),
    ...(row.amount_to_send !== null && row.amount_currency ? { amountToSend: { amount: Number(row.amount_to_send), currency: currency(row.amount_currency) } } : {}),
  };
}

const notConfigured = () => new AppError('INVITATIONS_NOT_CONFIGURED', 'Invitations need an UMA domain: set umaDomain with PATCH /config first.');

/** The platform must have an UMA domain to take part in invitations (its addresses and invitation links live there). */
async function umaDomainOf(trx: DbOrTx, platformId: string): Promise<string> {
  const config = await getConfigRow(trx, platformId);
  if (!config.uma_domain) throw notConfigured();
  return config.uma_domain;
}

/** Why a code that is not claimable (any more) cannot be claimed or cancelled. */
function refusal(row: InvitationRow, now: Date, gone: boolean): AppError {
  if (gone) return inviterDeleted(row);
  if (row.status === 'CLAIMED') return new AppError('INVITATION_ALREADY_CLAIMED', `Invitation ${row.code} was already claimed.`);
  if (row.status === 'CANCELLED') return new AppError('INVITATION_CANCELLED', `Invitation ${row.code} was cancelled.`);
  if (isExpired(row, now)) {
    return new AppError('INVALID_INPUT', `Invitation ${row.code} expired at ${row.expires_at!.toISOString()}.`, {
      details: { status: 'EXPIRED', expiresAt: row.expires_at!.toISOString() },
    });
  }
  return new AppError('INTERNAL_ERROR', `Invitation ${row.code} is claimable yet was not changed.`);
}

const inviterDeleted = (row: InvitationRow) =>
  new AppError('INVITATION_CANCELLED', `Invitation ${row.code} was cancelled: its inviter is no longer a customer.`, { details: { reason: 'INVITER_DELETED' } });

export async function createInvitation(trx: Tx, clock: Clock, platformId: string, request: UmaInvitationCreateRequest): Promise<UmaInvitation> {
  const domain = await umaDomainOf(trx, platformId);
  requireUmaAddress('inviterUma', request.inviterUma);
  // The name is shown to the invitee: no control characters, not blank (customers' rule for names).
  const nameErrors = freeTextErrors({ firstName: request.firstName });
  if (nameErrors.length) throw invalidInput(nameErrors);
  const now = clock.now();
  const expiresAt = request.expiresAt === undefined ? null : validDateTime(request.expiresAt);
  if (expiresAt && expiresAt.getTime() <= now.getTime()) throw invalidInput([{ field: 'expiresAt', message: 'must be in the future' }]);
  const inviter = await findLiveCustomerByUmaAddress(trx, platformId, request.inviterUma);
  if (!inviter) throw invalidInput([{ field: 'inviterUma', message: 'is not the UMA address of one of your customers' }]);
  // The inviter's currency: the customer's first, else the platform's first supported currency.
  const config = await getConfigRow(trx, platformId);
  const currencyCode = [...(inviter.currencies ?? []), ...config.supported_currencies.map((c) => c.currencyCode)].find(isCurrency);
  if (request.amountToSend !== undefined && !currencyCode) throw invalidInput([{ field: 'amountToSend', message: 'needs a currency: the inviter has none and the platform supports none' }]);
  for (;;) {
    const code = newCode();
    const row = await insertInvitation(trx, {
      platform_id: platformId,
      id: uuidv7(now.getTime()),
      code,
      inviter_customer_id: inviter.id,
      inviter_uma: inviter.uma_address,
      first_name: request.firstName ?? null,
      amount_to_send: request.amountToSend === undefined ? null : BigInt(request.amountToSend),
      amount_currency: request.amountToSend === undefined ? null : currencyCode!,
      url: `https://${domain}/i/${code}`,
      status: 'PENDING',
      expires_at: expiresAt,
      invitee_uma: null,
      claimed_by_platform_id: null,
      claimed_at: null,
      created_at: now,
      updated_at: now,
    });
    // A taken code (one in 2^50 per existing invitation) draws again.
    if (!row) continue;
    const invitation = toInvitation(row, now);
    await recordEvent(trx, clock, { platformId, type: 'INVITATION.CREATED', resourceId: code, data: invitation });
    return invitation;
  }
}

interface Caller {
  platformId: string;
  environment: Environment;
}

/** Any platform (of the creator's environment) may read an invitation by its code: the code is what the inviter shares. */
export async function getInvitation(db: DbOrTx, clock: Clock, caller: Caller, code: string): Promise<UmaInvitation> {
  const row = await findByCode(db, code);
  if (!row || !(await visibleTo(db, row, caller.environment))) throw notFound(code);
  return toInvitation(row, clock.now(), { inviterGone: await inviterGone(db, row) });
}

/**
 * Whether `row` was claimed by this very claim: the same platform for the same address (compared
 * case-insensitively, as addresses are everywhere). A claim retried after its answer was lost is
 * answered with the invitation as it is, changing nothing and recording no second event, as
 * upstream declares no Idempotency-Key here; another platform's or another address's claim is
 * still INVITATION_ALREADY_CLAIMED.
 */
function isSameClaim(row: InvitationRow, claimer: Caller, request: UmaInvitationClaimRequest): boolean {
  return (
    row.status === 'CLAIMED' &&
    row.claimed_by_platform_id === claimer.platformId &&
    row.invitee_uma !== null &&
    row.invitee_uma.toLowerCase() === request.inviteeUma.toLowerCase()
  );
}

/**
 * Claims an invitation for `inviteeUma`, exactly once: the conditional UPDATE decides, and the
 * INVITATION.CLAIMED event for the inviting platform is recorded in the same transaction. What
 * the UPDATE does not test (the environment, the inviter still a customer, a claim by the
 * inviter itself) is checked on the row it returns: a refusal there rolls the claim back.
 */
export async function claimInvitation(trx: Tx, clock: Clock, claimer: Caller, code: string, request: UmaInvitationClaimRequest): Promise<UmaInvitation> {
  requireUmaAddress('inviteeUma', request.inviteeUma);
  // An unknown code is 404 whatever the claimer's config: a missing UMA domain is refused only
  // for an invitation that exists. The code is looked up only then: a configured claimer's claim
  // stays the config read and the conditional UPDATE.
  if (!(await getConfigRow(trx, claimer.platformId)).uma_domain) {
    const row = await findByCode(trx, code);
    if (!row || !(await visibleTo(trx, row, claimer.environment))) throw notFound(code);
    // A claim that won before the platform removed its UMA domain is still answered as one.
    if (isSameClaim(row, claimer, request)) return toInvitation(row, clock.now());
    throw notConfigured();
  }
  const now = clock.now();
  const claimed = await claimIfClaimable(trx, code, { inviteeUma: request.inviteeUma, claimerPlatformId: claimer.platformId }, now);
  if (!claimed) {
    const current = await findByCode(trx, code);
    if (!current || !(await visibleTo(trx, current, claimer.environment))) throw notFound(code);
    if (isSameClaim(current, claimer, request)) return toInvitation(current, now);
    throw refusal(current, now, await inviterGone(trx, current));
  }
  if (!(await visibleTo(trx, claimed, claimer.environment))) throw notFound(code);
  if (!(await inviterLive(trx, claimed, { forShare: true }))) throw inviterDeleted(claimed);
  if (claimed.inviter_uma.toLowerCase() === request.inviteeUma.toLowerCase()) {
    throw invalidInput([{ field: 'inviteeUma', message: 'is the inviter; an invitation is claimed by someone else' }]);
  }
  const invitation = toInvitation(claimed, now);
  await recordEvent(trx, clock, { platformId: claimed.platform_id, type: INVITATION_CLAIMED, resourceId: code, data: invitation });
  return invitation;
}

/**
 * Only the platform that created an invitation may cancel it (403 for another), and only while it
 * is PENDING: one whose inviter was deleted already reads as CANCELLED, and is refused as such.
 */
export async function cancelInvitation(trx: Tx, clock: Clock, caller: Caller, code: string): Promise<UmaInvitation> {
  const now = clock.now();
  const cancelled = await cancelIfClaimable(trx, caller.platformId, code, now);
  if (!cancelled) {
    const current = await findByCode(trx, code);
    if (!current || !(await visibleTo(trx, current, caller.environment))) throw notFound(code);
    if (current.platform_id !== caller.platformId) throw new AppError('FORBIDDEN', 'Only the platform that created an invitation can cancel it.');
    throw refusal(current, now, await inviterGone(trx, current));
  }
  if (!(await inviterLive(trx, cancelled, { forShare: true }))) throw inviterDeleted(cancelled);
  const invitation = toInvitation(cancelled, now);
  await recordEvent(trx, clock, { platformId: caller.platformId, type: 'INVITATION.CANCELLED', resourceId: code, data: invitation });
  return invitation;
}
