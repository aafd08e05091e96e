import { createHash } from 'node:crypto';

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

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const ALPHABET_INDEX = new Map([...ALPHABET].map((char, i) => [char, i]));

function base58Encode(bytes: Buffer): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  let n = bytes.length > zeros ? BigInt(`0x${bytes.subarray(zeros).toString('hex')}`) : 0n;
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)]! + out;
    n /= 58n;
  }
  return '1'.repeat(zeros) + out;
}

function base58Decode(s: string): Buffer {
  let zeros = 0;
  while (zeros < s.length && s[zeros] === '1') zeros++;
  let n = 0n;
  for (const char of s.slice(zeros)) {
    const digit = ALPHABET_INDEX.get(char);
    if (digit === undefined) throw new Error(`invalid base58 character ${JSON.stringify(char)}`);
    n = n * 58n + BigInt(digit);
  }
  const hex = n === 0n ? '' : n.toString(16);
  return Buffer.concat([Buffer.alloc(zeros), Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex')]);
}

function checksum(payload: Buffer): Buffer {
  return createHash('sha256').update(createHash('sha256').update(payload).digest()).digest().subarray(0, 4);
}

export function base58checkEncode(buf: Buffer): string {
  return base58Encode(Buffer.concat([buf, checksum(buf)]));
}

export function base58checkDecode(s: string): Buffer {
  const raw = base58Decode(s);
  if (raw.length < 4) throw new Error('base58check value too short');
  const payload = raw.subarray(0, raw.length - 4);
  if (!checksum(payload).equals(raw.subarray(raw.length - 4))) throw new Error('base58check checksum mismatch');
  return payload;
}
