import * as nodeCrypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { NotifiedCache } from '../../platform/cache.js';
import type { Clock } from '../../platform/clock.js';
import type { DbHandle, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { grants, unauthorized, type Authenticator, type Permission, type Principal } from '../../platform/http/auth.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { recordEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import {
  findCredentials,
  findLiveToken,
  insertToken,
  listLiveTokens,
  lockLiveToken,
  lockManagingTokens,
  markTokenDeleted,
  TOKEN_DELETED_CHANNEL,
  type CredentialRow,
  type LiveToken,
  type TokenRow,
} from './repo.js';
import type { ApiToken, ApiTokenCreateRequest, TokenListQuery } from './schemas.js';

export interface CreatedToken {
  token: ApiToken;
  /** Present once, at creation. */
  clientSecret: string;
}

const oneShotHash = (nodeCrypto as Partial<typeof nodeCrypto>).hash;

/**
 * Secrets are 32 random bytes, so a single SHA-256 is enough to store them: there is nothing
 * to brute-force, and verifying costs microseconds on the hot path of every request.
 */
function hashSecret(secret: string): Buffer {
  // The one-shot crypto.hash (Node ≥ 20.12) costs less than half of a Hash object, on every request.
  return oneShotHash ? oneShotHash('sha256', secret, 'buffer') : createHash('sha256').update(secret, 'utf8').digest();
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

/**
 * A token may create only tokens that can do no more than itself: every requested permission
 * must be one it holds (VIEW is held by every token). 403 FORBIDDEN otherwise, naming them.
 */
function checkGrantable(held: readonly Permission[], requested: readonly Permission[]): void {
  const beyond = [...new Set(requested)].filter((permission) => !grants(held, permission));
  if (beyond.length > 0) {
    throw new AppError('FORBIDDEN', `This API token cannot create a token with ${beyond.join(', ')}: a token can only give permissions it holds.`, {
      details: { missingPermissions: beyond },
    });
  }
}

/** The token a request authenticated with, in the form the principal names it. */
export interface CallingToken {
  tokenId: string;
  permissions: readonly Permission[];
}

/**
 * Creates a token. `grantedBy` is the token asking (over the API); the command line, which acts
 * for the operator, passes none. The asking token must still be live when the new one commits:
 * a request authenticated just before its token was deleted (a leaked token being revoked)
 * would otherwise leave a token of its making behind (401, as its next request would get).
 */
export async function createToken(
  trx: Tx,
  clock: Clock,
  platformId: string,
  input: ApiTokenCreateRequest,
  grantedBy?: CallingToken,
): Promise<CreatedToken> {
  if (grantedBy) {
    checkGrantable(grantedBy.permissions, input.permissions);
    if (!(await lockLiveToken(trx, platformId, parseId('Token', grantedBy.tokenId)!))) throw unauthorized();
  }
  const now = clock.now();
  const id = uuidv7(now.getTime());
  const clientSecret = randomBytes(32).toString('hex');
  const row: TokenRow = {
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
  const { rows, totalCount } = await listLiveTokens(
    db,
    platformId,
    {
      name: query.name,
      timeRange: query,
    },
    page,
  );
  return toPage(rows, page, toApiToken, totalCount);
}

/**
 * Returns the deleted token's uuid (its cache key). The platform's last token holding MANAGE
 * cannot go (400): without one no token can be created or deleted over the API again, and a
 * token can only give the permissions it holds. `deletedBy`, the token asking over the API
 * (which holds MANAGE), must still be live once the MANAGE tokens are locked: one deleted while
 * its request ran deletes nothing (401).
 */
export async function deleteToken(trx: Tx, clock: Clock, platformId: string, tokenId: string, deletedBy?: CallingToken): Promise<string> {
  const uuid = parseId('Token', tokenId);
  if (!uuid) throw notFound(tokenId);
  const managing = await lockManagingTokens(trx, platformId);
  if (deletedBy && !managing.includes(parseId('Token', deletedBy.tokenId)!)) throw unauthorized();
  if (managing.length === 1 && managing[0] === uuid) {
    throw new AppError('INVALID_INPUT', 'This is the platform’s only token with the MANAGE permission; it must keep one. Create another first.', {
      details: { reason: 'LAST_MANAGE_TOKEN' },
    });
  }
  const deleted = await markTokenDeleted(trx, platformId, uuid, clock.now());
  if (!deleted) throw notFound(tokenId);
  await recordEvent(trx, clock, { platformId, type: 'API_TOKEN.DELETED', resourceId: tokenId, data: { id: tokenId } });
  return deleted;
}

/** The token uuid a Basic user name names: `Token:<uuid>` or the clientId (the uuid's hex digits). */
function tokenUuid(username: string): string | undefined {
  if (username.startsWith('Token:')) return parseId('Token', username);
  const hex = /^[0-9a-f]{32}$/.test(username) ? username : undefined;
  return hex && `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Verifies Basic credentials against stored token hashes. Verified tokens are cached per
 * process so an authenticated request costs no extra query; a delete evicts the entry here at
 * once and in every other process through LISTEN/NOTIFY (see NotifiedCache).
 */
export class TokenAuthenticator implements Authenticator {
  private readonly cache: NotifiedCache<CredentialRow>;

  constructor(
    private readonly handle: DbHandle,
    ttlMs: number,
  ) {
    this.cache = new NotifiedCache(handle, TOKEN_DELETED_CHANNEL, ttlMs);
  }

  start(): Promise<void> {
    return this.cache.start();
  }

  evict(tokenUuid: string): void {
    this.cache.evict(tokenUuid);
  }

  async authenticate(username: string, secret: string): Promise<Principal | undefined> {
    const uuid = tokenUuid(username);
    if (!uuid) return undefined;
    const row = await this.cache.getOrLoad(uuid, async () => {
      const found = await findCredentials(this.handle.db, uuid);
      return found && { ...found, secret_hash: Buffer.from(found.secret_hash) };
    });
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
}
