import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { guardedLookup, RefusedAddressError, refusedLiteral, type Resolver } from './address-guard.js';

export interface GuardedRequest {
  url: URL;
  method: 'GET' | 'POST';
  body?: string;
  accept: string;
  /** The most of the answer read: more is a failure, not a truncated parse. */
  maxBytes: number;
  /** One deadline for the whole exchange, and/or the caller's signal. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Refuse loopback, private, link-local and metadata addresses (address-guard.ts). */
  guard: boolean;
  resolver: Resolver;
}

export type GuardedResponse = { ok: true; status: number; body: Buffer } | { ok: false; reason: string; aborted?: unknown };

/**
 * One request to a server someone else named (another VASP, an identity provider's JWKS): no
 * redirects (a 3xx is just an answer), at most `maxBytes` read, and under the guard only to
 * addresses it accepted (resolved once, so a DNS answer cannot change between check and
 * connect). Never throws; `aborted` carries the signal's reason when the caller's signal ended it.
 */
export function guardedRequest(request: GuardedRequest): Promise<GuardedResponse> {
  const { url, signal } = request;
  // node:http throws at once on any other scheme: an answer, not an exception.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve({ ok: false, reason: `${url.protocol} is not http or https` });
  const refused = request.guard ? refusedLiteral(url.hostname) : undefined;
  if (refused) return Promise.resolve({ ok: false, reason: new RefusedAddressError(refused.address, refused.range).message });
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: GuardedResponse) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const onAbort = () => {
      outgoing.destroy();
      done({ ok: false, reason: 'the request was aborted', aborted: signal?.reason });
    };
    const outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      {
        method: request.method,
        headers: {
          accept: request.accept,
          ...(request.body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(request.body) } : {}),
        },
        ...(request.guard ? { lookup: guardedLookup(request.resolver) } : {}),
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > request.maxBytes) {
            response.destroy();
            return done({ ok: false, reason: `the answer is larger than ${request.maxBytes} bytes` });
          }
          chunks.push(chunk);
        });
        response.on('end', () => done({ ok: true, status: response.statusCode!, body: Buffer.concat(chunks) }));
        response.on('error', () => done({ ok: false, reason: 'the answer was cut off' }));
        response.on('close', () => done({ ok: false, reason: 'the answer was cut off' }));
      },
    );
    const timer = request.timeoutMs === undefined ? undefined : setTimeout(() => outgoing.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT_GUARDED' })), request.timeoutMs);
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (error instanceof RefusedAddressError) return done({ ok: false, reason: error.message });
      if (error.code === 'ETIMEDOUT_GUARDED') return done({ ok: false, reason: `no answer within ${request.timeoutMs} ms` });
      done({ ok: false, reason: error.code ? `request failed (${error.code})` : 'request failed' });
    });
    outgoing.end(request.body);
  });
}
