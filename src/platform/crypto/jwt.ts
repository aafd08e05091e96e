import { sign, type KeyObject } from 'node:crypto';
import { base64url } from './encoding.js';

const HEADER = base64url(Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'JWT' })));

/** JWS ES256 wants the fixed-width r || s signature (RFC 7518 §3.4), not DER. */
export function signEs256Jwt(claims: Record<string, unknown>, privateKey: KeyObject): string {
  const signingInput = `${HEADER}.${base64url(Buffer.from(JSON.stringify(claims), 'utf8'))}`;
  const signature = sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${signingInput}.${base64url(signature)}`;
}
