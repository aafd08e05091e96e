import { randomBytes } from 'node:crypto';

// Pages Corridor serves to end users at secret links (hosted checks). The link's token is the
// only credential, so such a page is never cached, never sends a referrer, runs only its own
// nonce'd script and style, talks only to its own origin and cannot be framed.

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
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'`,
  };
}

/** A whole page: title, nonce'd style and (optional) script around the body. */
export function hostedPage(nonce: string, title: string, style: string, body: string, script = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style nonce="${nonce}">${style}</style></head><body>${body}${script ? `<script nonce="${nonce}">${script}</script>` : ''}</body></html>`;
}
