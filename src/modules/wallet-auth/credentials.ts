import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { violatedUniqueIndex } from '../../platform/db/unique-violation.js';
import { AppError } from '../../platform/errors.js';
import { parseId, uuidv7 } from '../../platform/ids.js';
import { getConfigRow } from '../config/index.js';
import { checkContactFree, lockContact } from './contact-credentials.js';
import { loadCredential, loadWalletAccount, OPERATIONS, spendOidcToken, type WalletAuthDeps } from './context.js';
import type { OidcVerified } from './oidc.js';
import type { Environment, OneTimeCodes, OtpDelivery } from './otp.js';
import { passkeySettings, verifyRegistration } from './passkey.js';
import {
  activeCredentials,
  findWalletAccount,
  insertCredential,
  lockCredentialSet,
  lockCustomerContacts,
  revokeSessionsOfCredential,
  updateCredential,
  type CredentialRow,
  type CredentialType,
  type SignedRequestRow,
  type StoredOutcome,
  type WalletAccount,
} from './repo.js';
import type { OutcomeWithFollowUp } from './signed-retry.js';
import type { AuthMethod, AuthMethodResponse, CredentialCreateRequest, SignedRequestChallenge } from './schemas.js';
import { accountRef, toAuthMethod } from './views.js';

/** The unique indexes that keep spec §2.4 rules 1–4 (migrations 0004, 0039). */
const UNIQUE_CREDENTIAL_INDEXES = ['auth_credentials_one_email_otp', 'auth_credentials_one_sms_otp', 'auth_credentials_passkey_once', 'auth_credentials_oauth_identity'] as const;

/** The customer contact an OTP credential is tied to: its kind and the customer field that holds it. */
const OTP_CONTACT = { EMAIL_OTP: { kind: 'email', field: 'email' }, SMS_OTP: { kind: 'phone', field: 'phoneNumber' } } as const;

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

/** Spec §2.4 rule 4: an OIDC identity (iss, aud, sub) is at most one active OAUTH credential of an account. */
function oauthIdentityTaken(existing: CredentialRow[], identity: { iss: string; aud: string; sub: string }): boolean {
  return existing.some((c) => c.type === 'OAUTH' && c.details.iss === identity.iss && c.details.sub === identity.sub && c.details.aud === identity.aud);
}

/** A credential just inserted, and the delivery of an OTP credential's first code, sent once the insert has committed. */
interface Added {
  body: AuthMethodResponse;
  delivery?: OtpDelivery;
}

function identityRegistered(): AppError {
  return new AppError('INVALID_INPUT', 'This OIDC identity is already an OAUTH credential of the account.', {
    details: { errors: [{ field: 'oidcToken', message: 'identity already registered' }] },
  });
}

/**
 * Adding, listing and revoking a wallet's credentials (spec §2.4, §4.2, §4.5): what may be
 * added, when the end user must sign for it, and that an account keeps at least one.
 */
export class CredentialFlows {
  constructor(
    private readonly deps: WalletAuthDeps,
    private readonly otp: OneTimeCodes,
  ) {
    deps.signed.register(OPERATIONS.addCredential, { execute: (trx, row) => this.executeAdd(trx, row) });
    deps.signed.register(OPERATIONS.revokeCredential, { execute: (trx, row) => this.executeRevoke(trx, row) });
  }

  async list(db: DbOrTx, platformId: string, accountId: string): Promise<{ data: AuthMethod[] }> {
    const uuid = parseId('InternalAccount', accountId)!;
    const account = await findWalletAccount(db, platformId, uuid);
    return { data: account ? (await activeCredentials(db, uuid)).map(toAuthMethod) : [] };
  }

