import { isIP } from 'node:net';
/**
 * A domain reached over plain http: loopback and the local-only names, as the UMA SDK decides
 * (its encodeToUrl and key fetch use the same rule); every other VASP is reached over https.
 */
export function isLocalDomain(domain: string): boolean {
  const host = domain.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  const tld = host.split('.').pop();
  return host === 'localhost' || host === '127.0.0.1' || tld === 'local' || tld === 'internal' || (isIP(host) !== 0 && host.startsWith('127.'));
}

export function vaspOrigin(domain: string): string {
  return `${isLocalDomain(domain) ? 'http' : 'https'}://${domain}`;
}

/**
 * A URL another VASP hands us to call (its pay-request callback, its post-transaction
 * callback), held to the rule its own domain is reached by: https, or http to a local domain.
 * Undefined for anything else (another scheme, plain http to a public host, not a URL).
 */
export function counterpartyUrl(raw: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.username || url.password) return undefined;
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLocalDomain(url.host)) ? url : undefined;
}
