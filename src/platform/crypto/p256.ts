import { createPrivateKey, createPublicKey, ECDH, generateKeyPairSync, hkdfSync, sign, verify, type KeyObject } from 'node:crypto';

export class InvalidKeyError extends Error {}

export interface P256KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** 65 bytes: 04 || X || Y. */
  publicUncompressed: Buffer;
  /** 33 bytes: 02|03 || X. */
  publicCompressed: Buffer;
}

const ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

const UNCOMPRESSED_TAG = Buffer.from([0x04]);
// PKCS#8 DER for a prime256v1 key up to the 32-byte scalar: OpenSSL derives the public point.
const PKCS8_SCALAR = Buffer.from('308141020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420', 'hex');

/** The uncompressed point of a P-256 public or private key. */
export function p256PublicUncompressed(key: KeyObject): Buffer {
  // Not SPKI: OpenSSL exports the point in whichever form it was imported in.
  const { x, y, crv } = key.export({ format: 'jwk' });
  if (crv !== 'P-256' || !x || !y) throw new InvalidKeyError('not a P-256 key');
  return Buffer.concat([UNCOMPRESSED_TAG, Buffer.from(x, 'base64url'), Buffer.from(y, 'base64url')]);
}

function compress(uncompressed: Buffer): Buffer {
  const compressed = Buffer.allocUnsafe(33);
  compressed[0] = 0x02 | (uncompressed[64]! & 1);
  uncompressed.copy(compressed, 1, 1, 33);
  return compressed;
}

function keyPair(privateKey: KeyObject): P256KeyPair {
  const publicKey = createPublicKey(privateKey);
  const publicUncompressed = p256PublicUncompressed(publicKey);
  return { privateKey, publicKey, publicUncompressed, publicCompressed: compress(publicUncompressed) };
}

export function generateP256(): P256KeyPair {
  return keyPair(generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey);
}

export function p256FromPrivateScalar(d: Buffer): P256KeyPair {
  if (d.length !== 32) throw new InvalidKeyError(`P-256 private scalar must be 32 bytes, got ${d.length}`);
  const scalar = BigInt(`0x${d.toString('hex')}`);
  if (scalar === 0n || scalar >= ORDER) throw new InvalidKeyError('P-256 private scalar is out of range');
  return keyPair(createPrivateKey({ key: Buffer.concat([PKCS8_SCALAR, d]), format: 'der', type: 'pkcs8' }));
}

/**
 * Deterministic so the key survives restarts without being stored: the same seed and label
 * always give the same key. The retry keeps the scalar uniform instead of reducing it mod n.
 */
export function p256DeriveFromSeed(seed: Buffer, label: string): P256KeyPair {
  for (let counter = 0; ; counter++) {
    const info = counter === 0 ? label : `${label}\0${counter}`;
    const d = Buffer.from(hkdfSync('sha256', seed, Buffer.alloc(0), info, 32));
    const scalar = BigInt(`0x${d.toString('hex')}`);
    if (scalar !== 0n && scalar < ORDER) return p256FromPrivateScalar(d);
  }
}

export function p256PrivateScalar(privateKey: KeyObject): Buffer {
  const { d, crv } = privateKey.export({ format: 'jwk' });
  if (crv !== 'P-256' || !d) throw new InvalidKeyError('not a P-256 private key');
  const raw = Buffer.from(d, 'base64url');
  return raw.length === 32 ? raw : Buffer.concat([Buffer.alloc(32 - raw.length), raw]);
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

export function parseP256PublicKey(input: Buffer | string): { key: KeyObject; compressed: Buffer; uncompressed: Buffer } {
  if (typeof input === 'string' && !HEX.test(input)) throw new InvalidKeyError('public key is not hex');
  const bytes = typeof input === 'string' ? Buffer.from(input, 'hex') : input;
  const isUncompressed = bytes.length === 65 && bytes[0] === 0x04;
  if (!isUncompressed && !(bytes.length === 33 && (bytes[0] === 0x02 || bytes[0] === 0x03))) {
    throw new InvalidKeyError('public key must be a 33-byte compressed or 65-byte uncompressed SEC1 point');
  }
  try {
    // JWK import is markedly cheaper than SPKI DER (which goes through OpenSSL's generic decoder)
    // and, like it, rejects points off the curve; convertKey rejects x without a square root.
    const uncompressed = isUncompressed ? Buffer.from(bytes) : (ECDH.convertKey(bytes, 'prime256v1', undefined, undefined, 'uncompressed') as Buffer);
    const key = createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: uncompressed.toString('base64url', 1, 33), y: uncompressed.toString('base64url', 33, 65) },
      format: 'jwk',
    });
    return { key, compressed: isUncompressed ? compress(uncompressed) : Buffer.from(bytes), uncompressed };
  } catch {
    throw new InvalidKeyError('public key is not a point on P-256');
  }
}

export function ecdsaSignDer(data: Buffer | string, privateKey: KeyObject): Buffer {
  return sign('sha256', typeof data === 'string' ? Buffer.from(data, 'utf8') : data, privateKey);
}

/**
 * Turnkey clients (WebCrypto, Node, noble's p256 defaults) do not normalise S, so about half of
 * their signatures are high-S; OpenSSL accepts both, as it must here.
 */
export function ecdsaVerifyDer(data: Buffer | string, signatureDer: Buffer, publicKey: KeyObject): boolean {
  try {
    return verify('sha256', typeof data === 'string' ? Buffer.from(data, 'utf8') : data, publicKey, signatureDer);
  } catch {
    return false;
  }
}
