import { randomInt } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { uuidv7 } from '../../platform/ids.js';
import { SecretBoxError } from '../../platform/crypto/secret-box.js';
import type { MessageSender, OutgoingMessage } from '../../platform/messages.js';
import { getConfigRow } from '../config/index.js';
import { BundleError } from './enclave/bundles.js';
import type { OpenedOtp, WalletEnclave } from './enclave/enclave.js';
import {
  deleteOtpChallenge,
  insertOtpChallenge,
  OTP_CHALLENGE_WINDOW_MS,
  latestOtpChallenge,
  nthLatestOtpChallengeSince,
  updateCredential,
  updateOtpChallenge,
  type CredentialRow,
  type OtpChallengeRow,
  type StoredOutcome,
} from './repo.js';
import { PROCESSING } from './signed-retry.js';
import { accountRef, toAuthMethod } from './views.js';

export type Environment = 'sandbox' | 'production';

/** Sandbox OTPs are always this code and are never delivered (spec §4.4). */
export const SANDBOX_OTP = '000000';
/** Wrong codes a credential may send before verify and challenge answer 429 for `OTP_LOCK_MS`. */
export const OTP_MAX_FAILURES = 5;
export const OTP_LOCK_MS = 15 * 60_000;
/** At most this many OTPs per credential per window; more answer 429. */
export const OTP_CHALLENGES_PER_WINDOW = 10;
const DEFAULT_OTP_LENGTH = 6;
const DEFAULT_OTP_SECONDS = 300;

function rateLimited(until: Date, now: Date, message: string): AppError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  return new AppError('RATE_LIMITED', message, { headers: { 'retry-after': String(seconds) }, details: { retryAfterSeconds: seconds } });
}

function otpRejected(reason: string, message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError('UNAUTHORIZED', message, { details: { reason, ...details } });
}

function otpCode(length: number, alphanumeric: boolean): string {
  const alphabet = alphanumeric ? 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789' : '0123456789';
  let code = '';
  for (let i = 0; i < length; i++) code += alphabet[randomInt(alphabet.length)];
  return code;
}

/** A code stored but not sent yet: `OneTimeCodes.deliver` sends it once the transaction that stored it has committed. */
export interface OtpDelivery {
  challengeId: string;
  message: OutgoingMessage;
}

/**
 * One-time codes of EMAIL_OTP and SMS_OTP credentials: issuing (stored only as a keyed hash,
 * with a fresh enclave target), delivery, expiry, single use and throttling. Only the latest
 * code of a credential counts.
 */
export class OneTimeCodes {
  constructor(private readonly deps: { db: Db; clock: Clock; enclave: WalletEnclave; messages: MessageSender }) {}

  private throttled(credential: CredentialRow, now: Date): AppError | undefined {
    const until = credential.otp_throttled_until;
    return until && until > now ? rateLimited(until, now, 'Too many wrong codes for this credential; wait before trying again.') : undefined;
  }

  /**
   * Creates an OTP for the credential. A production code comes back as `delivery`, for the
   * caller to `deliver` after its transaction commits; a sandbox code (`000000`) is never sent.
   */
  async issue(trx: Tx, environment: Environment, credential: CredentialRow, delayMs: number): Promise<{ challenge: OtpChallengeRow; bundle: string; delivery?: OtpDelivery }> {
    const walletConfig = (await getConfigRow(trx, credential.platform_id)).embedded_wallet_config ?? {};
    const now = this.deps.clock.now();
    const id = uuidv7(now.getTime());
    const code = environment === 'sandbox' ? SANDBOX_OTP : otpCode(walletConfig.otpLength ?? DEFAULT_OTP_LENGTH, walletConfig.alphanumeric ?? false);
    const target = this.deps.enclave.newOtpTarget(accountRef(credential.account_id), { challengeId: id, credentialId: credential.id });
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
    if (environment !== 'production') return { challenge, bundle: target.bundle };
    const appName = walletConfig.appName ?? 'Corridor';
    const minutes = Math.max(1, Math.round((expiresAt.getTime() - now.getTime()) / 60_000));
    const message: OutgoingMessage = {
      channel: credential.type === 'SMS_OTP' ? 'SMS' : 'EMAIL',
      to: credential.nickname,
      subject: `${appName} verification code`,
      text: `Your ${appName} verification code is ${code}. It expires in ${minutes} minute${minutes === 1 ? '' : 's'}. Never share it.`,
      from: {
        ...(walletConfig.sendFromEmailAddress ? { address: walletConfig.sendFromEmailAddress } : {}),
        ...(walletConfig.sendFromEmailSenderName ? { name: walletConfig.sendFromEmailSenderName } : {}),
        ...(walletConfig.replyToEmailAddress ? { replyTo: walletConfig.replyToEmailAddress } : {}),
      },
    };
    return { challenge, bundle: target.bundle, delivery: { challengeId: id, message } };
  }

