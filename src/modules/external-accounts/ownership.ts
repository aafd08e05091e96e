import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import type { Tx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { customerTypeOf } from '../customers/index.js';
import { accountOwnerDeleted } from './lookup.js';
import { deleteChallenge, findAccount, findChallenge, findChallengeByToken, putChallenge, type ExternalAccountRow, type Owner } from './repo.js';
import type { ExternalAccount, OwnershipChallenge, OwnershipMethod, OwnershipVerifyRequest } from './schemas.js';
import { loadAccount, moveStatus, needsOwnershipProof, toExternalAccount, variantOf } from './service.js';
import { checkOwnershipSignature, signatureFormat } from './signatures.js';
import type { WalletVariant } from './variants.js';

/** How long the owner has to sign, and to finish the hosted check. */
export const WALLET_SIGNATURE_TTL_MS = 10 * 60_000;
export const LIVENESS_TTL_MS = 30 * 60_000;
/** Where the hosted check lives, under the versioned base path; the token follows. */
export const LIVENESS_PATH = '/ownership/liveness';

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

function conflict(message: string, reason: string): AppError {
  return new AppError('INVALID_STATE_TRANSITION', message, { details: { reason } });
}

/**
 * The account to prove, locked. A deleted customer's takes no proof (410 CUSTOMER_DELETED, as the
 * customer's own writes): nothing can be paid to it again, so a proof would allow nothing.
 */
async function accountToProve(trx: Tx, platformId: string, owner: Owner, id: string): Promise<ExternalAccountRow> {
  const row = await loadAccount(trx, platformId, owner, id, { forUpdate: true });
  if (row.customer_id) await customerTypeOf(trx, platformId, formatId('Customer', row.customer_id));
  return row;
}

/**
 * Starts (or restarts) ownership verification: only for an account that needs a proof and does
 * not have one yet (PENDING_OWNERSHIP_VERIFICATION or UNVERIFIED; 409 otherwise). The new
 * challenge replaces any outstanding one; an UNVERIFIED account goes back to
 * PENDING_OWNERSHIP_VERIFICATION (one STATUS_UPDATED event).
 */
export async function startChallenge(
  trx: Tx,
  clock: Clock,
  context: { platformId: string; environment: 'sandbox' | 'production'; owner: Owner; livenessBaseUrl: string },
  id: string,
  method: OwnershipMethod,
): Promise<OwnershipChallenge> {
  const row = await accountToProve(trx, context.platformId, context.owner, id);
  if (!needsOwnershipProof(row)) {
    throw conflict('Ownership verification applies only to FIRST_PARTY self-custody wallets.', 'NOT_APPLICABLE');
  }
  if (row.status !== 'PENDING_OWNERSHIP_VERIFICATION' && row.status !== 'UNVERIFIED') {
    throw conflict(`The account is ${row.status}; its ownership needs no new proof.`, 'ALREADY_VERIFIED');
  }
  if (method === 'LIVENESS' && context.environment === 'production') {
    throw new AppError('NOT_IMPLEMENTED', 'No liveness provider is configured for production platforms; use WALLET_SIGNATURE.');
  }
  const now = clock.now();
  const expiresAt = new Date(now.getTime() + (method === 'WALLET_SIGNATURE' ? WALLET_SIGNATURE_TTL_MS : LIVENESS_TTL_MS));
  await moveStatus(trx, clock, row, 'PENDING_OWNERSHIP_VERIFICATION');
  if (method === 'WALLET_SIGNATURE') {
    const variant = variantOf(row) as WalletVariant;
    const messageToSign = [
      'Corridor wallet ownership verification',
      '',
      'I control this wallet and ask that it be verified as mine.',
      `Wallet: ${String(row.account_info.address)}`,
      `Network: ${variant.network}`,
      `Account: ${formatId('ExternalAccount', row.id)}`,
      `Nonce: ${randomBytes(16).toString('hex')}`,
      `Expires: ${expiresAt.toISOString()}`,
    ].join('\n');
    await putChallenge(trx, { platform_id: row.platform_id, account_id: row.id, method, message_to_sign: messageToSign, token_sha256: null, expires_at: expiresAt, created_at: now });
    return { method, messageToSign, expiresAt: expiresAt.toISOString() };
  }
  const token = randomBytes(32).toString('base64url');
  await putChallenge(trx, { platform_id: row.platform_id, account_id: row.id, method, message_to_sign: null, token_sha256: sha256Hex(token), expires_at: expiresAt, created_at: now });
  return { method, verificationLink: `${context.livenessBaseUrl}${LIVENESS_PATH}/${token}`, expiresAt: expiresAt.toISOString() };
}

/** The end of an attempt: verified (ACTIVE) or failed (UNVERIFIED), committed either way. */
export type Attempt = { outcome: 'VERIFIED'; account: ExternalAccount } | { outcome: 'FAILED'; reason: 'CHALLENGE_EXPIRED' | 'SIGNATURE_INVALID' | 'CONSENT_DECLINED'; account: ExternalAccount };

async function finish(trx: Tx, clock: Clock, row: ExternalAccountRow, proven: boolean, reason: Exclude<Attempt, { outcome: 'VERIFIED' }>['reason']): Promise<Attempt> {
  await deleteChallenge(trx, row.platform_id, row.id);
  const moved = await moveStatus(trx, clock, row, proven ? 'ACTIVE' : 'UNVERIFIED');
  const account = toExternalAccount(moved);
  return proven ? { outcome: 'VERIFIED', account } : { outcome: 'FAILED', reason, account };
}

/**
 * Completes a WALLET_SIGNATURE challenge synchronously. 409 without one outstanding; a
 * signature that cannot belong to the network is 400 and changes nothing; an expired challenge
 * or a signature that does not verify is a failed attempt (UNVERIFIED), a valid one ACTIVE.
 */
export async function verifySignature(trx: Tx, clock: Clock, platformId: string, owner: Owner, id: string, body: OwnershipVerifyRequest): Promise<Attempt> {
  const row = await accountToProve(trx, platformId, owner, id);
  const challenge = await findChallenge(trx, platformId, row.id);
  if (!challenge || challenge.method !== 'WALLET_SIGNATURE') {
    throw conflict('No WALLET_SIGNATURE challenge is outstanding for this account; start one with …/challenge.', 'NO_OUTSTANDING_CHALLENGE');
  }
  if (challenge.expires_at.getTime() <= clock.now().getTime()) return finish(trx, clock, row, false, 'CHALLENGE_EXPIRED');
  const network = (variantOf(row) as WalletVariant).network;
  const check = await checkOwnershipSignature(network, String(row.account_info.address), challenge.message_to_sign!, body.signature, body.signatureScheme ?? 'bip137');
  if (check === 'malformed') throw invalidInput([{ field: 'signature', message: `must be a ${network} signature: ${signatureFormat(network)}` }]);
  return finish(trx, clock, row, check === 'valid', 'SIGNATURE_INVALID');
}

/** What the hosted page shows before the owner decides. */
export interface LivenessSession {
  accountId: string;
  network: string;
  address: string;
  expiresAt: string;
  expired: boolean;
}

async function livenessChallenge(trx: Tx, token: string, lock: boolean) {
  const tokenSha256 = sha256Hex(token);
  const challenge = await findChallengeByToken(trx, tokenSha256);
  if (!challenge || challenge.method !== 'LIVENESS') return undefined;
  const row = await findAccount(trx, challenge.platform_id, challenge.account_id, { kind: 'any' }, { forUpdate: lock });
  // A link issued before its customer was deleted proves nothing any more (accountToProve): no such link.
  if (!row || (await accountOwnerDeleted(trx, row.platform_id, { customerUuid: row.customer_id }))) return undefined;
  // The challenge was read before the account's lock was granted: a concurrent answer on the same
  // link, or a new challenge, may have used or replaced it since. Only one still outstanding counts.
  if (lock && !(await findChallengeByToken(trx, tokenSha256))) return undefined;
  return { challenge, row };
}

export async function describeLiveness(trx: Tx, clock: Clock, token: string): Promise<LivenessSession | undefined> {
  const found = await livenessChallenge(trx, token, false);
  if (!found) return undefined;
  return {
    accountId: formatId('ExternalAccount', found.row.id),
    network: (variantOf(found.row) as WalletVariant).network,
    address: String(found.row.account_info.address),
    expiresAt: found.challenge.expires_at.toISOString(),
    expired: found.challenge.expires_at.getTime() <= clock.now().getTime(),
  };
}

/**
 * The owner's answer on the hosted page (sandbox: consent completes the check, refusal fails
 * it). The link works once; after expiry an answer is a failed attempt. undefined: no such link.
 */
export async function completeLiveness(trx: Tx, clock: Clock, token: string, consent: boolean): Promise<Attempt | undefined> {
  const found = await livenessChallenge(trx, token, true);
  if (!found) return undefined;
  if (found.challenge.expires_at.getTime() <= clock.now().getTime()) return finish(trx, clock, found.row, false, 'CHALLENGE_EXPIRED');
  return finish(trx, clock, found.row, consent, 'CONSENT_DECLINED');
}
