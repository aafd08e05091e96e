import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, RefusedAddressError, refusedRange, systemResolver, type Resolver } from '../../platform/address-guard.js';

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
  return (href, init) => {
    let url: URL;
    try {
      url = new URL(href);
    } catch {
      return Promise.reject(new JwksFetchError('the JWKS location is not a URL'));
    }
    if (options.guard) {
      if (url.protocol !== 'https:') return Promise.reject(new JwksFetchError('the JWKS location must be an https URL'));
      const literal = url.hostname.replace(/^\[|\]$/g, '');
      const range = isIP(literal) ? refusedRange(literal) : undefined;
      if (range) return Promise.reject(new JwksFetchError(new RefusedAddressError(literal, range).message));
    } else if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      return Promise.reject(new JwksFetchError('the JWKS location must be an http(s) URL'));
    }
    const signal = init.signal ?? undefined;
    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const finish = (error: Error | undefined, response?: Response) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve(response!);
      };
      // jose maps an error named TimeoutError (the signal's reason) to JWKSTimeout.
      const onAbort = () => {
        outgoing.destroy();
        finish(signal?.reason instanceof Error ? signal.reason : new JwksFetchError('the JWKS request was aborted'));
      };
      const outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
        url,
        {
          method: 'GET',
          headers: { accept: 'application/json, application/jwk-set+json' },
          ...(options.guard ? { lookup: guardedLookup(resolver) } : {}),
        },
        (response: IncomingMessage) => {
          if (response.statusCode !== 200) {
            response.destroy();
            return finish(new JwksFetchError(`the JWKS location answered HTTP ${response.statusCode}`));
          }
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) {
              response.destroy();
              return finish(new JwksFetchError(`the JWKS is larger than ${maxBytes} bytes`));
            }
            chunks.push(chunk);
          });
          response.on('end', () => finish(undefined, new Response(Buffer.concat(chunks), { status: 200, headers: { 'content-type': 'application/json' } })));
          response.on('error', () => finish(new JwksFetchError('the JWKS answer was cut off')));
          response.on('close', () => finish(new JwksFetchError('the JWKS answer was cut off')));
        },
      );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (error instanceof RefusedAddressError) return finish(new JwksFetchError(error.message));
        finish(new JwksFetchError(error.code ? `the JWKS location is unreachable (${error.code})` : 'the JWKS location is unreachable'));
      });
      outgoing.end();
    });
  };
}