  /**
   * Sends an issued code, with no transaction open: the provider may take up to
   * CORRIDOR_MESSAGES_TIMEOUT_MS (at most two minutes), and a transaction held that long would
   * hold a pooled connection (the embedded engine's only one) and the credential's lock. A code
   * that could not be sent is withdrawn, its challenge deleted as if never issued (the credential's
   * previous code, if any, stays as it was), and the provider's error is thrown.
   */
  async deliver(delivery: OtpDelivery): Promise<void> {
    try {
      await this.deps.messages.send(delivery.message);
    } catch (error) {
      await deleteOtpChallenge(this.deps.db, delivery.challengeId);
      throw error;
    }
  }

  /**
   * POST /auth/credentials/{id}/challenge for a (locked) OTP credential: a fresh OTP and target.
   * While the provider settles a delivery (sandbox delay) the call answers PROCESSING, and
   * later calls answer for that same OTP instead of sending another. A new production code comes
   * with its `delivery`, which the caller sends (`deliver`) once the transaction has committed.
   */
  async challenge(trx: Tx, environment: Environment, credential: CredentialRow, settleDelaySeconds: number): Promise<{ outcome: StoredOutcome; delivery?: OtpDelivery }> {
    const now = this.deps.clock.now();
    const throttled = this.throttled(credential, now);
    if (throttled) throw throttled;
    const latest = await latestOtpChallenge(trx, credential.id);
    if (latest && !latest.answered_at && !latest.consumed_at && latest.expires_at > now) {
      if (latest.settle_at > now) return { outcome: PROCESSING };
      await updateOtpChallenge(trx, latest.id, { answered_at: now });
      return { outcome: { statusCode: 200, body: { ...toAuthMethod(credential), otpEncryptionTargetBundle: latest.target_bundle } } };
    }
    // The window is full until the oldest of its last OTP_CHALLENGES_PER_WINDOW codes leaves it: that is the Retry-After.
    const oldestCounted = await nthLatestOtpChallengeSince(trx, credential.id, new Date(now.getTime() - OTP_CHALLENGE_WINDOW_MS), OTP_CHALLENGES_PER_WINDOW);
    if (oldestCounted) {
      throw rateLimited(
        new Date(oldestCounted.getTime() + OTP_CHALLENGE_WINDOW_MS),
        now,
        `At most ${OTP_CHALLENGES_PER_WINDOW} codes per ${OTP_CHALLENGE_WINDOW_MS / 60_000} minutes for one credential.`,
      );
    }
    const delayMs = environment === 'sandbox' ? settleDelaySeconds * 1000 : 0;
    const { bundle, delivery } = await this.issue(trx, environment, credential, delayMs);
    if (delayMs > 0) return { outcome: PROCESSING };
    return { outcome: { statusCode: 200, body: { ...toAuthMethod(credential), otpEncryptionTargetBundle: bundle } }, ...(delivery ? { delivery } : {}) };
  }

  /**
   * Opens the bundle against the credential's (locked) current code and uses the code up. A
   * failure is returned, not thrown, so the caller commits the attempt it counted.
   */
  async check(trx: Tx, credential: CredentialRow, encryptedOtpBundle: string): Promise<{ opened: OpenedOtp } | { error: AppError }> {
    const now = this.deps.clock.now();
    const throttled = this.throttled(credential, now);
    if (throttled) return { error: throttled };
    const challenge = await latestOtpChallenge(trx, credential.id);
    if (!challenge || challenge.consumed_at) {
      return { error: otpRejected('OTP_NOT_ISSUED', 'No unused code was issued for this credential; request one with POST /auth/credentials/{id}/challenge.') };
    }
    if (challenge.expires_at <= now) return { error: otpRejected('OTP_EXPIRED', 'The code has expired; request a new one.') };
    if (challenge.settle_at > now) return { error: otpRejected('OTP_NOT_DELIVERED', 'The code has not been delivered yet; request the challenge again until it answers.') };

    let opened: OpenedOtp;
    try {
      opened = await this.deps.enclave.openOtp(challenge.sealed_target_key, encryptedOtpBundle, { challengeId: challenge.id, credentialId: credential.id });
    } catch (error) {
      // The stored target key was not sealed for this challenge (sealed before keys were bound to their challenge, or copied from another row): its code cannot be checked.
      if (error instanceof SecretBoxError) return { error: otpRejected('OTP_NOT_ISSUED', 'No usable code was issued for this credential; request one with POST /auth/credentials/{id}/challenge.') };
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
    return { opened };
  }
}
