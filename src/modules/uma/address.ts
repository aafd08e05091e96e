import { isValidUmaAddress } from '@uma-sdk/core';
import { isIP } from 'node:net';
import { AppError } from '../../platform/errors.js';

export interface UmaAddress {
  /** `$user@domain`, the domain lower-cased: the form compared and signed. */
  address: string;
  /** The user part with its `$`. */
  user: string;
  /** Host and optional port, lower-cased: where the VASP answers. */
  domain: string;
}

/**
 * `$user@domain[:port]`. The SDK's check decides what a user part and a domain may hold; a port
 * is accepted beside it, since a VASP may answer on one (UMA's own test VASPs do).
 */
export function parseUmaAddress(raw: string): UmaAddress | undefined {
  const match = /^(\$[^@]+)@([^@:]+)(?::(\d{1,5}))?$/.exec(raw);
  if (!match) return undefined;
  const [, user, host, port] = match as unknown as [string, string, string, string | undefined];
  if (!isValidUmaAddress(`${user}@${host}`)) return undefined;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return undefined;
  const domain = `${host.toLowerCase()}${port !== undefined ? `:${port}` : ''}`;
  return { address: `${user}@${domain}`, user, domain };
}

export function requireUmaAddress(raw: string): UmaAddress {
  const parsed = parseUmaAddress(raw);
  if (!parsed) throw new AppError('INVALID_UMA_ADDRESS', `"${raw.slice(0, 330)}" is not a UMA address ($user@domain).`, { details: { umaAddress: raw.slice(0, 330) } });
  return parsed;
}

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