  /**
   * An OAUTH add's token, verified before the add's transaction opens: verifying may fetch the
   * issuer's JWKS (up to 5 s), which must hold no connection or lock meanwhile (on the embedded
   * engine every other request would wait for it). The wallet config is read on the pool, as
   * OAUTH verify does (`LoginFlows.verifyOauth`).
   */
  private async verifyOidcToken(platformId: string, environment: Environment, oidcToken: string): Promise<OidcVerified> {
    const walletConfig = (await getConfigRow(this.deps.db, platformId)).embedded_wallet_config ?? undefined;
    return this.deps.oidc
      .verify(oidcToken, { trusted: walletConfig?.oidcIssuers ?? [], now: this.deps.clock.now(), checkSignature: environment === 'production' })
      .catch((error: unknown) => {
        // At registration an untrusted issuer or audience is a bad request, not a failed login.
        if (error instanceof AppError && (error.details?.check === 'issuer' || error.details?.check === 'audience')) {
          const message = error.details.check === 'issuer' ? 'issuer is not trusted' : 'audience is not a client id of this platform';
          throw new AppError('INVALID_INPUT', error.message, { details: { errors: [{ field: 'oidcToken', message }] } });
        }
        throw error;
      });
  }

  /**
   * What a new credential will be, checked against spec §2.4 rules 1–4: the contact of an OTP
   * credential, the identity of an OAUTH one (`verified` before the transaction; its token used
   * up here), the verified public key of a PASSKEY one.
   */
  private async prepare(trx: Tx, platformId: string, account: WalletAccount, body: CredentialCreateRequest, verified: OidcVerified | undefined): Promise<NewCredentialSpec> {
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
        const { field, kind } = OTP_CONTACT[body.type];
        const contact = kind === 'email' ? account.email : account.phone_number;
        if (!contact) {
          throw new AppError('MISSING_MANDATORY_USER_INFO', `The customer has no ${field} to tie an ${body.type} credential to.`, { details: { field } });
        }
        // Locked as a write would be: an account without credentials is answered 201 in this transaction.
        await lockContact(trx, platformId, kind, contact);
        await checkContactFree(trx, platformId, account.customer_id, kind, contact);
        return { type: body.type, nickname: contact, details: {} };
      }
      case 'OAUTH': {
        const { identity, claims, jwksUri } = verified!;
        if (oauthIdentityTaken(existing, identity)) throw identityRegistered();
        await spendOidcToken(trx, this.deps.clock, platformId, body.oidcToken, claims.exp!);
        // An issuer the platform configured: the credential keeps the JWKS in force now, so a later
        // change of the platform's config cannot hand its logins to other keys (README, OAUTH).
        return {
          type: 'OAUTH',
          nickname: identity.email ?? identity.sub,
          details: { iss: identity.iss, aud: identity.aud, sub: identity.sub, ...(jwksUri ? { jwksUri } : {}) },
        };
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

  /** Inserts the credential; an OTP one gets its first code, whose `delivery` the caller sends after committing (`deliverFirstCode`). */
  private async insert(trx: Tx, environment: Environment, account: WalletAccount, spec: NewCredentialSpec): Promise<Added> {
    const now = this.deps.clock.now();
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
      // Two concurrent adds of one OTP type, one passkey or one OIDC identity: the unique index
      // decides, with the code the pre-check (`prepare`, `executeAdd`) gives.
      switch (violatedUniqueIndex(error, UNIQUE_CREDENTIAL_INDEXES)) {
        case 'auth_credentials_one_email_otp':
          throw new AppError('EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS', 'The account already has an EMAIL_OTP credential.');
        case 'auth_credentials_one_sms_otp':
          throw new AppError('SMS_OTP_CREDENTIAL_ALREADY_EXISTS', 'The account already has an SMS_OTP credential.');
        case 'auth_credentials_passkey_once':
          throw new AppError('PASSKEY_CREDENTIAL_ALREADY_EXISTS', 'This WebAuthn credential is already registered on the account.');
        case 'auth_credentials_oauth_identity':
          throw identityRegistered();
        default:
          throw error;
      }
    });
    if (spec.type !== 'EMAIL_OTP' && spec.type !== 'SMS_OTP') return { body: toAuthMethod(row) };
    const { bundle, delivery } = await this.otp.issue(trx, environment, row, 0);
    return { body: { ...toAuthMethod(row), otpEncryptionTargetBundle: bundle }, ...(delivery ? { delivery } : {}) };
  }

  /**
   * Sends a new OTP credential's first code, after the add committed. The credential is added
   * whatever the provider does, so a failed send does not fail the add (a 503 would tell the
   * client nothing was added, and its retry would find the credential there): the code is
   * withdrawn, the failure logged, and the 201 carries no `otpEncryptionTargetBundle`, so the
   * end user calls challenge for a code (spec §4.4: the bundle is used "when present").
   * Answers the body to give: `added.body`, or that body without the bundle.
   */
  private async deliverFirstCode(added: Added): Promise<AuthMethodResponse> {
    if (!added.delivery) return added.body;
    try {
      await this.otp.deliver(added.delivery);
      return added.body;
    } catch (error) {
      this.deps.logger?.warn({ err: error, credentialId: added.body.id }, 'the first code of a new OTP credential could not be sent; it was withdrawn, and challenge sends a new one');
      const { otpEncryptionTargetBundle: _withdrawn, ...withoutCode } = added.body;
      return withoutCode;
    }
  }

  /**
   * POST /auth/credentials, first call (spec §4.2): 201 only when the account has no active
   * credential at all; as soon as it has one — every wallet starts with its EMAIL_OTP — a
   * signed-retry challenge that an active session of one of its credentials must sign, even
   * when none was ever opened: the end user logs in first (EMAIL_OTP verify), then adds. So a
   * platform backend can never attach its own credential to a wallet it does not control.
   */
  async startAdd(platformId: string, environment: Environment, body: CredentialCreateRequest): Promise<StoredOutcome> {
    let verified: OidcVerified | undefined;
    if (body.type === 'OAUTH') {
      // An unknown account is 404 before the token is looked at, as inside the transaction below.
      await loadWalletAccount(this.deps.db, platformId, body.accountId);
      verified = await this.verifyOidcToken(platformId, environment, body.oidcToken);
    }
    const started = await withTx<{ outcome: StoredOutcome } | { added: Added }>(this.deps.db, async (trx) => {
      const account = await loadWalletAccount(trx, platformId, body.accountId);
      const spec = await this.prepare(trx, platformId, account, body, verified);
      if ((await activeCredentials(trx, account.id)).length === 0) return { added: await this.insert(trx, environment, account, spec) };
      const challenge = await this.deps.signed.issue(trx, {
        platformId,
        accountId: account.id,
        operation: OPERATIONS.addCredential,
        // Nothing in the path: the account is in the body, which the challenge binds, so a retry
        // naming another account is a body mismatch (spec §5 rule 2), not an unknown Request-Id.
        targetId: '',
        body,
        signer: { kind: 'session' },
        context: { environment, credential: spec },
        payload: registrationActivity(body, spec),
      });
      return { outcome: { statusCode: 202, body: { ...challenge, type: body.type } } };
    });
    return 'outcome' in started ? started.outcome : { statusCode: 201, body: await this.deliverFirstCode(started.added) };
  }

  private async executeAdd(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome | OutcomeWithFollowUp> {
    const { environment, credential } = row.context as { environment: Environment; credential: NewCredentialSpec };
    const account = await loadWalletAccount(trx, row.platform_id, accountRef(row.account_id));
    const existing = await activeCredentials(trx, account.id);
    const { type, nickname } = credential;
    if (type === 'EMAIL_OTP' || type === 'SMS_OTP') {
      // Rules 1–2 again: another credential of the type may have been added since the challenge.
      if (existing.some((c) => c.type === type)) {
        throw new AppError(`${type}_CREDENTIAL_ALREADY_EXISTS`, `The account already has an ${type} credential.`);
      }
      const { kind } = OTP_CONTACT[type];
      // The contact's lock before the customer row (README, Lock order).
      await lockContact(trx, row.platform_id, kind, nickname);
      await this.checkContactUnchanged(trx, account, type, nickname);
      // And no other customer's wallet has taken the contact since.
      await checkContactFree(trx, row.platform_id, account.customer_id, kind, nickname);
    }
    // Rules 3–4 again: the same passkey or OIDC identity may have been added by another request since.
    if (credential.type === 'OAUTH' && oauthIdentityTaken(existing, credential.details as { iss: string; aud: string; sub: string })) throw identityRegistered();
    if (credential.type === 'PASSKEY' && existing.some((c) => c.type === 'PASSKEY' && c.webauthn_id === credential.webauthnId)) {
      throw new AppError('PASSKEY_CREDENTIAL_ALREADY_EXISTS', 'This WebAuthn credential is already registered on the account.');
    }
    const added = await this.insert(trx, environment, account, credential);
    const outcome = { statusCode: 201, body: added.body };
    if (!added.delivery) return outcome;
    // The code is sent once the signed operation's transaction commits; a 201 without the bundle replaces the stored one if it could not be.
    return {
      outcome,
      afterCommit: async () => {
        const body = await this.deliverFirstCode(added);
        return body === added.body ? undefined : { statusCode: 201, body };
      },
    };
  }

  /**
   * The end user signed for the contact the customer had at the 202 (the activity names it); a
   * contact changed since then is not what was authorised, and adding the credential for either
   * contact would tie it to an address the signature did not name or the customer no longer
   * has. Refused with 409 CONFLICT (`details.reason` CONTACT_CHANGED): the spec names no code,
   * and the request was validly signed, only for a state that no longer holds (README).
   */
  private async checkContactUnchanged(trx: Tx, account: WalletAccount, type: 'EMAIL_OTP' | 'SMS_OTP', contact: string): Promise<void> {
    const { field, kind } = OTP_CONTACT[type];
    const contacts = await lockCustomerContacts(trx, account.customer_id);
    if ((kind === 'email' ? contacts.email : contacts.phone_number) === contact) return;
    throw new AppError('CONFLICT', `The customer's ${field} changed after this ${type} credential was requested for ${contact}; send the request again for a new challenge.`, {
      details: { field, reason: 'CONTACT_CHANGED' },
    });
  }

  /** DELETE /auth/credentials/{id}, first call. The last credential cannot go (spec §2.4 rule 5). */
  async startRevoke(platformId: string, credentialId: string): Promise<SignedRequestChallenge & { type: CredentialType }> {
    return withTx(this.deps.db, async (trx) => {
      const credential = await loadCredential(trx, platformId, credentialId);
      await this.checkNotLast(trx, credential);
      const challenge = await this.deps.signed.issue(trx, {
        platformId,
        accountId: credential.account_id,
        operation: OPERATIONS.revokeCredential,
        targetId: credentialId,
        body: {},
        // A credential cannot authorise its own revocation (spec §4.5 rule 2).
        signer: { kind: 'session', excludeCredentialId: credential.id },
        writesCredentials: [credential.id],
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

  private async executeRevoke(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    // Rule 5 under concurrency: two revocations must not each count the other's credential. The
    // retry took these locks before checking the signer (`writesCredentials`); taken again here
    // (held already, so no wait) for a challenge issued before it named what it writes.
    await lockCredentialSet(trx, row.account_id);
    const credential = await loadCredential(trx, row.platform_id, row.target_id, true);
    await this.checkNotLast(trx, credential);
    const now = this.deps.clock.now();
    await updateCredential(trx, credential.id, { revoked_at: now, updated_at: now });
    await revokeSessionsOfCredential(trx, credential.id, now);
    return { statusCode: 204 };
  }
}
