import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import { InvalidKeyError, parseP256PublicKey } from '../../platform/crypto/p256.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { parseId } from '../../platform/ids.js';
import type { JobWorker } from '../../platform/jobs/index.js';
import type { MessageSender } from '../../platform/messages.js';
import type { PlatformConfigCache } from '../config/index.js';
import type { WalletEnclave } from './enclave/enclave.js';
import { oidcRejected, oidcTokenDigest, type OidcVerifier } from './oidc.js';
import { findActiveSession, findCredential, findWalletAccount, useOidcToken, type CredentialRow, type CredentialType, type SessionRow, type WalletAccount } from './repo.js';
import type { SignedRequests } from './signed-retry.js';

// What every flow of wallet-auth shares (credentials.ts, logins.ts, sessions.ts, wallets.ts):
// its dependencies, the names of its signed operations and the loaders of what a path names.

/** The operations of this module that use the signed-retry pattern. */
export const OPERATIONS = {
  addCredential: 'credential.add',
  revokeCredential: 'credential.revoke',
  verifyOtp: 'otp.verify',
  revokeSession: 'session.revoke',
  refreshSession: 'session.refresh',
  exportWallet: 'wallet.export',
  passkeySession: 'passkey.session',
} as const;

export interface WalletAuthDeps {
  db: Db;
  clock: Clock;
  jobs: JobWorker;
  enclave: WalletEnclave;
  messages: MessageSender;
  signed: SignedRequests;
  oidc: OidcVerifier;
  /** Platform configs, cached per process and evicted on change: read on every login. */
  configs: PlatformConfigCache;
  sessionSeconds: number;
  /** Where failures that do not fail the request are logged (a new credential's first code that could not be sent). */
  logger?: Logger;
}

function notFound(what: string, id: string): AppError {
  return new AppError('REFERENCE_NOT_FOUND', `${what} ${id} was not found.`);
}

export async function loadWalletAccount(db: DbOrTx, platformId: string, accountId: string): Promise<WalletAccount> {
  const uuid = parseId('InternalAccount', accountId);
  const account = uuid && (await findWalletAccount(db, platformId, uuid));
  if (!account) throw notFound('Embedded wallet account', accountId);
  return account;
}

export async function loadCredential(db: DbOrTx, platformId: string, id: string, lock = false): Promise<CredentialRow> {
  const uuid = parseId('AuthMethod', id);
  const row = uuid && (await findCredential(db, platformId, uuid, lock ? 'update' : undefined));
  if (!row) throw notFound('Credential', id);
  return row;
}

export async function loadActiveSession(db: DbOrTx, clock: Clock, platformId: string, id: string): Promise<SessionRow> {
  const uuid = parseId('Session', id);
  const row = uuid && (await findActiveSession(db, platformId, uuid, clock.now()));
  if (!row) throw notFound('Active session', id);
  return row;
}

/**
 * An active session and the credential that issued it (`shareCredential`: its row FOR SHARE, so
 * the credential's revocation, which takes it FOR UPDATE, waits until the caller's transaction
 * ends). Revoking a credential revokes its sessions in the same transaction, so one committed
 * between the two reads answers as the session now is: not found.
 *
 * FOR SHARE, not FOR UPDATE: the signer check of a signed retry has already share-locked this
 * row (`sessionsWithKey` joins the credential), so two refreshes of one credential's sessions
 * each held the share lock and each then waited for the other to drop it to take FOR UPDATE: a
 * deadlock on every such pair. A share lock is taken in the same order as the signer check's and
 * is all a refresh needs: it keeps the credential from being revoked until the session is made.
 */
export async function loadActiveSessionOf(
  db: DbOrTx,
  clock: Clock,
  platformId: string,
  id: string,
  shareCredential = false,
): Promise<{ session: SessionRow; credential: CredentialRow }> {
  const session = await loadActiveSession(db, clock, platformId, id);
  const credential = await findCredential(db, platformId, session.credential_id, shareCredential ? 'share' : undefined);
  if (!credential) throw notFound('Active session', id);
  return { session, credential };
}

/** The verify body's `type` must be the credential's. */
export function checkCredentialType(credential: CredentialRow, type: CredentialType): void {
  if (type !== credential.type) {
    throw new AppError('INVALID_INPUT', `This credential is ${credential.type}.`, {
      details: { errors: [{ field: 'type', constraint: { enum: [credential.type] }, message: `must be ${credential.type}, the type of this credential` }] },
    });
  }
}

/**
 * A client's P-256 public key (SEC1 hex), parsed: the schema's pattern admits any hex of the
 * right length, so a point off the curve (or an x with no square root) is refused here, as the
 * request arrives, with 400 naming `field`, before anything is issued or stored for it.
 */
export function checkClientPublicKey(value: string, field: string): ReturnType<typeof parseP256PublicKey> {
  try {
    return parseP256PublicKey(value);
  } catch (error) {
    if (!(error instanceof InvalidKeyError)) throw error;
    throw new AppError('INVALID_INPUT', `${field} is not a P-256 public key: ${error.message}.`, {
      details: { errors: [{ field, message: 'is not a point on P-256' }] },
    });
  }
}

/** Refuses an OIDC token seen before (each call needs a fresh one). */
export async function spendOidcToken(trx: Tx, clock: Clock, platformId: string, token: string, exp: number): Promise<void> {
  if (!(await useOidcToken(trx, platformId, oidcTokenDigest(token), new Date(exp * 1000), clock.now()))) {
    throw oidcRejected('replay', 'this token was already used; get a fresh one for every call');
  }
}
