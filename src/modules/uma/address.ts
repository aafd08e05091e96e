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
