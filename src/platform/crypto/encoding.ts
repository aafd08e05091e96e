import { createHash } from 'node:crypto';
import { createBase58check } from '@scure/base';

/** Lowercase hex SHA-256; text is hashed as UTF-8. */
export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * JSON with object keys sorted and undefined members left out, so two bodies that mean the same
 * hash the same whatever their key order or whitespace.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function base64url(buf: Buffer): string {
  return buf.toString('base64url');
}

/**
 * Node's decoder silently skips characters outside the alphabet and ignores stray trailing bits,
 * so one value would have many encodings; requiring the canonical unpadded form rules that out.
 */
export function fromBase64url(s: string): Buffer {
  const decoded = Buffer.from(s, 'base64url');
  if (decoded.toString('base64url') !== s) throw new Error('not canonical unpadded base64url');
  return decoded;
}

// Bitcoin's base58check (a double-SHA-256 checksum), from @scure/base.
const base58check = createBase58check((bytes: Uint8Array) => createHash('sha256').update(bytes).digest());

export function base58checkEncode(buf: Buffer): string {
  return base58check.encode(buf);
}

/** Throws on a character outside the alphabet or a checksum mismatch. */
export function base58checkDecode(s: string): Buffer {
  return Buffer.from(base58check.decode(s));
}
