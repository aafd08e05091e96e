import type { Clock } from '../../platform/clock.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { inSavepoint, withTx } from '../../platform/db/tx.js';
import { AppError, statusOf, type ErrorCode } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob, type JobWorker } from '../../platform/jobs/index.js';
import { canonicalJson, sha256Hex } from '../../platform/crypto/encoding.js';
import { parseStamp, StampMalformedError, verifyStamp, type WalletStamp } from '../../platform/crypto/stamp.js';
import {
  claimSignedRequest,
  completeSignedRequest,
  releaseSignedRequest,
  setSignedRequestContext,
  findSignedRequest,
  insertSignedRequest,
  lockCredentialsForWrite,
  sessionsWithKey,
  type SessionRow,
  type SignedRequestRow,
  type SignerRule,
  type StoredOutcome,
} from './repo.js';
import type { SignedRequestChallenge } from './schemas.js';

/** Spec §4.3: a signed retry must arrive within this long of the 202. */
export const SIGNED_RETRY_WINDOW_MS = 5 * 60_000;
/** Sandbox platforms may ask for a settling delay of up to this long. */
export const MAX_SANDBOX_SETTLE_SECONDS = 3600;
export const SETTLE_JOB = 'wallet.signed-request.settle';

export const PROCESSING: StoredOutcome = { statusCode: 200, body: { status: 'PROCESSING' } };

/**
 * What an operation answers when it leaves work for after its transaction: `outcome` is stored
 * as usual; `afterCommit` runs once that transaction has committed, never inside it (work that
 * waits on another system: sending a new credential's one-time code), and may answer an outcome
 * that replaces the stored one (stored, and answered, instead).
 */
export interface OutcomeWithFollowUp {
  outcome: StoredOutcome;
  afterCommit: () => Promise<StoredOutcome | undefined>;
}

/** A claimed request as its operation left it, with the work it left for after the commit. */
interface Executed {
  row: SignedRequestRow;
  afterCommit?: OutcomeWithFollowUp['afterCommit'];
}

/** One kind of operation that the signed-retry pattern authorises. */
export interface SignedOperation {
  /**
   * Does the work once the wallet provider settles, in the settling transaction. An AppError
   * becomes the stored outcome (its writes undone); anything else is retried by the reconciler.
   */
  execute(trx: Tx, request: SignedRequestRow): Promise<StoredOutcome | OutcomeWithFollowUp>;
  /**
   * For outcomes that must never be stored (wallet export): the stored outcome keeps only the
   * status, and each identical retry builds the body again from this.
   */
  reveal?(db: DbOrTx, request: SignedRequestRow): Promise<unknown>;
  /**
   * For an operation whose target has a lifetime of its own that ends no later than the
   * challenge's window (a quote's: at most 5 minutes, priced before the challenge is issued):
   * whether that target has expired. A retry after the window is then still redeemed (the stamp
   * checked against an active session, the request claimed once) so the operation can record the
   * expiry; any other retry after the window, and every one of an operation without this hook, is
   * 401 REQUEST_ID_EXPIRED.
   */
  targetExpired?(db: DbOrTx, request: SignedRequestRow): Promise<boolean>;
  /**
   * A refusal (an AppError from `execute`, whose savepoint is undone, so nothing changed) does not
   * use the challenge up: the request goes back to PENDING, the retry that ran it answers the
   * refusal, and an identical re-send or a fresh stamp of an allowed key may redeem it again. Only
   * a completed outcome (success, or a result `execute` returns) is stored and final. Off by
   * default: the refusal is the stored outcome, as spec §4.3 has it ("a terminal response").
   */
  retryableRefusals?: boolean;
  /**
   * Checks a request body beyond its schema (a client public key is a point on the curve), as
   * the first call does: the retry runs it before anything else, so a body the first call would
   * refuse is refused the same way (400), not as a body mismatch.
   */
  checkBody?(body: unknown): void;
}

