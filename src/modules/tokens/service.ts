import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import type { DbHandle, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import type { Authenticator, Permission, Principal } from '../../platform/http/auth.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { recordEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import {
  findCredentials,
  findLiveToken,
  insertToken,
  listLiveTokens,
  markTokenDeleted,
  TOKEN_DELETED_CHANNEL,
  type CredentialRow,
  type LiveToken,
} from './repo.js';
import type { ApiToken, ApiTokenCreateRequest, TokenListQuery } from './schemas.js';

export interface CreatedToken {
  token: ApiToken;
  /** Present once, at creation. */
  clientSecret: string;
}

/**
 * Secrets are 32 random bytes, so a single SHA-256 is enough to store them: there is nothing
 * to brute-force, and verifying costs microseconds on the hot path of every request.
 */
function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

function toApiToken(row: LiveToken): ApiToken {
  return {
    id: formatId('Token', row.id),
    name: row.name,
    permissions: row.permissions,
    clientId: row.client_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function notFound(tokenId: string): AppError {
  return new AppError('TOKEN_NOT_FOUND', `Token ${tokenId} was not found.`);
}

export async function createToken(trx: Tx, clock: Clock, platformId: string, input: ApiTokenCreateRequest): Promise<CreatedToken> {
  const now = clock.now();
  const id = uuidv7(now.getTime());
  const clientSecret = randomBytes(32).toString('hex');
  const row: LiveToken & { deleted_at: null } = {
    id,
    platform_id: platformId,
    name: input.name,
    permissions: [...new Set(input.permissions)] as Permission[],
    client_id: id.replace(/-/g, ''),
    secret_hash: hashSecret(clientSecret),
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  await insertToken(trx, row);
  const token = toApiToken(row);
  await recordEvent(trx, clock, { platformId, type: 'API_TOKEN.CREATED', resourceId: token.id, data: token });
  return { token: { ...token, clientSecret }, clientSecret };
}

export async function getToken(db: DbOrTx, platformId: string, tokenId: string): Promise<ApiToken> {
  const uuid = parseId('Token', tokenId);
  const row = uuid && (await findLiveToken(db, platformId, uuid));
  if (!row) throw notFound(tokenId);
  return toApiToken(row);
}

export async function listTokens(db: DbOrTx, platformId: string, query: TokenListQuery): Promise<Page<ApiToken>> {
  const page = pageRequest(query);
  const date = (v?: string) => (v ? new Date(v) : undefined);
  const { rows, totalCount } = await listLiveTokens(
    db,
    platformId,
    {
      name: query.name,
      createdAfter: date(query.createdAfter),
      createdBefore: date(query.createdBefore),
      updatedAfter: date(query.updatedAfter),
      updatedBefore: date(query.updatedBefore),
    },
    page,
  );
  return toPage(rows, page, toApiToken, totalCount);
}

export async function deleteToken(trx: Tx, clock: Clock, platformId: string, tokenId: string): Promise<string> {
  const uuid = parseId('Token', tokenId);
  const clientId = uuid && (await markTokenDeleted(trx, platformId, uuid, clock.now()));
  if (!clientId) throw notFound(tokenId);
  await recordEvent(trx, clock, { platformId, type: 'API_TOKEN.DELETED', resourceId: tokenId, data: { id: tokenId } });
  return clientId;
}

interface CacheEntry {
  row: CredentialRow;
  expiresAt: number;
}

const CACHE_LIMIT = 10_000;

/**
 * Verifies Basic credentials against stored token hashes. Verified tokens are cached per
 * process so an authenticated read costs no extra query; a delete evicts the entry here at
 * once and in every other process through LISTEN/NOTIFY. While the listener is disconnected
 * the cache is bypassed, so a missed notification can never keep a deleted token alive.
 */
export class TokenAuthenticator implements Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private listening = false;

  constructor(
    private readonly handle: DbHandle,
    private readonly ttlMs: number,
  ) {}

  async start(): Promise<void> {
    await this.handle.listen(
      TOKEN_DELETED_CHANNEL,
      (clientId) => this.evict(clientId),
      () => {
        this.listening = false;
        this.cache.clear();
      },
    );
    this.listening = true;
  }

  evict(clientId: string): void {
    this.cache.delete(clientId);
    for (const [key, entry] of this.cache) if (entry.row.id.replace(/-/g, '') === clientId) this.cache.delete(key);
  }

  async authenticate(username: string, secret: string): Promise<Principal | undefined> {
    const row = await this.lookup(username);
    if (!row) return undefined;
    const presented = hashSecret(secret);
    if (presented.length !== row.secret_hash.length || !timingSafeEqual(presented, row.secret_hash)) return undefined;
    return {
      platformId: row.platform_id,
      environment: row.environment,
      tokenId: formatId('Token', row.id),
      permissions: row.permissions,
    };
  }

  private async lookup(username: string): Promise<CredentialRow | undefined> {
    const now = Date.now();
    const cached = this.cache.get(username);
    if (cached && cached.expiresAt > now && this.listening) return cached.row;
    const uuid = parseId('Token', username);
    const row = uuid
      ? await findCredentials(this.handle.db, 'id', uuid)
      : /^[0-9a-f]{32}$/.test(username)
        ? await findCredentials(this.handle.db, 'client_id', username)
        : undefined;
    if (row && this.listening && this.ttlMs > 0) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(username, { row: { ...row, secret_hash: Buffer.from(row.secret_hash) }, expiresAt: now + this.ttlMs });
    } else {
      this.cache.delete(username);
    }
    return row;
  }
}
