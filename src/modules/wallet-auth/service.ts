import { randomInt } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import { parseP256PublicKey } from '../../platform/crypto/p256.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob, type JobWorker } from '../../platform/jobs.js';
import type { MessageSender } from '../../platform/messages.js';
import { getConfigRow } from '../config/service.js';
import { BundleError } from './enclave/bundles.js';
import type { OpenedOtp, WalletEnclave } from './enclave/enclave.js';
import {
  activeCredentials,
  activeSessions,
  countOtpChallengesSince,
  emailCredentialsOfCustomer,
  findActiveSession,
  findCredential,
  findWallet,
  findWalletAccount,
  hasVerifiedCredential,
  insertCredential,
  insertOtpChallenge,
  insertSession,
  insertWallet,
  latestOtpChallenge,
  revokeSession,
  revokeSessionsOfCredential,
  updateCredential,
  updateOtpChallenge,
  type CredentialRow,
  type CredentialType,
  type OtpChallengeRow,
  type SessionRow,
  type SignedRequestRow,
  type StoredOutcome,
  type WalletAccount,
} from './repo.js';
import type {
  AuthMethod,
  AuthMethodResponse,
  AuthSession,
  CredentialCreateRequest,
  CredentialVerifyRequest,
  SessionRefreshRequest,
  SignedRequestChallenge,
  WalletExportRequest,
} from './schemas.js';
import { bodyHash, PROCESSING, type SignedRequests } from './signed-retry.js';

export type Environment = 'sandbox' | 'production';

/** Sandbox OTPs are always this code and are never delivered (spec §4.4). */
export const SANDBOX_OTP = '000000';
/** Wrong codes a credential may send before verify and challenge answer 429 for `OTP_LOCK_MS`. */
export const OTP_MAX_FAILURES = 5;
export const OTP_LOCK_MS = 15 * 60_000;
/** At most this many OTPs per credential per window; more answer 429. */
export const OTP_CHALLENGES_PER_WINDOW = 10;
export const OTP_CHALLENGE_WINDOW_MS = 15 * 60_000;
const DEFAULT_OTP_LENGTH = 6;
const DEFAULT_OTP_SECONDS = 300;
const WALLET_SECRET_JOB = 'wallet.create-secret';

/** The operations of this module that use the signed-retry pattern. */
export const OPERATIONS = {
  addCredential: 'credential.add',
  revokeCredential: 'credential.revoke',
  verifyOtp: 'otp.verify',
  revokeSession: 'session.revoke',
  refreshSession: 'session.refresh',
  exportWallet: 'wallet.export',
} as const;

const accountRef = (uuid: string) => formatId('InternalAccount', uuid);

function notFound(what: string, id: string): AppError {
  return new AppError('REFERENCE_NOT_FOUND', `${what} ${id} was not found.`);
}

function rateLimited(until: Date, now: Date, message: string): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new AppError('RATE_LIMITED', message, { headers: { 'retry-after': String(seconds) }, details: { retryAfterSeconds: seconds } });
}

function otpRejected(reason: string, message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError('UNAUTHORIZED', message, { details: { reason, ...details } });
}