export interface IssueSpec {
  platformId: string;
  accountId: string;
  operation: string;
  /** The resource the operation acts on, as named in the path ('' when none). */
  targetId: string;
  body: unknown;
  signer: SignerRule;
  context?: Record<string, unknown>;
  /**
   * The existing credentials (ids) the operation writes: a retry locks them, and the credential
   * sets of their accounts and of the signer's, before it checks the signer (README, Lock order).
   */
  writesCredentials?: string[];
  /**
   * What the end user authorises, as an activity `{type, parameters}` (the payload adds the
   * account, the request id, the body's digest and the time), or a payload of its own making
   * that binds the same (the OTP verification token).
   */
  payload: { type: string; parameters: Record<string, unknown> } | ((issue: { requestId: string; issuedAt: Date; expiresAt: Date }) => string);
}

export interface RetrySpec {
  platformId: string;
  environment: 'sandbox' | 'production';
  operation: string;
  targetId: string;
  body: unknown;
  stamp: string;
  requestId: string;
  /** Sandbox only: how long the wallet provider takes to settle this operation. */
  settleDelaySeconds?: number;
}

function unauthorized(code: ErrorCode, message: string, reason?: string): AppError {
  return new AppError(code, message, reason ? { details: { reason } } : {});
}

/** The binding of a challenge to its body: survives whitespace and key order, not a changed value. */
export function bodyHash(body: unknown): string {
  return sha256Hex(canonicalJson(body));
}

