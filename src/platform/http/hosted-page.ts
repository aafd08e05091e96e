import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

// Pages Corridor serves to end users at secret links (hosted checks: the KYC page, the wallet
// liveness page). The link's token is the only credential, so such a page is never cached, never
// sends a referrer, runs only its own nonce'd script and style, talks only to its own origin,
// cannot be framed, and is never content-sniffed into another type.

export const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function newNonce(): string {
  return randomBytes(16).toString('base64');
}

export function hostedPageHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'`,
  };
}

/** A whole page: title, nonce'd style and (optional) script around the body. */
export function hostedPage(nonce: string, title: string, style: string, body: string, script = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style nonce="${nonce}">${style}</style></head><body>${body}${script ? `<script nonce="${nonce}">${script}</script>` : ''}</body></html>`;
}

/**
 * An onRequest hook for the calls a hosted page's own script makes (POST, PUT): refused 403
 * FORBIDDEN when a browser says the call comes from another site. A form on another site can
 * POST to the page's URL without a CORS preflight (`text/plain`, `multipart/form-data`), and the
 * token in the URL is the only credential, so whoever learnt it could finish the end user's step
 * from their own page. Browsers send `Sec-Fetch-Site` (only `same-origin` is the page itself;
 * `none` is a user's own navigation) and `Origin` on such calls; a client that sends neither is
 * not a browser and is let through, as the token alone then decides. `publicOrigin`: the origin
 * the pages are served from (`CORRIDOR_PUBLIC_URL`), besides the request's own host.
 */
export function refuseCrossSite(publicOrigin: string) {
  return async (request: FastifyRequest): Promise<void> => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw crossSite();
    const origin = request.headers.origin;
    if (origin === undefined) return;
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      throw crossSite();
    }
    if (origin !== publicOrigin && host !== request.headers.host) throw crossSite();
  };
}

const crossSite = () => new AppError('FORBIDDEN', 'This page accepts calls from its own origin only.');
