import { sha256Hex } from '../../platform/crypto/encoding.js';
import type { Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import type { EmbeddedWalletConfig } from '../config/index.js';
import { checkClientPublicKey, checkCredentialType, loadCredential, OPERATIONS, spendOidcToken, type WalletAuthDeps } from './context.js';
import { nonceFor, oidcRejected } from './oidc.js';
import type { Environment, OneTimeCodes, OtpDelivery } from './otp.js';
import { passkeyRejected, passkeySettings, storedPasskey, verifyAssertion } from './passkey.js';
import { updateCredential, type CredentialRow, type CredentialType, type SignedRequestRow, type StoredOutcome } from './repo.js';
import type { AuthSession, OauthVerifyRequest, OtpVerifyRequest, PasskeyVerifyRequest, SignedRequestChallenge } from './schemas.js';
import type { SessionFlows } from './sessions.js';
import { bodyHash } from './signed-retry.js';
import { accountRef, toAuthMethod, toSession } from './views.js';

type VerifyFirstLeg = { challenge: SignedRequestChallenge & { type: CredentialType } } | { error: AppError };

/**
 * Logging in with a credential (spec §4.4): the challenge (one-time code or passkey request)
 * and the verify that opens a session — EMAIL_OTP/SMS_OTP through a signed retry with the key
 * inside the OTP bundle, OAUTH with a fresh OIDC token, PASSKEY with a WebAuthn assertion.
 */
export class LoginFlows {
  constructor(
    private readonly deps: WalletAuthDeps,
    private readonly otp: OneTimeCodes,
    private readonly sessions: SessionFlows,
  ) {
    deps.signed.register(OPERATIONS.verifyOtp, { execute: (trx, row) => this.executeVerifyOtp(trx, row) });
    deps.signed.register(OPERATIONS.passkeySession, { execute: (trx, row) => this.executePasskeySession(trx, row) });
  }

  /**
   * For reads outside a transaction only: the cache loads on its own connection, which inside a
   * transaction would wait on the embedded database's single one.
   */
  private async walletConfig(platformId: string): Promise<EmbeddedWalletConfig | undefined> {
    return (await this.deps.configs.get(platformId)).embeddedWalletConfig;
  }

  /**
   * POST /auth/credentials/{id}/challenge: a fresh one-time code (EMAIL_OTP, SMS_OTP) or a
   * session-creation challenge (PASSKEY); OAUTH has none. A production code is sent after the
   * transaction commits, with the credential's lock released; one that cannot be sent is
   * withdrawn and answers the provider's 503 (`OneTimeCodes.deliver`).
   */
  async challenge(platformId: string, environment: Environment, credentialId: string, body: { clientPublicKey?: string }, settleDelaySeconds: number): Promise<StoredOutcome> {
    if (body.clientPublicKey !== undefined) checkClientPublicKey(body.clientPublicKey, 'clientPublicKey');
    const { outcome, delivery } = await withTx<{ outcome: StoredOutcome; delivery?: OtpDelivery }>(this.deps.db, async (trx) => {
      const credential = await loadCredential(trx, platformId, credentialId, true);
      if (credential.type === 'PASSKEY') return { outcome: { statusCode: 200, body: await this.passkeyChallenge(trx, credential, body.clientPublicKey) } };
      if (credential.type === 'OAUTH') {
        throw new AppError('INVALID_INPUT', 'OAUTH credentials need no challenge: call verify with a fresh OIDC token and clientPublicKey.', {
          details: { reason: 'NO_CHALLENGE_FOR_OAUTH' },
        });
      }
      return this.otp.challenge(trx, environment, credential, settleDelaySeconds);
    });
    if (delivery) await this.otp.deliver(delivery);
    return outcome;
  }

  /**
   * POST /auth/credentials/{id}/verify, first call: opens the bundle, checks the OTP and, when
   * it matches, answers a challenge that only the key pair inside the bundle can sign.
   */
  async startVerifyOtp(platformId: string, environment: Environment, credentialId: string, body: OtpVerifyRequest): Promise<SignedRequestChallenge & { type: CredentialType }> {
    const result = await withTx(this.deps.db, (trx) => this.verifyOtpFirstLeg(trx, platformId, environment, credentialId, body));
    if ('error' in result) throw result.error;
    return result.challenge;
  }

  /** Failures are returned, not thrown, so the attempt they count is committed. */
  private async verifyOtpFirstLeg(trx: Tx, platformId: string, environment: Environment, credentialId: string, body: OtpVerifyRequest): Promise<VerifyFirstLeg> {
    const credential = await loadCredential(trx, platformId, credentialId, true);
    checkCredentialType(credential, body.type);
    const checked = await this.otp.check(trx, credential, body.encryptedOtpBundle);
    if ('error' in checked) return checked;
    const { opened } = checked;
    const issued = await this.deps.signed.issue(trx, {
      platformId,
      accountId: credential.account_id,
      operation: OPERATIONS.verifyOtp,
      targetId: credentialId,
      body,
      signer: { kind: 'key', publicKey: opened.publicKeyCompressed },
      // The contact the code went to: a session opens only while the credential still carries it.
      context: { environment, contact: credential.nickname },
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

  private async executeVerifyOtp(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const credential = await loadCredential(trx, row.platform_id, row.target_id, true);
    const { contact } = row.context as { contact?: string };
    // The customer's e-mail (phone) changed after the code was checked: the old address proves nothing now (spec §4.3).
    if (contact !== undefined && contact !== credential.nickname) {
      throw new AppError('UNAUTHORIZED', 'The credential moved to another contact after this code was checked; request a new code.', { details: { reason: 'OTP_CONTACT_CHANGED' } });
    }
    const now = this.deps.clock.now();
    const signer = row.signer as { kind: 'key'; publicKey: string };
    const session = await this.sessions.open(trx, credential, signer.publicKey, now);
    if (!credential.verified_at) await updateCredential(trx, credential.id, { verified_at: now, updated_at: credential.updated_at });
    return { statusCode: 200, body: toSession(session, credential) };
  }

  /**
   * OAUTH verify (spec §4.4): a fresh token of the credential's identity whose nonce commits to
   * `clientPublicKey` opens a session whose key is sealed to that public key.
   */
  async verifyOauth(platformId: string, environment: Environment, credentialId: string, body: OauthVerifyRequest): Promise<AuthSession> {
    checkClientPublicKey(body.clientPublicKey, 'clientPublicKey');
    const credential = await loadCredential(this.deps.db, platformId, credentialId);
    checkCredentialType(credential, body.type);
    const walletConfig = await this.walletConfig(platformId);
    const bound = credential.details as { iss: string; aud: string; sub: string; jwksUri?: string };
    const { claims, identity } = await this.deps.oidc.verify(body.oidcToken, {
      trusted: walletConfig?.oidcIssuers ?? [],
      now: this.deps.clock.now(),
      checkSignature: environment === 'production',
      // Registered under a platform-configured issuer: its keys are those in force at registration.
      pinned: bound,
    });
    if (identity.iss !== bound.iss || identity.aud !== bound.aud || identity.sub !== bound.sub) {
      throw oidcRejected('identity', 'iss, aud and sub must be those of the credential');
    }
    if (claims.nonce !== nonceFor(body.clientPublicKey)) throw oidcRejected('nonce', 'nonce must be the SHA-256 (lowercase hex) of clientPublicKey');
    return withTx(this.deps.db, async (trx) => {
      await spendOidcToken(trx, this.deps.clock, platformId, body.oidcToken, claims.exp!);
      const locked = await loadCredential(trx, platformId, credentialId, true);
      return this.sessions.openSealed(trx, locked, body.clientPublicKey);
    });
  }

  /**
   * PASSKEY challenge: a session-creation request for `clientPublicKey`, whose SHA-256 (hex) is
   * the WebAuthn challenge; its `requestId` redeems it at verify.
   */
  private async passkeyChallenge(trx: Tx, credential: CredentialRow, clientPublicKey: string | undefined): Promise<Record<string, unknown>> {
    if (!clientPublicKey) {
      throw new AppError('INVALID_INPUT', 'A PASSKEY challenge needs clientPublicKey, the key the session signing key is sealed to.', {
        details: { errors: [{ field: 'clientPublicKey', message: 'is required for PASSKEY' }] },
      });
    }
    const account = accountRef(credential.account_id);
    const challenge = await this.deps.signed.issue(trx, {
      platformId: credential.platform_id,
      accountId: credential.account_id,
      operation: OPERATIONS.passkeySession,
      targetId: formatId('AuthMethod', credential.id),
      body: { clientPublicKey },
      signer: { kind: 'passkey' },
      context: { clientPublicKey },
      payload: ({ requestId, issuedAt }) =>
        sha256Hex(
          JSON.stringify({
            organizationId: account,
            parameters: { targetPublicKey: clientPublicKey.toLowerCase(), authenticatorId: credential.webauthn_id },
            requestId,
            timestampMs: String(issuedAt.getTime()),
            type: 'ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2',
          }),
        ),
    });
    return {
      ...toAuthMethod(credential),
      credentialId: credential.webauthn_id,
      challenge: challenge.payloadToSign,
      requestId: challenge.requestId,
      expiresAt: challenge.expiresAt,
    };
  }

  /** PASSKEY verify: the assertion over the challenge redeems its Request-Id for a session. */
  async verifyPasskey(platformId: string, environment: Environment, credentialId: string, body: PasskeyVerifyRequest, requestId: string, settleDelaySeconds: number): Promise<StoredOutcome> {
    const credential = await loadCredential(this.deps.db, platformId, credentialId);
    checkCredentialType(credential, body.type);
    const settings = passkeySettings(await this.walletConfig(platformId));
    return this.deps.signed.redeem({
      platformId,
      environment,
      operation: OPERATIONS.passkeySession,
      targetId: formatId('AuthMethod', credential.id),
      requestId,
      proof: sha256Hex(JSON.stringify([body.assertion.authenticatorData, body.assertion.signature, body.assertion.clientDataJson])),
      settleDelaySeconds,
      authorise: async (_trx, row) => {
        const stored = storedPasskey(credential);
        return { newCounter: await verifyAssertion(body.assertion, row.payload_to_sign, stored, settings) };
      },
    });
  }

  private async executePasskeySession(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const credential = await loadCredential(trx, row.platform_id, row.target_id, true);
    const { clientPublicKey, newCounter } = row.context as { clientPublicKey: string; newCounter: number };
    const stored = storedPasskey(credential);
    // Two assertions raced past verification: the counter may only move forward.
    if ((newCounter > 0 || stored.counter > 0) && newCounter <= stored.counter) throw passkeyRejected('counter', 'the signature counter did not increase');
    await updateCredential(trx, credential.id, { details: { ...credential.details, counter: newCounter }, updated_at: credential.updated_at });
    return { statusCode: 200, body: await this.sessions.openSealed(trx, credential, clientPublicKey) };
  }
}
