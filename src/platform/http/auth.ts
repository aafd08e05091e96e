import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

export const PERMISSIONS = ['VIEW', 'TRANSACT', 'MANAGE'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface Principal {
  platformId: string;
  environment: 'sandbox' | 'production';
  tokenId: string;
  permissions: Permission[];
}

/** 403 FORBIDDEN unless the caller is a sandbox platform: `what` names the operation, `hint` what production does instead. */
function requireSandbox(principal: Principal, what: string, hint?: string): void {
  if (principal.environment !== 'sandbox') throw new AppError('FORBIDDEN', `${what} is only available to sandbox platforms${hint ? `; ${hint}` : ''}.`);
}

export interface Authenticator {
  /** The principal for these credentials, or undefined for any failure (never says which). */
  authenticate(username: string, secret: string): Promise<Principal | undefined>;
}

/**
 * Splits an `Authorization: Basic …` header. The user part is the token's clientId; the
 * token id itself (`Token:<uuid>`) is accepted too, although it contains a colon, because the
 * spec names the pair `<api token id>:<secret>`.
 */
export function parseBasic(header: string | undefined): { username: string; secret: string } | undefined {
  if (!header) return undefined;
  const match = /^Basic[ ]+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const tokenIdLength = 'Token:'.length + 36;
  const split = decoded.startsWith('Token:') && decoded[tokenIdLength] === ':' ? tokenIdLength : decoded.indexOf(':');
  if (split <= 0) return undefined;
  const username = decoded.slice(0, split);
  const secret = decoded.slice(split + 1);
  if (!secret || username.length > 64 || secret.length > 256) return undefined;
  return { username, secret };
}

/** Every authentication failure, also a token deleted while its request ran (tokens module). */
export function unauthorized(): AppError {
  return new AppError('UNAUTHORIZED', 'Missing or invalid API credentials.', {
    headers: { 'www-authenticate': 'Basic realm="corridor", charset="UTF-8"' },
  });
}

export function grants(held: readonly Permission[], needed: Permission): boolean {
  // Every token may read; writing needs the named permission.
  return needed === 'VIEW' || held.includes(needed);
}

function requiredPermission(request: FastifyRequest, configured: Permission | undefined): Permission {
  if (configured) return configured;
  return request.method === 'GET' || request.method === 'HEAD' ? 'VIEW' : 'MANAGE';
}

/** HTTP Basic on every route of the scope unless the route says `config: {auth: false}`. */
export function registerBasicAuth(app: FastifyInstance, authenticator: Authenticator): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request) => {
    // request.routeOptions builds a new object on every read: once per request.
    const route = request.routeOptions;
    if (route.config.auth === false || !route.url) return;
    const credentials = parseBasic(request.headers.authorization);
    const principal = credentials && (await authenticator.authenticate(credentials.username, credentials.secret));
    if (!principal) throw unauthorized();
    const needed = requiredPermission(request, route.config.permission);
    if (!grants(principal.permissions, needed)) {
      throw new AppError('FORBIDDEN', `This API token lacks the ${needed} permission.`, { details: { requiredPermission: needed } });
    }
    if (route.config.sandboxOnly) requireSandbox(principal, route.config.sandboxOnly.what, route.config.sandboxOnly.hint);
    request.principal = principal;
  });
}
