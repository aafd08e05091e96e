import type { Clock } from '../../platform/clock.js';
import { sha256Hex } from '../../platform/crypto/encoding.js';
import { parseP256PublicKey } from '../../platform/crypto/p256.js';
import type { Db, DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob, type JobWorker } from '../../platform/jobs.js';
import type { MessageSender } from '../../platform/messages.js';
import { type EmbeddedWalletConfig, getConfigRow, type PlatformConfigCache } from '../config/index.js';
import type { WalletEnclave } from './enclave/enclave.js';
import {
  activeCredentials,
  activeSessions,
  emailCredentialsOfCustomer,
  findActiveSession,
  findCredential,
  findWallet,
  findWalletAccount,
  hasVerifiedCredential,
  insertCredential,
  insertSession,
  insertWallet,
  revokeSession,
  revokeSessionsOfCredential,
  updateCredential,
  useOidcToken,
  type CredentialRow,
  type CredentialType,
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
  OauthVerifyRequest,
  OtpVerifyRequest,
  PasskeyVerifyRequest,
  SessionRefreshRequest,
  SignedRequestChallenge,
  WalletExportRequest,
} from './schemas.js';
import { nonceFor, oidcRejected, type OidcVerifier } from './oidc.js';
import { passkeyRejected, passkeySettings, storedPasskey, verifyAssertion, verifyRegistration } from './passkey.js';
import { OneTimeCodes, type Environment } from './otp.js';
import { bodyHash, type SignedRequests } from './signed-retry.js';
import { accountRef, toAuthMethod, toSession } from './views.js';

const WALLET_SECRET_JOB = 'wallet.create-secret';

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

function notFound(what: string, id: string): AppError {
  return new AppError('REFERENCE_NOT_FOUND', `${what} ${id} was not found.`);
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
  oidc: OidcVerifier;
  /** Platform configs, cached per process and evicted on change: read on every login. */
  configs: PlatformConfigCache;
  sessionSeconds: number;
}

/** A credential about to be added, as checked when the request arrived. */
interface NewCredentialSpec {
  type: CredentialType;
  nickname: string;
  webauthnId?: string;
  details: Record<string, unknown>;
}

