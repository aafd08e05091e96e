import type { KeyObject } from 'node:crypto';
import { fromBase64url } from './encoding.js';
import { ecdsaVerifyDer, InvalidKeyError, parseP256PublicKey } from './p256.js';

export const STAMP_SCHEME = 'SIGNATURE_SCHEME_TK_API_P256';

export class StampMalformedError extends Error {}

export interface WalletStamp {
  /** Lowercase compressed SEC1 hex. */
  publicKey: string;
  scheme: typeof STAMP_SCHEME;
  /** DER-encoded ECDSA signature. */
  signature: Buffer;
  key: KeyObject;
}

// A genuine stamp is about 300 characters; the cap bounds the work done on hostile input.
const MAX_HEADER_LENGTH = 2048;
const COMPRESSED_KEY_HEX = /^0[23][0-9a-fA-F]{64}$/;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Length of a DER INTEGER holding a positive value below 2^256, minimally encoded, or -1. */
function derUint256Length(der: Buffer, at: number): number {
  if (der[at] !== 0x02) return -1;
  const length = der[at + 1];
  if (length === undefined || length < 1 || length > 33 || at + 2 + length > der.length) return -1;
  const first = der[at + 2]!;
  if (first & 0x80) return -1;
  if (first === 0 && (length === 1 || !(der[at + 3]! & 0x80))) return -1;
  if (length === 33 && first !== 0) return -1;
  return 2 + length;
}

/** SEQUENCE { INTEGER r, INTEGER s } with nothing trailing; a P-256 one always fits a short-form length. */
function isDerEcdsaSignature(der: Buffer): boolean {
  if (der.length < 8 || der[0] !== 0x30 || der[1] !== der.length - 2) return false;
  const r = derUint256Length(der, 2);
  if (r < 0) return false;
  const s = derUint256Length(der, 2 + r);
  return s > 0 && 2 + r + s === der.length;
}

export function parseStamp(header: string): WalletStamp {
  if (header.length > MAX_HEADER_LENGTH) throw new StampMalformedError(`stamp is longer than ${MAX_HEADER_LENGTH} characters`);
  let json: string;
  try {
    json = utf8.decode(fromBase64url(header));
  } catch {
    throw new StampMalformedError('stamp is not unpadded base64url of UTF-8 text');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new StampMalformedError('stamp does not decode to JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new StampMalformedError('stamp does not decode to a JSON object');
  const { publicKey, scheme, signature } = parsed as Record<string, unknown>;

  if (typeof publicKey !== 'string') throw new StampMalformedError('publicKey is missing or not a string');
  if (!COMPRESSED_KEY_HEX.test(publicKey)) throw new StampMalformedError('publicKey is not a compressed P-256 public key (66 hex characters starting 02 or 03)');
  let key: KeyObject;
  try {
    key = parseP256PublicKey(publicKey).key;
  } catch (error) {
    if (error instanceof InvalidKeyError) throw new StampMalformedError('publicKey is not a point on P-256');
    throw error;
  }

  if (scheme !== STAMP_SCHEME) throw new StampMalformedError(`scheme must be ${STAMP_SCHEME}`);

  if (typeof signature !== 'string') throw new StampMalformedError('signature is missing or not a string');
  if (!HEX.test(signature)) throw new StampMalformedError('signature is not hex');
  const der = Buffer.from(signature, 'hex');
  if (!isDerEcdsaSignature(der)) throw new StampMalformedError('signature is not a DER-encoded ECDSA signature');

  return { publicKey: publicKey.toLowerCase(), scheme: STAMP_SCHEME, signature: der, key };
}

/** Over the exact UTF-8 bytes of `payload`, so callers must pass the string that was signed, not a re-serialisation. */
export function verifyStamp(stamp: WalletStamp, payload: string): boolean {
  return ecdsaVerifyDer(Buffer.from(payload, 'utf8'), stamp.signature, stamp.key);
}