/** Whether one of the active sessions signing with the stamp's key is one the rule allows. */
function sessionAllowed(rule: Extract<SignerRule, { kind: 'session' }>, sessions: SessionRow[]): boolean {
  return sessions.some((s) => s.credential_id !== rule.excludeCredentialId && (!rule.sessionId || s.id === rule.sessionId));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The signed-retry pattern (spec §4.3) for every operation that uses it: the first call stores
 * a challenge bound to the operation, the account and the body; the retry proves a wallet key
 * signed it, claims it exactly once, and runs the operation as a durable unit that settles now
 * or later (PROCESSING), by an identical re-send or by the reconciler job.
 */
export class SignedRequests {
  private readonly operations = new Map<string, SignedOperation>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    jobs: JobWorker,
    private readonly settleWaitMs: number,
  ) {
    jobs.register(SETTLE_JOB, async (job) => {
      const { platformId, id } = job.payload as { platformId: string; id: string };
      const settled = await withTx(this.db, (trx) => this.settle(trx, platformId, id));
      if (settled) await this.followUp(settled);
    });
  }

  register(name: string, operation: SignedOperation): void {
    this.operations.set(name, operation);
  }

  async issue(trx: DbOrTx, spec: IssueSpec): Promise<SignedRequestChallenge> {
    const now = this.clock.now();
    const id = uuidv7(now.getTime());
    const requestId = formatId('Request', id);
    const expiresAt = new Date(now.getTime() + SIGNED_RETRY_WINDOW_MS);
    const digest = bodyHash(spec.body);
    const payloadToSign =
      typeof spec.payload === 'function'
        ? spec.payload({ requestId, issuedAt: now, expiresAt })
        : JSON.stringify({
            organizationId: formatId('InternalAccount', spec.accountId),
            parameters: spec.payload.parameters,
            requestId,
            bodySha256: digest,
            timestampMs: String(now.getTime()),
            type: spec.payload.type,
          });
    await insertSignedRequest(trx, {
      id,
      platform_id: spec.platformId,
      account_id: spec.accountId,
      operation: spec.operation,
      target_id: spec.targetId,
      body_hash: digest,
      payload_to_sign: payloadToSign,
      signer: spec.signer,
      // The bound body travels with the operation: it is what the signature authorised.
      context: { ...spec.context, body: spec.body, ...(spec.writesCredentials?.length ? { writesCredentials: spec.writesCredentials } : {}) },
      status: 'PENDING',
      stamp: null,
      settle_at: null,
      outcome: null,
      expires_at: expiresAt,
      created_at: now,
      updated_at: now,
    });
    return { payloadToSign, requestId, expiresAt: expiresAt.toISOString() };
  }

  /** The signed retry: the operation's outcome, or PROCESSING while the provider settles. */
  async retry(spec: RetrySpec): Promise<StoredOutcome> {
    this.operations.get(spec.operation)?.checkBody?.(spec.body);
    let stamp: WalletStamp;
    try {
      stamp = parseStamp(spec.stamp);
    } catch (error) {
      if (error instanceof StampMalformedError) {
        throw unauthorized('WALLET_SIGNATURE_MALFORMED', `The wallet signature (Service-Wallet-Signature or Grid-Wallet-Signature) cannot be parsed: ${error.message}`);
      }
      throw error;
    }
    const hash = bodyHash(spec.body);
    return this.redeem({
      ...spec,
      proof: spec.stamp,
      sameRequest: (row) => row.body_hash === hash,
      authorise: async (trx, row, now) => {
        if (row.body_hash !== hash) {
          throw unauthorized('WALLET_SIGNATURE_BODY_MISMATCH', 'The retry body differs from the body the challenge was issued for.');
        }
        await this.checkSigner(trx, row, stamp, now);
        return {};
      },
    });
  }

  /**
   * Redeems a challenge with a proof other than a stamp (a passkey assertion): `authorise`
   * checks it and may add facts the operation needs to its context; `proof` identifies the
   * exact request, so only an identical re-send sees the outcome afterwards. `authorise` runs in
   * the claiming transaction, so what it checked cannot change before the operation is claimed.
   */
  async redeem(spec: {
    platformId: string;
    environment: 'sandbox' | 'production';
    operation: string;
    targetId: string;
    requestId: string;
    proof: string;
    settleDelaySeconds?: number;
    sameRequest?: (row: SignedRequestRow) => boolean;
    authorise: (trx: Tx, row: SignedRequestRow, now: Date) => Promise<Record<string, unknown>>;
  }): Promise<StoredOutcome> {
    const uuid = parseId('Request', spec.requestId);
    const unknownRequest = unauthorized('UNAUTHORIZED', 'Request-Id does not name a challenge issued for this operation.', 'REQUEST_ID_UNKNOWN');
    if (!uuid) throw unknownRequest;
    const row = await findSignedRequest(this.db, spec.platformId, uuid);
    if (!row || row.operation !== spec.operation || row.target_id !== spec.targetId) throw unknownRequest;
    const same = (current: SignedRequestRow) => current.stamp === spec.proof && (spec.sameRequest?.(current) ?? true);
    if (row.status !== 'PENDING') return this.resend(row, same(row));

    const now = this.clock.now();
    if (row.expires_at <= now && !(await this.operations.get(row.operation)?.targetExpired?.(this.db, row))) {
      throw unauthorized('UNAUTHORIZED', 'The challenge for this Request-Id has expired; start the operation again.', 'REQUEST_ID_EXPIRED');
    }
    const delayMs = spec.environment === 'sandbox' ? (spec.settleDelaySeconds ?? 0) * 1000 : 0;
    const settleAt = new Date(now.getTime() + delayMs);
    const claimed = await withTx(this.db, async (trx) => {
      // Claim first: a concurrent retry then waits here and finds the request taken, instead of
      // holding the locks `authorise` takes. A failed authorisation rolls the claim back.
      let current = await claimSignedRequest(trx, row.id, spec.proof, settleAt, now);
      if (!current) return undefined;
      await this.lockWrites(trx, current);
      const facts = await spec.authorise(trx, current, now);
      if (Object.keys(facts).length > 0) current = await setSignedRequestContext(trx, row.id, { ...current.context, ...facts });
      if (delayMs === 0) return this.execute(trx, current);
      await enqueueJob(trx, this.clock, { kind: SETTLE_JOB, platformId: spec.platformId, payload: { platformId: spec.platformId, id: row.id }, runAt: settleAt });
      return { row: current };
    });
    if (claimed) return this.outcomeOf(await this.followUp(claimed));
    const taken = (await findSignedRequest(this.db, spec.platformId, row.id))!;
    // Given back meanwhile by a refusal (`retryableRefusals`, settled late): it may be redeemed again.
    if (taken.status === 'PENDING') return this.redeem(spec);
    return this.resend(taken, same(taken));
  }

  /**
   * The locks an operation that writes credentials takes right after its request's row, before
   * any other (README, Lock order): the credential sets of the accounts whose credentials it
   * writes and of the signer's account, then those credentials FOR UPDATE. Taken after the
   * signer check instead, they came after its share locks: two crossed revocations each held the
   * credential the other revokes, and a contact change upgraded its signer's share lock while
   * another operation of that session, holding the same share lock, waited for the customer row.
   */
  private async lockWrites(trx: Tx, row: SignedRequestRow): Promise<void> {
    const ids = row.context.writesCredentials as string[] | undefined;
    if (ids?.length) await lockCredentialsForWrite(trx, row.account_id, ids);
  }

  /** The stamp's key must be allowed by the challenge's rule; the sessions it relies on are share-locked until the claim commits. */
  private async checkSigner(trx: Tx, row: SignedRequestRow, stamp: WalletStamp, now: Date): Promise<void> {
    const invalid = unauthorized('WALLET_SIGNATURE_INVALID', 'The signature is not valid for a key allowed to authorise this operation.');
    const rule = row.signer;
    if (rule.kind === 'passkey') throw invalid;
    if (rule.kind === 'key') {
      if (stamp.publicKey !== rule.publicKey) throw invalid;
    } else {
      if (!sessionAllowed(rule, await sessionsWithKey(trx, row.account_id, stamp.publicKey, now))) throw invalid;
    }
    if (!verifyStamp(stamp, row.payload_to_sign)) throw invalid;
  }

  /** A retry of a claimed request: only the identical request may see its outcome. */
  private async resend(row: SignedRequestRow, identical: boolean): Promise<StoredOutcome> {
    if (!identical) {
      throw unauthorized('UNAUTHORIZED', 'This Request-Id was already used; request a new challenge.', 'REQUEST_ID_USED');
    }
    return this.outcomeOf(row);
  }

  /** The settled outcome; else settles it if due, waiting up to `settleWaitMs` for that. */
  private async outcomeOf(row: SignedRequestRow): Promise<StoredOutcome> {
    const deadline = Date.now() + this.settleWaitMs;
    let current = row;
    while (current.status === 'PROCESSING') {
      const { platform_id: platformId, id } = current;
      if (current.settle_at! <= this.clock.now()) {
        current = await this.followUp((await withTx(this.db, (trx) => this.settle(trx, platformId, id)))!);
      } else if (Date.now() < deadline) {
        await sleep(Math.min(25, deadline - Date.now()));
        current = (await findSignedRequest(this.db, platformId, id))!;
      } else {
        return PROCESSING;
      }
    }
    // PENDING again: the operation refused and gave the request back (`retryableRefusals`). The
    // settling call holds the refusal (`execute`); one that only waited answers PROCESSING, and
    // its identical re-send redeems the request again.
    const outcome = current.outcome;
    if (!outcome) return PROCESSING;
    const operation = this.operations.get(current.operation)!;
    if (outcome.error || !operation.reveal) return outcome;
    // What is never stored is revealed only inside the challenge's window (spec §4.3, export).
    if (current.expires_at <= this.clock.now()) {
      throw unauthorized('UNAUTHORIZED', 'The challenge for this Request-Id has expired; start the operation again.', 'REQUEST_ID_EXPIRED');
    }
    return { statusCode: outcome.statusCode, body: await operation.reveal(this.db, current) };
  }

  /**
   * Settles a PROCESSING request under a row lock, unless another process did; answers the row as
   * it now is. A deferred request (sandbox settle delay) was authorised when it was claimed, but
   * takes effect only now: the session that signed it must still be active, and its credential
   * not revoked, or it ends as a signature by an ended session does (`signerStillActive`).
   */
  private async settle(trx: Tx, platformId: string, id: string): Promise<Executed | undefined> {
    const row = await findSignedRequest(trx, platformId, id, true);
    if (row?.status !== 'PROCESSING') return row && { row };
    await this.lockWrites(trx, row);
    return this.execute(trx, row, () => this.signerStillActive(trx, row));
  }

  /**
   * At a deferred settle: the signer rule of the challenge, checked again against the stamp the
   * claim stored, at the settling time. Refused: 401 WALLET_SIGNATURE_INVALID, the answer a retry
   * signed by that session gets once it is revoked or expired. Only sessions are re-checked: a
   * 'key' signer (OTP verify) and a passkey assertion prove no session, and their operations load
   * their credential, active only, when they run. The sessions are read without a lock: an
   * operation that writes credentials holds its signer's account's credential set already
   * (`lockWrites`), so no revocation of the signer commits before it does; any other is as a
   * revocation that commits while the operation runs (README).
   */
  private async signerStillActive(trx: Tx, row: SignedRequestRow): Promise<void> {
    const rule = row.signer;
    if (rule.kind !== 'session' || row.stamp === null) return;
    if (!sessionAllowed(rule, await sessionsWithKey(trx, row.account_id, parseStamp(row.stamp).publicKey, this.clock.now(), false))) {
      throw unauthorized('WALLET_SIGNATURE_INVALID', 'The session that signed this operation was revoked or expired, or its credential revoked, before the operation settled.');
    }
  }

  /**
   * Runs a claimed request's operation once, in a savepoint, and stores how it ended; an AppError
   * from `precondition` (run first) is stored the same way, and the operation does not run. A refusal of
   * an operation with `retryableRefusals` instead gives the request back (PENDING, nothing stored:
   * a PENDING row has no outcome) and answers the row with the refusal as its outcome, in memory only.
   */
  private async execute(trx: Tx, row: SignedRequestRow, precondition?: () => Promise<void>): Promise<Executed> {
    const operation = this.operations.get(row.operation);
    if (!operation) throw new Error(`no signed operation named ${row.operation}`);
    let outcome: StoredOutcome;
    let afterCommit: Executed['afterCommit'];
    try {
      // A refused precondition ends the request as a refusal of the operation would.
      await precondition?.();
      const executed = await inSavepoint(trx, 'signed_operation', () => operation.execute(trx, row));
      if ('afterCommit' in executed) ({ outcome, afterCommit } = executed);
      else outcome = executed;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      outcome = {
        statusCode: statusOf(error.code),
        error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
      };
      if (operation.retryableRefusals) return { row: { ...(await releaseSignedRequest(trx, row.id, this.clock.now())), outcome } };
    }
    const stored = operation.reveal && !outcome.error ? { statusCode: outcome.statusCode } : outcome;
    return { row: await completeSignedRequest(trx, row.id, stored, this.clock.now()), ...(afterCommit ? { afterCommit } : {}) };
  }

  /**
   * Runs the work an operation left for after its transaction (`OutcomeWithFollowUp`), which has
   * committed by now, and stores the outcome it answers in place of the stored one.
   */
  private async followUp({ row, afterCommit }: Executed): Promise<SignedRequestRow> {
    const replaced = await afterCommit?.();
    return replaced ? completeSignedRequest(this.db, row.id, replaced, this.clock.now()) : row;
  }
}

/** Turns a stored outcome back into what the HTTP layer answers: a status and body, or the error. */
export function replayOutcome(outcome: StoredOutcome): { statusCode: number; body?: unknown } {
  if (outcome.error) {
    throw new AppError(outcome.error.code as ErrorCode, outcome.error.message, outcome.error.details ? { details: outcome.error.details } : {});
  }
  return { statusCode: outcome.statusCode, ...(outcome.body !== undefined ? { body: outcome.body } : {}) };
}
