import { formatId } from '../../platform/ids.js';
import type { CredentialRow, SessionRow } from './repo.js';
import type { AuthMethod, AuthSession } from './schemas.js';

export const accountRef = (uuid: string) => formatId('InternalAccount', uuid);

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

/** A session as the API shows it; `encryptedSessionSigningKey` only in the answer that creates it. */
export function toSession(session: SessionRow, credential: Pick<CredentialRow, 'type' | 'nickname' | 'webauthn_id'>, extra: { encryptedSessionSigningKey?: string } = {}): AuthSession {
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