export function toAuthMethod(row: CredentialRow): AuthMethod {
  return {
    id: formatId('AuthMethod', row.id),
    accountId: accountRef(row.account_id),
    type: row.type,
    ...(row.webauthn_id ? { credentialId: row.webauthn_id } : {}),
    nickname: row.nickname,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function toSession(session: SessionRow, credential: Pick<CredentialRow, 'type' | 'nickname' | 'webauthn_id'>, extra: { encryptedSessionSigningKey?: string } = {}): AuthSession {
  return {
    id: formatId('Session', session.id),
    accountId: accountRef(session.account_id),
    type: credential.type,
    ...(credential.webauthn_id ? { credentialId: credential.webauthn_id } : {}),
    nickname: credential.nickname,
    createdAt: session.created_at.toISOString(),
    updatedAt: session.updated_at.toISOString(),
    expiresAt: session.expires_at.toISOString(),
    ...extra,
  };
}

function otpCode(length: number, alphanumeric: boolean): string {
  const alphabet = alphanumeric ? 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789' : '0123456789';
  let code = '';
  for (let i = 0; i < length; i++) code += alphabet[randomInt(alphabet.length)];
  return code;
}

/**
 * A new embedded wallet's first credential: one EMAIL_OTP tied to the owner's e-mail (spec
 * §2.4 rule 6), and a job that has the enclave generate the wallet secret.
 */
export async function initialiseWallet(trx: Tx, clock: Clock, platformId: string, accountId: string, email: string): Promise<void> {
  const now = clock.now();
  await insertCredential(trx, {
    id: uuidv7(now.getTime()),
    platform_id: platformId,
    account_id: accountId,
    type: 'EMAIL_OTP',
    nickname: email,
    created_at: now,
    updated_at: now,
  });
  await enqueueJob(trx, clock, { kind: WALLET_SECRET_JOB, platformId, payload: { accountId, platformId } });
}

/**
 * The wallet account whose EMAIL_OTP credential is tied to the customer's e-mail: changing
 * that e-mail needs a signature from one of its sessions. Undefined when none is.
 */
export async function accountTiedToEmail(db: DbOrTx, platformId: string, customerUuid: string): Promise<string | undefined> {
  return (await emailCredentialsOfCustomer(db, platformId, customerUuid))[0]?.account_id;
}

/** Moves the customer's EMAIL_OTP credentials to the new e-mail, in the transaction that changes it. */
export async function retieEmailCredentials(trx: Tx, clock: Clock, platformId: string, customerUuid: string, email: string): Promise<void> {
  const now = clock.now();
  for (const credential of await emailCredentialsOfCustomer(trx, platformId, customerUuid, true)) {
    await updateCredential(trx, credential.id, { nickname: email, updated_at: now });
  }
}

export interface WalletAuthDeps {
  db: Db;
  clock: Clock;
  jobs: JobWorker;
  enclave: WalletEnclave;
  messages: MessageSender;
  signed: SignedRequests;
  sessionSeconds: number;
}

type VerifyFirstLeg = { challenge: SignedRequestChallenge & { type: CredentialType } } | { error: AppError };

/**
 * Wallet credentials, OTPs and sessions (spec §2.4, §4.2–§4.5). Every mutation that needs the
 * end user's consent goes through `signed` (the signed-retry pattern); this class decides what
 * is allowed and what each operation does once it settles.
 */
export class WalletAuth {
  constructor(private readonly deps: WalletAuthDeps) {
    const { signed, jobs } = deps;
    signed.register(OPERATIONS.addCredential, { execute: (trx, row) => this.executeAddCredential(trx, row) });
    signed.register(OPERATIONS.revokeCredential, { execute: (trx, row) => this.executeRevokeCredential(trx, row) });
    signed.register(OPERATIONS.verifyOtp, { execute: (trx, row) => this.executeVerifyOtp(trx, row) });
    signed.register(OPERATIONS.revokeSession, { execute: (trx, row) => this.executeRevokeSession(trx, row) });
    signed.register(OPERATIONS.refreshSession, { execute: (trx, row) => this.executeRefreshSession(trx, row) });
    signed.register(OPERATIONS.exportWallet, {
      execute: async (trx, row) => {
        await this.walletSecret(trx, row.platform_id, row.account_id);
        return { statusCode: 200 };
      },
      reveal: (db, row) => this.revealExport(db, row),
    });
    jobs.register(WALLET_SECRET_JOB, async (job) => {
      const { platformId, accountId } = job.payload as { platformId: string; accountId: string };
      await withTx(deps.db, (trx) => this.walletSecret(trx, platformId, accountId));
    });
  }

  private get clock(): Clock {
    return this.deps.clock;
  }

  /** The wallet's sealed secret, generated on first need (the provisioning job normally has). */
  private async walletSecret(trx: DbOrTx, platformId: string, accountId: string): Promise<string> {
    const existing = await findWallet(trx, accountId);
    if (existing) return existing.sealed_secret;
    await insertWallet(trx, {
      account_id: accountId,
      platform_id: platformId,
      sealed_secret: this.deps.enclave.createWalletSecret(accountRef(accountId)),
      created_at: this.clock.now(),
    });
    return (await findWallet(trx, accountId))!.sealed_secret;
  }

  async walletAccount(db: DbOrTx, platformId: string, accountId: string): Promise<WalletAccount> {
    const uuid = parseId('InternalAccount', accountId);
    const account = uuid && (await findWalletAccount(db, platformId, uuid));
    if (!account) throw notFound('Embedded wallet account', accountId);
    return account;
  }

  private async credential(db: DbOrTx, platformId: string, id: string, lock = false): Promise<CredentialRow> {
    const uuid = parseId('AuthMethod', id);
    const row = uuid && (await findCredential(db, platformId, uuid, lock));
    if (!row) throw notFound('Credential', id);
    return row;
  }

  private async session(db: DbOrTx, platformId: string, id: string): Promise<SessionRow> {
    const uuid = parseId('Session', id);
    const row = uuid && (await findActiveSession(db, platformId, uuid, this.clock.now()));
    if (!row) throw notFound('Active session', id);
    return row;
  }

  // Credentials

  async listCredentials(db: DbOrTx, platformId: string, accountId: string): Promise<{ data: AuthMethod[] }> {
    const uuid = parseId('InternalAccount', accountId)!;
    const account = await findWalletAccount(db, platformId, uuid);
    return { data: account ? (await activeCredentials(db, uuid)).map(toAuthMethod) : [] };
  }

  /** Rules 1–2 of spec §2.4 and the contact the credential is tied to. */
  private async checkNewCredential(trx: DbOrTx, account: WalletAccount, type: CredentialCreateRequest['type']): Promise<string> {
    const existing = await activeCredentials(trx, account.id);
    if (existing.some((c) => c.type === type)) {
      throw new AppError(
        type === 'EMAIL_OTP' ? 'EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS' : 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS',
        `The account already has an ${type} credential; revoke it before adding another.`,
      );
    }
    const contact = type === 'EMAIL_OTP' ? account.email : account.phone_number;
    if (!contact) {
      throw new AppError('MISSING_MANDATORY_USER_INFO', `The customer has no ${type === 'EMAIL_OTP' ? 'email' : 'phoneNumber'} to tie an ${type} credential to.`, {
        details: { field: type === 'EMAIL_OTP' ? 'email' : 'phoneNumber' },
      });
    }
    return contact;
  }

  private async addCredential(trx: Tx, platformId: string, environment: Environment, account: WalletAccount, type: CredentialCreateRequest['type']): Promise<AuthMethodResponse> {
    const contact = await this.checkNewCredential(trx, account, type);
    const now = this.clock.now();
    const row = await insertCredential(trx, {
      id: uuidv7(now.getTime()),
      platform_id: platformId,
      account_id: account.id,
      type,
      nickname: contact,
      created_at: now,
      updated_at: now,
    });
    const { bundle } = await this.issueOtp(trx, environment, row, 0);
    return { ...toAuthMethod(row), otpEncryptionTargetBundle: bundle };
  }

  /**
   * POST /auth/credentials, first call: 201 when the account has no verified credential yet
   * (nothing to sign with), otherwise a signed-retry challenge.
   */
  async startAddCredential(platformId: string, environment: Environment, body: CredentialCreateRequest): Promise<StoredOutcome> {
    return withTx(this.deps.db, async (trx) => {
      const account = await this.walletAccount(trx, platformId, body.accountId);
      await this.checkNewCredential(trx, account, body.type);
      if (!(await hasVerifiedCredential(trx, account.id))) {
        return { statusCode: 201, body: await this.addCredential(trx, platformId, environment, account, body.type) };
      }
      const challenge = await this.deps.signed.issue(trx, {
        platformId,
        accountId: account.id,
        operation: OPERATIONS.addCredential,
        targetId: body.accountId,
        body,
        signer: { kind: 'session' },
        context: { environment, type: body.type },
        payload: { type: body.type === 'EMAIL_OTP' ? 'ACTIVITY_TYPE_UPDATE_USER_EMAIL' : 'ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER', parameters: {
            userId: body.accountId,
            ...(body.type === 'EMAIL_OTP' ? { userEmail: account.email } : { userPhoneNumber: account.phone_number }),
          } },
      });
      return { statusCode: 202, body: { ...challenge, type: body.type } };
    });
  }

  private async executeAddCredential(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const { environment, type } = row.context as { environment: Environment; type: CredentialCreateRequest['type'] };
    const account = await this.walletAccount(trx, row.platform_id, accountRef(row.account_id));
    return { statusCode: 201, body: await this.addCredential(trx, row.platform_id, environment, account, type) };
  }

  /** DELETE /auth/credentials/{id}, first call. The last credential cannot go (spec §2.4 rule 5). */
  async startRevokeCredential(platformId: string, credentialId: string): Promise<SignedRequestChallenge & { type: CredentialType }> {
    return withTx(this.deps.db, async (trx) => {
      const credential = await this.credential(trx, platformId, credentialId);
      await this.checkNotLast(trx, credential);
      const challenge = await this.deps.signed.issue(trx, {
        platformId,
        accountId: credential.account_id,
        operation: OPERATIONS.revokeCredential,
        targetId: credentialId,
        body: {},
        // A credential cannot authorise its own revocation (spec §4.5 rule 2).
        signer: { kind: 'session', excludeCredentialId: credential.id },
        payload: { type: 'ACTIVITY_TYPE_DELETE_AUTHENTICATORS', parameters: { authenticatorIds: [credentialId], userId: accountRef(credential.account_id) } },
      });
      return { ...challenge, type: credential.type };
    });
  }

  private async checkNotLast(trx: DbOrTx, credential: CredentialRow): Promise<void> {
    if ((await activeCredentials(trx, credential.account_id)).length <= 1) {
      throw new AppError('INVALID_INPUT', 'This is the only credential on the account; an account must keep at least one. Add another first.', {
        details: { reason: 'LAST_CREDENTIAL' },
      });
    }
  }

  private async executeRevokeCredential(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const credential = await this.credential(trx, row.platform_id, row.target_id, true);
    await this.checkNotLast(trx, credential);
    const now = this.clock.now();
    await updateCredential(trx, credential.id, { revoked_at: now, updated_at: now });
    await revokeSessionsOfCredential(trx, credential.id, now);
    return { statusCode: 204 };
  }

  // OTPs

  private throttled(credential: CredentialRow, now: Date): AppError | undefined {
    const until = credential.otp_throttled_until;
    return until && until > now ? rateLimited(until, now, 'Too many wrong codes for this credential; wait before trying again.') : undefined;
  }

  /** Creates an OTP for the credential and sends it (sandbox: `000000`, never sent). */
  private async issueOtp(trx: Tx, environment: Environment, credential: CredentialRow, delayMs: number): Promise<{ challenge: OtpChallengeRow; bundle: string }> {
    const walletConfig = (await getConfigRow(trx, credential.platform_id)).embedded_wallet_config ?? {};
    const now = this.clock.now();
    const id = uuidv7(now.getTime());
    const code = environment === 'sandbox' ? SANDBOX_OTP : otpCode(walletConfig.otpLength ?? DEFAULT_OTP_LENGTH, walletConfig.alphanumeric ?? false);
    const target = this.deps.enclave.newOtpTarget(accountRef(credential.account_id));
    const expiresAt = new Date(now.getTime() + (walletConfig.expirationSeconds ?? DEFAULT_OTP_SECONDS) * 1000);
    const challenge: OtpChallengeRow = {
      id,
      platform_id: credential.platform_id,
      credential_id: credential.id,
      code_hash: this.deps.enclave.otpHash(id, code),
      sealed_target_key: target.sealedTargetKey,
      target_bundle: target.bundle,
      expires_at: expiresAt,
      settle_at: new Date(now.getTime() + delayMs),
      answered_at: delayMs === 0 ? now : null,
      consumed_at: null,
      created_at: now,
    };
    await insertOtpChallenge(trx, challenge);
    if (environment === 'production') {
      const appName = walletConfig.appName ?? 'Corridor';
      const minutes = Math.max(1, Math.round((expiresAt.getTime() - now.getTime()) / 60_000));
      await this.deps.messages.send({
        channel: credential.type === 'SMS_OTP' ? 'SMS' : 'EMAIL',
        to: credential.nickname,
        subject: `${appName} verification code`,
        text: `Your ${appName} verification code is ${code}. It expires in ${minutes} minute${minutes === 1 ? '' : 's'}. Never share it.`,
        from: {
          ...(walletConfig.sendFromEmailAddress ? { address: walletConfig.sendFromEmailAddress } : {}),
          ...(walletConfig.sendFromEmailSenderName ? { name: walletConfig.sendFromEmailSenderName } : {}),
          ...(walletConfig.replyToEmailAddress ? { replyTo: walletConfig.replyToEmailAddress } : {}),
        },
      });
    }
    return { challenge, bundle: target.bundle };
  }

  private otpCredential(credential: CredentialRow): void {
    if (credential.type !== 'EMAIL_OTP' && credential.type !== 'SMS_OTP') {
      throw new AppError('INVALID_INPUT', `${credential.type} credentials are not verified with a one-time code.`, {
        details: { errors: [{ field: 'type', constraint: { enum: [credential.type] }, message: `this credential is ${credential.type}` }] },
      });
    }
  }

  /**
   * POST /auth/credentials/{id}/challenge for EMAIL_OTP and SMS_OTP: a fresh OTP and target.
   * While the provider settles a delivery (sandbox delay) the call answers PROCESSING, and
   * later calls answer for that same OTP instead of sending another.
   */
  async challenge(platformId: string, environment: Environment, credentialId: string, settleDelaySeconds: number): Promise<StoredOutcome> {
    return withTx(this.deps.db, async (trx) => {
      const credential = await this.credential(trx, platformId, credentialId, true);
      this.otpCredential(credential);
      const now = this.clock.now();
      const throttled = this.throttled(credential, now);
      if (throttled) throw throttled;
      const latest = await latestOtpChallenge(trx, credential.id, true);
      if (latest && !latest.answered_at && !latest.consumed_at && latest.expires_at > now) {
        if (latest.settle_at > now) return PROCESSING;
        await updateOtpChallenge(trx, latest.id, { answered_at: now });
        return { statusCode: 200, body: { ...toAuthMethod(credential), otpEncryptionTargetBundle: latest.target_bundle } };
      }
      if ((await countOtpChallengesSince(trx, credential.id, new Date(now.getTime() - OTP_CHALLENGE_WINDOW_MS))) >= OTP_CHALLENGES_PER_WINDOW) {
        throw rateLimited(new Date(now.getTime() + OTP_CHALLENGE_WINDOW_MS), now, `At most ${OTP_CHALLENGES_PER_WINDOW} codes per ${OTP_CHALLENGE_WINDOW_MS / 60_000} minutes for one credential.`);
      }
      const delayMs = environment === 'sandbox' ? settleDelaySeconds * 1000 : 0;
      const { bundle } = await this.issueOtp(trx, environment, credential, delayMs);
      return delayMs > 0 ? PROCESSING : { statusCode: 200, body: { ...toAuthMethod(credential), otpEncryptionTargetBundle: bundle } };
    });
  }

  /**
   * POST /auth/credentials/{id}/verify, first call: opens the bundle, checks the OTP and, when
   * it matches, answers a challenge that only the key pair inside the bundle can sign.
   */
  async startVerifyOtp(platformId: string, environment: Environment, credentialId: string, body: CredentialVerifyRequest): Promise<SignedRequestChallenge & { type: CredentialType }> {
    const result = await withTx(this.deps.db, (trx) => this.verifyOtpFirstLeg(trx, platformId, environment, credentialId, body));
    if ('error' in result) throw result.error;
    return result.challenge;
  }

  /** Failures are returned, not thrown, so the attempt they count is committed. */
  private async verifyOtpFirstLeg(trx: Tx, platformId: string, environment: Environment, credentialId: string, body: CredentialVerifyRequest): Promise<VerifyFirstLeg> {
    const credential = await this.credential(trx, platformId, credentialId, true);
    this.otpCredential(credential);
    if (body.type !== credential.type) {
      throw new AppError('INVALID_INPUT', `This credential is ${credential.type}.`, {
        details: { errors: [{ field: 'type', constraint: { enum: [credential.type] }, message: `must be ${credential.type}, the type of this credential` }] },
      });
    }
    const now = this.clock.now();
    const throttled = this.throttled(credential, now);
    if (throttled) return { error: throttled };
    const challenge = await latestOtpChallenge(trx, credential.id, true);
    if (!challenge || challenge.consumed_at) {
      return { error: otpRejected('OTP_NOT_ISSUED', 'No unused code was issued for this credential; request one with POST /auth/credentials/{id}/challenge.') };
    }
    if (challenge.expires_at <= now) return { error: otpRejected('OTP_EXPIRED', 'The code has expired; request a new one.') };
    if (challenge.settle_at > now) return { error: otpRejected('OTP_NOT_DELIVERED', 'The code has not been delivered yet; request the challenge again until it answers.') };

    let opened: OpenedOtp;
    try {
      opened = this.deps.enclave.openOtp(challenge.sealed_target_key, body.encryptedOtpBundle);
    } catch (error) {
      if (!(error instanceof BundleError)) throw error;
      return { error: otpRejected('OTP_BUNDLE_INVALID', `encryptedOtpBundle cannot be opened with the current target: ${error.message}. Encrypt to the latest otpEncryptionTargetBundle.`) };
    }
    if (!this.deps.enclave.otpMatches(challenge.id, opened.otpCode, challenge.code_hash)) {
      const failures = credential.otp_failures + 1;
      if (failures >= OTP_MAX_FAILURES) {
        const until = new Date(now.getTime() + OTP_LOCK_MS);
        await updateCredential(trx, credential.id, { otp_failures: 0, otp_throttled_until: until, updated_at: credential.updated_at });
        await updateOtpChallenge(trx, challenge.id, { consumed_at: now });
        return { error: rateLimited(until, now, `${OTP_MAX_FAILURES} wrong codes in a row: this code is void and verification is paused.`) };
      }
      await updateCredential(trx, credential.id, { otp_failures: failures, updated_at: credential.updated_at });
      return { error: otpRejected('OTP_INVALID', 'Invalid OTP code.', { attemptsRemaining: OTP_MAX_FAILURES - failures }) };
    }
    await updateOtpChallenge(trx, challenge.id, { consumed_at: now });
    if (credential.otp_failures > 0) await updateCredential(trx, credential.id, { otp_failures: 0, updated_at: credential.updated_at });
    const issued = await this.deps.signed.issue(trx, {
      platformId,
      accountId: credential.account_id,
      operation: OPERATIONS.verifyOtp,
      targetId: credentialId,
      body,
      signer: { kind: 'key', publicKey: opened.publicKeyCompressed },
      context: { environment },
      payload: ({ requestId, expiresAt }) =>
        this.deps.enclave.verificationToken({
          id: requestId,
          verification_type: credential.type === 'SMS_OTP' ? 'OTP_TYPE_SMS' : 'OTP_TYPE_EMAIL',
          contact: credential.nickname,
          organization_id: accountRef(credential.account_id),
          public_key: opened.publicKey,
          exp: String(expiresAt.getTime()),
          body_sha256: bodyHash(body),
        }),
    });
    return { challenge: { ...issued, type: credential.type } };
  }

  private async newSession(trx: Tx, credential: CredentialRow, publicKey: string, now: Date): Promise<SessionRow> {
    return insertSession(trx, {
      id: uuidv7(now.getTime()),
      platform_id: credential.platform_id,
      account_id: credential.account_id,
      credential_id: credential.id,
      public_key: publicKey,
      created_at: now,
      updated_at: now,
      expires_at: new Date(now.getTime() + this.deps.sessionSeconds * 1000),
      revoked_at: null,
    });
  }

  private async executeVerifyOtp(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const credential = await this.credential(trx, row.platform_id, row.target_id, true);
    const now = this.clock.now();
    const signer = row.signer as { kind: 'key'; publicKey: string };
    const session = await this.newSession(trx, credential, signer.publicKey, now);
    if (!credential.verified_at) await updateCredential(trx, credential.id, { verified_at: now, updated_at: credential.updated_at });
    return { statusCode: 200, body: toSession(session, credential) };
  }

  // Sessions

  async listSessions(db: DbOrTx, platformId: string, accountId: string): Promise<{ data: AuthSession[] }> {
    const uuid = parseId('InternalAccount', accountId)!;
    const account = await findWalletAccount(db, platformId, uuid);
    if (!account) return { data: [] };
    return { data: (await activeSessions(db, uuid, this.clock.now())).map((s) => toSession(s, s)) };
  }

  /** DELETE /auth/sessions/{id}, first call: any active session of the account may sign, itself included. */
  async startRevokeSession(platformId: string, sessionId: string): Promise<SignedRequestChallenge & { type: CredentialType }> {
    return withTx(this.deps.db, async (trx) => {
      const session = await this.session(trx, platformId, sessionId);
      const credential = (await findCredential(trx, platformId, session.credential_id))!;
      const challenge = await this.deps.signed.issue(trx, {
        platformId,
        accountId: session.account_id,
        operation: OPERATIONS.revokeSession,
        targetId: sessionId,
        body: {},
        signer: { kind: 'session' },
        payload: { type: 'ACTIVITY_TYPE_DELETE_SESSIONS', parameters: { sessionIds: [sessionId] } },
      });
      return { ...challenge, type: credential.type };
    });
  }

  private async executeRevokeSession(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    await revokeSession(trx, parseId('Session', row.target_id)!, this.clock.now());
    return { statusCode: 204 };
  }

  /** POST /auth/sessions/{id}/refresh, first call: signed by that session's own key. */
  async startRefreshSession(platformId: string, sessionId: string, body: SessionRefreshRequest): Promise<SignedRequestChallenge> {
    return withTx(this.deps.db, async (trx) => {
      const session = await this.session(trx, platformId, sessionId);
      return this.deps.signed.issue(trx, {
        platformId,
        accountId: session.account_id,
        operation: OPERATIONS.refreshSession,
        targetId: sessionId,
        body,
        signer: { kind: 'session', sessionId: session.id },
        payload: { type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2', parameters: { targetPublicKey: body.clientPublicKey.toLowerCase() } },
      });
    });
  }

  private async executeRefreshSession(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const session = await this.session(trx, row.platform_id, row.target_id);
    const credential = (await findCredential(trx, row.platform_id, session.credential_id, true))!;
    const { clientPublicKey } = row.context.body as SessionRefreshRequest;
    const client = parseP256PublicKey(clientPublicKey);
    const now = this.clock.now();
    // Compressed: the client holds the private key. Uncompressed: we make one and seal it to the client.
    if (clientPublicKey.length === 66) {
      const fresh = await this.newSession(trx, credential, client.compressed.toString('hex'), now);
      return { statusCode: 201, body: toSession(fresh, credential) };
    }
    const issued = this.deps.enclave.issueSessionKey(client.uncompressed);
    const fresh = await this.newSession(trx, credential, issued.publicKeyCompressed, now);
    return { statusCode: 201, body: toSession(fresh, credential, { encryptedSessionSigningKey: issued.encryptedSessionSigningKey }) };
  }

  // Wallet export

  /** POST /internal-accounts/{id}/export, first call. The secret is sealed only on the signed retry. */
  async startExport(platformId: string, accountId: string, body: WalletExportRequest): Promise<SignedRequestChallenge> {
    return withTx(this.deps.db, async (trx) => {
      const account = await this.walletAccount(trx, platformId, accountId);
      return this.deps.signed.issue(trx, {
        platformId,
        accountId: account.id,
        operation: OPERATIONS.exportWallet,
        targetId: accountId,
        body,
        signer: { kind: 'session' },
        payload: { type: 'ACTIVITY_TYPE_EXPORT_WALLET', parameters: { walletId: accountId, targetPublicKey: body.clientPublicKey.toLowerCase() } },
      });
    });
  }

  private async revealExport(db: DbOrTx, row: SignedRequestRow): Promise<unknown> {
    const { clientPublicKey } = row.context.body as WalletExportRequest;
    const wallet = (await findWallet(db, row.account_id))!;
    const accountId = accountRef(row.account_id);
    return {
      id: accountId,
      encryptedWalletCredentials: this.deps.enclave.exportWallet(wallet.sealed_secret, accountId, Buffer.from(clientPublicKey, 'hex'), accountId),
    };
  }

  /** Issues a signed-retry challenge for an operation another module performs (privacy, e-mail change). */
  async issueFor(trx: Tx, spec: { platformId: string; accountUuid: string; operation: string; targetId: string; body: unknown; type: string; parameters: Record<string, unknown> }): Promise<SignedRequestChallenge> {
    return this.deps.signed.issue(trx, {
      platformId: spec.platformId,
      accountId: spec.accountUuid,
      operation: spec.operation,
      targetId: spec.targetId,
      body: spec.body,
      signer: { kind: 'session' },
      payload: { type: spec.type, parameters: spec.parameters },
    });
  }
}
