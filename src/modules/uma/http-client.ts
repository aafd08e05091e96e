import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, RefusedAddressError, refusedRange, type Resolver } from '../../platform/address-guard.js';

/** The most of another VASP's answer Corridor reads: an lnurlp or payreq response is a few KiB. */
export const MAX_UMA_RESPONSE_BYTES = 64 * 1024;

export interface VaspRequest {
  url: URL;
  method: 'GET' | 'POST';
  body?: string;
  timeoutMs: number;
  /** Production: refuse loopback, private, link-local and metadata addresses, as webhooks do. */
  guard: boolean;
  resolver: Resolver;
}

export type VaspResponse = { ok: true; status: number; body: string } | { ok: false; reason: string };

/**
 * One request to another VASP: no redirects, one deadline for the whole exchange, at most
 * MAX_UMA_RESPONSE_BYTES read (more is a failure, not a truncated parse), and under the guard
 * only to addresses it accepted (resolved once, so a DNS answer cannot change in between).
 * Never throws.
 */
export function vaspRequest(request: VaspRequest): Promise<VaspResponse> {
  const { url } = request;
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (request.guard) {
    const range = isIP(literal) ? refusedRange(literal) : undefined;
    if (range) return Promise.resolve({ ok: false, reason: new RefusedAddressError(literal, range).message });
  }
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: VaspResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      {
        method: request.method,
        headers: {
          accept: 'application/json',
          ...(request.body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(request.body) } : {}),
        },
        ...(request.guard ? { lookup: guardedLookup(request.resolver) } : {}),
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_UMA_RESPONSE_BYTES) {
            response.destroy();
            return done({ ok: false, reason: `the answer is larger than ${MAX_UMA_RESPONSE_BYTES} bytes` });
          }
          chunks.push(chunk);
        });
        response.on('end', () => done({ ok: true, status: response.statusCode!, body: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', () => done({ ok: false, reason: 'the answer was cut off' }));
      },
    );
    const timer = setTimeout(() => outgoing.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT_UMA' })), request.timeoutMs);
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (error instanceof RefusedAddressError) return done({ ok: false, reason: error.message });
      if (error.code === 'ETIMEDOUT_UMA') return done({ ok: false, reason: `no answer within ${request.timeoutMs} ms` });
      done({ ok: false, reason: error.code ? `request failed (${error.code})` : 'request failed' });
    });
    outgoing.end(request.body);
  });
}