/** The activity a credential registration asks the end user to sign (the upstream activity names). */
function registrationActivity(body: CredentialCreateRequest, spec: NewCredentialSpec): { type: string; parameters: Record<string, unknown> } {
  const userId = body.accountId;
  switch (body.type) {
    case 'EMAIL_OTP':
      return { type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', parameters: { userEmail: spec.nickname, userId } };
    case 'SMS_OTP':
      return { type: 'ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER', parameters: { userPhoneNumber: spec.nickname, userId } };
    case 'OAUTH':
      return { type: 'ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS', parameters: { oauthProviders: [{ oidcToken: body.oidcToken, providerName: spec.details.iss }], userId } };
    case 'PASSKEY':
      return {
        type: 'ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2',
        parameters: {
          authenticators: [{ attestation: body.attestation, authenticatorName: spec.nickname, challenge: body.challenge, transports: body.attestation.transports ?? [] }],
          userId,
        },
      };
  }
}

type VerifyFirstLeg = { challenge: SignedRequestChallenge & { type: CredentialType } } | { error: AppError };

/**
 * Wallet credentials, OTPs and sessions (spec §2.4, §4.2–§4.5). Every mutation that needs the
 * end user's consent goes through `signed` (the signed-retry pattern); this class decides what
 * is allowed and what each operation does once it settles.
 */
export class WalletAuth {
  private readonly otp: OneTimeCodes;

  constructor(private readonly deps: WalletAuthDeps) {
    this.otp = new OneTimeCodes(deps);
    const { signed, jobs } = deps;
    signed.register(OPERATIONS.addCredential, { execute: (trx, row) => this.executeAddCredential(trx, row) });
    signed.register(OPERATIONS.revokeCredential, { execute: (trx, row) => this.executeRevokeCredential(trx, row) });
    signed.register(OPERATIONS.verifyOtp, { execute: (trx, row) => this.executeVerifyOtp(trx, row) });
    signed.register(OPERATIONS.revokeSession, { execute: (trx, row) => this.executeRevokeSession(trx, row) });
    signed.register(OPERATIONS.refreshSession, { execute: (trx, row) => this.executeRefreshSession(trx, row) });
    signed.register(OPERATIONS.passkeySession, { execute: (trx, row) => this.executePasskeySession(trx, row) });
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

  /**
   * For reads outside a transaction only: the cache loads on its own connection, which inside a
   * transaction would wait on the embedded database's single one.
   */
  private async walletConfig(platformId: string): Promise<EmbeddedWalletConfig | undefined> {
    return (await this.deps.configs.get(platformId)).embeddedWalletConfig;
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

  /**
   * What a new credential will be, checked against spec §2.4 rules 1–4: the contact of an OTP
   * credential, the verified identity of an OAUTH one (its token used up), the verified
   * public key of a PASSKEY one.
   */
  private async prepareCredential(trx: Tx, platformId: string, environment: Environment, account: WalletAccount, body: CredentialCreateRequest): Promise<NewCredentialSpec> {
    const existing = await activeCredentials(trx, account.id);
    const walletConfig = (await getConfigRow(trx, platformId)).embedded_wallet_config ?? undefined;
    switch (body.type) {
      case 'EMAIL_OTP':
      case 'SMS_OTP': {
        if (existing.some((c) => c.type === body.type)) {
          throw new AppError(
            body.type === 'EMAIL_OTP' ? 'EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS' : 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS',
            `The account already has an ${body.type} credential; revoke it before adding another.`,
          );
        }
        const field = body.type === 'EMAIL_OTP' ? 'email' : 'phoneNumber';
        const contact = body.type === 'EMAIL_OTP' ? account.email : account.phone_number;
        if (!contact) {
          throw new AppError('MISSING_MANDATORY_USER_INFO', `The customer has no ${field} to tie an ${body.type} credential to.`, { details: { field } });
        }
        return { type: body.type, nickname: contact, details: {} };
      }
      case 'OAUTH': {
        const { identity, claims } = await this.deps.oidc
          .verify(body.oidcToken, { trusted: walletConfig?.oidcIssuers ?? [], now: this.clock.now(), checkSignature: environment === 'production' })
          .catch((error: unknown) => {
            // At registration an untrusted issuer is a bad request, not a failed login.
            if (error instanceof AppError && error.details?.check === 'issuer') {
              throw new AppError('INVALID_INPUT', error.message, { details: { errors: [{ field: 'oidcToken', message: 'issuer is not trusted' }] } });
            }
            throw error;
          });
        const taken = existing.some((c) => c.type === 'OAUTH' && c.details.iss === identity.iss && c.details.sub === identity.sub && c.details.aud === identity.aud);
        if (taken) {
          throw new AppError('INVALID_INPUT', 'This OIDC identity is already an OAUTH credential of the account.', { details: { errors: [{ field: 'oidcToken', message: 'identity already registered' }] } });
        }
        await this.useToken(trx, platformId, body.oidcToken, claims.exp!);
        return { type: 'OAUTH', nickname: identity.email ?? identity.sub, details: { iss: identity.iss, aud: identity.aud, sub: identity.sub } };
      }
      case 'PASSKEY': {
        const passkey = await verifyRegistration(body, passkeySettings(walletConfig));
        if (existing.some((c) => c.type === 'PASSKEY' && c.webauthn_id === passkey.webauthnId)) {
          throw new AppError('PASSKEY_CREDENTIAL_ALREADY_EXISTS', 'This WebAuthn credential is already registered on the account.');
        }
        return { type: 'PASSKEY', nickname: body.nickname.trim(), webauthnId: passkey.webauthnId, details: { publicKey: passkey.publicKey, counter: passkey.counter, ...(passkey.transports ? { transports: passkey.transports } : {}) } };
      }
    }
  }

  /** Refuses an OIDC token seen before (each call needs a fresh one). */
  private async useToken(trx: Tx, platformId: string, token: string, exp: number): Promise<void> {
    if (!(await useOidcToken(trx, platformId, sha256Hex(token), new Date(exp * 1000), this.clock.now()))) {
      throw oidcRejected('replay', 'this token was already used; get a fresh one for every call');
    }
  }

  private async addCredential(trx: Tx, environment: Environment, account: WalletAccount, spec: NewCredentialSpec): Promise<AuthMethodResponse> {
    const now = this.clock.now();
    const row = await insertCredential(trx, {
      id: uuidv7(now.getTime()),
      platform_id: account.platform_id,
      account_id: account.id,
      type: spec.type,
      nickname: spec.nickname,
      webauthn_id: spec.webauthnId ?? null,
      details: spec.details,
      created_at: now,
      updated_at: now,
    }).catch((error: unknown) => {
      // Two concurrent adds of one passkey: the unique index decides, with the spec's code.
      if (spec.type === 'PASSKEY' && (error as { code?: string }).code === '23505') {
        throw new AppError('PASSKEY_CREDENTIAL_ALREADY_EXISTS', 'This WebAuthn credential is already registered on the account.');
      }
      throw error;
    });
    if (spec.type !== 'EMAIL_OTP' && spec.type !== 'SMS_OTP') return toAuthMethod(row);
    const { bundle } = await this.otp.issue(trx, environment, row, 0);
    return { ...toAuthMethod(row), otpEncryptionTargetBundle: bundle };
  }

  /**
   * POST /auth/credentials, first call: 201 when the account has no verified credential yet
   * (nothing to sign with), otherwise a signed-retry challenge.
   */
  async startAddCredential(platformId: string, environment: Environment, body: CredentialCreateRequest): Promise<StoredOutcome> {
    return withTx(this.deps.db, async (trx) => {
      const account = await this.walletAccount(trx, platformId, body.accountId);
      const spec = await this.prepareCredential(trx, platformId, environment, account, body);
      if (!(await hasVerifiedCredential(trx, account.id))) {
        return { statusCode: 201, body: await this.addCredential(trx, environment, account, spec) };
      }
      const challenge = await this.deps.signed.issue(trx, {
        platformId,
        accountId: account.id,
        operation: OPERATIONS.addCredential,
        targetId: body.accountId,
        body,
        signer: { kind: 'session' },
        context: { environment, credential: spec },
        payload: registrationActivity(body, spec),
      });
      return { statusCode: 202, body: { ...challenge, type: body.type } };
    });
  }

  private async executeAddCredential(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const { environment, credential } = row.context as { environment: Environment; credential: NewCredentialSpec };
    const account = await this.walletAccount(trx, row.platform_id, accountRef(row.account_id));
    const existing = await activeCredentials(trx, account.id);
    // Rules 1–2 again: another credential of the type may have been added since the challenge.
    if ((credential.type === 'EMAIL_OTP' || credential.type === 'SMS_OTP') && existing.some((c) => c.type === credential.type)) {
      throw new AppError(`${credential.type}_CREDENTIAL_ALREADY_EXISTS`, `The account already has an ${credential.type} credential.`);
    }
    return { statusCode: 201, body: await this.addCredential(trx, environment, account, credential) };
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

  /** The verify body's `type` must be the credential's. */
  private checkType(credential: CredentialRow, type: CredentialType): void {
    if (type !== credential.type) {
      throw new AppError('INVALID_INPUT', `This credential is ${credential.type}.`, {
        details: { errors: [{ field: 'type', constraint: { enum: [credential.type] }, message: `must be ${credential.type}, the type of this credential` }] },
      });
    }
  }

  /**
   * POST /auth/credentials/{id}/challenge: a fresh one-time code (EMAIL_OTP, SMS_OTP) or a
   * session-creation challenge (PASSKEY); OAUTH has none.
   */
  async challenge(platformId: string, environment: Environment, credentialId: string, body: { clientPublicKey?: string }, settleDelaySeconds: number): Promise<StoredOutcome> {
    return withTx(this.deps.db, async (trx) => {
      const credential = await this.credential(trx, platformId, credentialId, true);
      if (credential.type === 'PASSKEY') return { statusCode: 200, body: await this.passkeyChallenge(trx, credential, body.clientPublicKey) };
      if (credential.type === 'OAUTH') {
        throw new AppError('INVALID_INPUT', 'OAUTH credentials need no challenge: call verify with a fresh OIDC token and clientPublicKey.', {
          details: { reason: 'NO_CHALLENGE_FOR_OAUTH' },
        });
      }
      return this.otp.challenge(trx, environment, credential, settleDelaySeconds);
    });
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
    const credential = await this.credential(trx, platformId, credentialId, true);
    this.checkType(credential, body.type);
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

  /** A session whose signing key Corridor makes and seals to the client key (OAUTH, PASSKEY). */
  private async sealedSession(trx: Tx, credential: CredentialRow, clientPublicKey: string): Promise<AuthSession> {
    const issued = this.deps.enclave.issueSessionKey(parseP256PublicKey(clientPublicKey).uncompressed);
    const now = this.clock.now();
    const session = await this.newSession(trx, credential, issued.publicKeyCompressed, now);
    if (!credential.verified_at) await updateCredential(trx, credential.id, { verified_at: now, updated_at: credential.updated_at });
    return toSession(session, credential, { encryptedSessionSigningKey: issued.encryptedSessionSigningKey });
  }

  /**
   * OAUTH verify (spec §4.4): a fresh token of the credential's identity whose nonce commits to
   * `clientPublicKey` opens a session whose key is sealed to that public key.
   */
  async verifyOauth(platformId: string, environment: Environment, credentialId: string, body: OauthVerifyRequest): Promise<AuthSession> {
    const credential = await this.credential(this.deps.db, platformId, credentialId);
    this.checkType(credential, body.type);
    const walletConfig = await this.walletConfig(platformId);
    const { claims, identity } = await this.deps.oidc.verify(body.oidcToken, {
      trusted: walletConfig?.oidcIssuers ?? [],
      now: this.clock.now(),
      checkSignature: environment === 'production',
    });
    const bound = credential.details as { iss: string; aud: string; sub: string };
    if (identity.iss !== bound.iss || identity.aud !== bound.aud || identity.sub !== bound.sub) {
      throw oidcRejected('identity', 'iss, aud and sub must be those of the credential');
    }
    if (claims.nonce !== nonceFor(body.clientPublicKey)) throw oidcRejected('nonce', 'nonce must be the SHA-256 (lowercase hex) of clientPublicKey');
    return withTx(this.deps.db, async (trx) => {
      await this.useToken(trx, platformId, body.oidcToken, claims.exp!);
      const locked = await this.credential(trx, platformId, credentialId, true);
      return this.sealedSession(trx, locked, body.clientPublicKey);
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
    const credential = await this.credential(this.deps.db, platformId, credentialId);
    this.checkType(credential, body.type);
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
    const credential = await this.credential(trx, row.platform_id, row.target_id, true);
    const { clientPublicKey, newCounter } = row.context as { clientPublicKey: string; newCounter: number };
    const stored = storedPasskey(credential);
    // Two assertions raced past verification: the counter may only move forward.
    if ((newCounter > 0 || stored.counter > 0) && newCounter <= stored.counter) throw passkeyRejected('counter', 'the signature counter did not increase');
    await updateCredential(trx, credential.id, { details: { ...credential.details, counter: newCounter }, updated_at: credential.updated_at });
    return { statusCode: 200, body: await this.sealedSession(trx, credential, clientPublicKey) };
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
