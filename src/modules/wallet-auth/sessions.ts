import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { parseId, uuidv7 } from '../../platform/ids.js';
import { checkClientPublicKey, loadActiveSession, loadActiveSessionOf, OPERATIONS, type WalletAuthDeps } from './context.js';
import {
  activeSessions,
  findWalletAccount,
  insertSession,
  revokeSession,
  updateCredential,
  type CredentialRow,
  type CredentialType,
  type SessionRow,
  type SignedRequestRow,
  type StoredOutcome,
} from './repo.js';
import type { AuthSession, SessionRefreshRequest, SignedRequestChallenge } from './schemas.js';
import { toSession } from './views.js';

/**
 * A wallet's sessions once open (spec §4.4–§4.5): how one is made, listed, revoked and
 * refreshed. Logins (logins.ts) open them.
 */
export class SessionFlows {
  constructor(private readonly deps: WalletAuthDeps) {
    deps.signed.register(OPERATIONS.revokeSession, { execute: (trx, row) => this.executeRevoke(trx, row) });
    deps.signed.register(OPERATIONS.refreshSession, {
      execute: (trx, row) => this.executeRefresh(trx, row),
      checkBody: (body) => checkClientPublicKey((body as SessionRefreshRequest).clientPublicKey, 'clientPublicKey'),
    });
  }

  /** A session of `credential` signing with `publicKey` (compressed hex), for the configured lifetime. */
  async open(trx: Tx, credential: CredentialRow, publicKey: string, now: Date): Promise<SessionRow> {
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

  /** A session whose signing key Corridor makes and seals to the client key (OAUTH, PASSKEY). */
  async openSealed(trx: Tx, credential: CredentialRow, clientPublicKey: string): Promise<AuthSession> {
    // Checked when the request arrived; again here for challenges stored before that check (an AppError is a stored refusal, not a 500).
    const issued = await this.deps.enclave.issueSessionKey(checkClientPublicKey(clientPublicKey, 'clientPublicKey').uncompressed);
    const now = this.deps.clock.now();
    const session = await this.open(trx, credential, issued.publicKeyCompressed, now);
    if (!credential.verified_at) await updateCredential(trx, credential.id, { verified_at: now, updated_at: credential.updated_at });
    return toSession(session, credential, { encryptedSessionSigningKey: issued.encryptedSessionSigningKey });
  }

  async list(db: DbOrTx, platformId: string, accountId: string): Promise<{ data: AuthSession[] }> {
    const uuid = parseId('InternalAccount', accountId)!;
    const account = await findWalletAccount(db, platformId, uuid);
    if (!account) return { data: [] };
    return { data: (await activeSessions(db, uuid, this.deps.clock.now())).map((s) => toSession(s, s)) };
  }

  /** DELETE /auth/sessions/{id}, first call: any active session of the account may sign, itself included. */
  async startRevoke(platformId: string, sessionId: string): Promise<SignedRequestChallenge & { type: CredentialType }> {
    return withTx(this.deps.db, async (trx) => {
      const { session, credential } = await loadActiveSessionOf(trx, this.deps.clock, platformId, sessionId);
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

  private async executeRevoke(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    await revokeSession(trx, parseId('Session', row.target_id)!, this.deps.clock.now());
    return { statusCode: 204 };
  }

  /** POST /auth/sessions/{id}/refresh, first call: signed by that session's own key. */
  async startRefresh(platformId: string, sessionId: string, body: SessionRefreshRequest): Promise<SignedRequestChallenge> {
    checkClientPublicKey(body.clientPublicKey, 'clientPublicKey');
    return withTx(this.deps.db, async (trx) => {
      const session = await loadActiveSession(trx, this.deps.clock, platformId, sessionId);
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

  private async executeRefresh(trx: Tx, row: SignedRequestRow): Promise<StoredOutcome> {
    const { credential } = await loadActiveSessionOf(trx, this.deps.clock, row.platform_id, row.target_id, true);
    const { clientPublicKey } = row.context.body as SessionRefreshRequest;
    const client = checkClientPublicKey(clientPublicKey, 'clientPublicKey');
    const now = this.deps.clock.now();
    // Compressed: the client holds the private key. Uncompressed: we make one and seal it to the client.
    if (clientPublicKey.length === 66) {
      const fresh = await this.open(trx, credential, client.compressed.toString('hex'), now);
      return { statusCode: 201, body: toSession(fresh, credential) };
    }
    const issued = await this.deps.enclave.issueSessionKey(client.uncompressed);
    const fresh = await this.open(trx, credential, issued.publicKeyCompressed, now);
    return { statusCode: 201, body: toSession(fresh, credential, { encryptedSessionSigningKey: issued.encryptedSessionSigningKey }) };
  }
}
