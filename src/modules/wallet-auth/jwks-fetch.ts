import { systemResolver, type Resolver } from '../../platform/address-guard.js';
import { guardedRequest } from '../../platform/guarded-request.js';

export type { Resolver };

/** The most of a JWKS Corridor reads: an issuer publishes a handful of keys, a few KiB. */
export const MAX_JWKS_BYTES = 64 * 1024;

/** Why a JWKS could not be fetched (refused address, not https, not 200, too large, unreachable). */
export class JwksFetchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwksFetchError';
  }
}

/** jose's `customFetch` shape: GET `url`, abort on `signal` (its timeout), answer a Response. */
export type JwksFetch = (url: string, init: { signal?: AbortSignal | null; headers?: HeadersInit }) => Promise<Response>;

export interface JwksFetchOptions {
  /**
   * Production: https only, and the connection goes only to addresses the address guard
   * accepted (webhooks' and UMA's: no loopback, private, link-local or metadata address; the host
   * is resolved once, so a DNS answer cannot change between check and connect).
   */
  guard: boolean;
  resolver?: Resolver;
  maxBytes?: number;
}

/**
 * The fetch a JWKS that a platform configured goes through (an issuer Corridor does not know):
 * no redirects, at most `maxBytes` read (more is a failure, not a truncated parse), only a 200
 * is an answer, and under the guard only https to a public address. The deadline is the caller's
 * `signal` (jose's `timeoutDuration`). Every failure is a JwksFetchError.
 */
export function guardedJwksFetch(options: JwksFetchOptions): JwksFetch {
  const resolver = options.resolver ?? systemResolver;
  const maxBytes = options.maxBytes ?? MAX_JWKS_BYTES;
  return async (href, init) => {
    let url: URL;
    try {
      url = new URL(href);
    } catch {
      throw new JwksFetchError('the JWKS location is not a URL');
    }
    if (options.guard && url.protocol !== 'https:') throw new JwksFetchError('the JWKS location must be an https URL');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new JwksFetchError('the JWKS location must be an http(s) URL');
    const answer = await guardedRequest({
      url,
      method: 'GET',
      accept: 'application/json, application/jwk-set+json',
      maxBytes,
      // The deadline is jose's (`timeoutDuration`): an error named TimeoutError, its signal's reason, is its JWKSTimeout.
      ...(init.signal ? { signal: init.signal } : {}),
      guard: options.guard,
      resolver,
    });
    if (!answer.ok) {
      if (answer.aborted instanceof Error) throw answer.aborted;
      throw new JwksFetchError(answer.reason.startsWith('request failed') ? `the JWKS location is unreachable${answer.reason.slice('request failed'.length)}` : answer.reason);
    }
    if (answer.status !== 200) throw new JwksFetchError(`the JWKS location answered HTTP ${answer.status}`);
    return new Response(new Uint8Array(answer.body), { status: 200, headers: { 'content-type': 'application/json' } });
  };
}
