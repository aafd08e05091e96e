import { UmaError, type NonceValidator } from '@uma-sdk/core';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import { AppError, ERROR_CODES, type ErrorCode } from '../../platform/errors.js';
import { insertNonce, nonceSeen } from './repo.js';

const MAX_NONCE_LENGTH = 128;

/**
 * The SDK's nonce hook, kept in the database and judged by the Clock. The SDK asks before it
 * checks the signature; the nonce is only recorded once the signature holds (`commit`), so a
 * forged message cannot burn a nonce its real sender has yet to use. The primary key makes the
 * record the real check: of two copies arriving at once on two processes, one commits.
 */
export class NonceCheck implements NonceValidator {
  private pending: { nonce: string; timestampSeconds: number } | undefined;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly windowSeconds: number,
    private readonly vaspDomain: string,
    /** A pay request: a nonce Corridor signed into an lnurlp message for that domain is refused too (markSignedInLnurlp). */
    private readonly payRequest = false,
  ) {}

  async checkAndSaveNonce(nonce: string, timestampSeconds: number): Promise<boolean> {
    // '|' separates the fields of every string UMA signs: a nonce holding one would let a signed
    // `address|nonce|timestamp` read as a post-transaction callback's `nonce|timestamp` (nonce
    // `address|nonce`), or a pay-request answer's four fields as three.
    if (typeof nonce !== 'string' || nonce.length === 0 || nonce.length > MAX_NONCE_LENGTH || nonce.includes('|')) {
      throw new AppError('INVALID_NONCE', `The message's nonce must be 1 to ${MAX_NONCE_LENGTH} characters, none of them '|'.`);
    }
    checkTimestamp(timestampSeconds, this.clock, this.windowSeconds);
    if (await nonceSeen(this.db, this.vaspDomain, nonce)) return false;
    if (this.payRequest && (await nonceSeen(this.db, this.vaspDomain, SIGNED_IN_LNURLP + nonce))) return false;
    this.pending = { nonce, timestampSeconds };
    return true;
  }

  async commit(): Promise<void> {
    if (!this.pending) throw new Error('commit before the nonce was checked');
    const expiresAt = new Date((this.pending.timestampSeconds + this.windowSeconds) * 1000);
    if (!(await insertNonce(this.db, this.vaspDomain, this.pending.nonce, expiresAt))) {
      throw new AppError('INVALID_NONCE', 'This nonce was already used: the message is a replay.');
    }
  }
}

/**
 * UMA signs an lnurlp request and an lnurlp response over `address|nonce|timestamp`, the very
 * string a pay request from that address is signed over. So every nonce Corridor signs into an
 * lnurlp message is recorded under the address's domain, marked with this prefix, and a pay
 * request carrying it is a replay: otherwise an lnurlp answer Corridor gives any VASP (or a lookup
 * it sends to a domain the asker holds, serving Corridor's published chain) would be a signed pay
 * request from that address. Only pay requests consult the mark, so the lnurlp exchange itself,
 * between two platforms of one deployment, is judged as before.
 */
const SIGNED_IN_LNURLP = 'signed-in-lnurlp:';

/** Records that Corridor signed `nonce` into an lnurlp message naming an address at `vaspDomain`; kept as a received nonce is (`timestamp + window`). */
export async function markSignedInLnurlp(db: Db, vaspDomain: string, nonce: string, timestampSeconds: number, windowSeconds: number): Promise<void> {
  await insertNonce(db, vaspDomain, SIGNED_IN_LNURLP + nonce, new Date((timestampSeconds + windowSeconds) * 1000));
}

export function checkTimestamp(timestampSeconds: number, clock: Clock, windowSeconds: number): void {
  const nowSeconds = clock.now().getTime() / 1000;
  if (!Number.isFinite(timestampSeconds) || Math.abs(nowSeconds - timestampSeconds) > windowSeconds) {
    throw new AppError('INVALID_TIMESTAMP', `The message's timestamp is more than ${windowSeconds} s from now.`, {
      details: { timestamp: Number.isFinite(timestampSeconds) ? timestampSeconds : null, windowSeconds },
    });
  }
}

function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/**
 * An error thrown inside the SDK, as Corridor's error: an SDK code Corridor's registry knows
 * keeps its name (they are the same protocol's codes); anything else gets `fallback`.
 */
export function fromSdkError(error: unknown, fallback: ErrorCode, message?: string): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof UmaError && isErrorCode(error.code) && ERROR_CODES[error.code] < 500) return new AppError(error.code, message ?? error.message);
  return new AppError(fallback, message ?? (error instanceof Error ? error.message : String(error)));
}

/**
 * Runs one of the SDK's signature checks with its nonce hook: a false answer, or a signature
 * that does not even parse, is INVALID_SIGNATURE; the nonce is recorded only after.
 */
export async function verifySigned(nonces: NonceCheck, check: (nonces: NonceValidator) => Promise<boolean>, what: string): Promise<void> {
  let valid: boolean;
  try {
    valid = await check(nonces);
  } catch (error) {
    throw fromSdkError(error, 'INVALID_SIGNATURE', error instanceof UmaError || error instanceof AppError ? undefined : `The ${what} signature cannot be read.`);
  }
  if (!valid) throw new AppError('INVALID_SIGNATURE', `The ${what} signature does not verify with the sender's signing key.`);
  await nonces.commit();
}
