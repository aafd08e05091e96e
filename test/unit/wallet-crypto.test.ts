import { createPublicKey, verify } from 'node:crypto';
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import {
  decryptCredentialBundle,
  decryptExportBundle,
  encryptOtpCodeToBundle,
  formatHpkeBuf,
  generateP256KeyPair,
  getPublicKey,
  hpkeDecrypt,
  hpkeEncrypt,
  uncompressRawPublicKey,
  verifyOtpVerificationToken,
  verifyStampSignature,
} from '@turnkey/crypto';
import { describe, expect, it } from 'vitest';
import { base58checkDecode, base58checkEncode, base64url, fromBase64url } from '../../src/platform/crypto/encoding.js';
import { HpkeError, hpkeOpen, hpkeSeal } from '../../src/platform/crypto/hpke.js';
import { signEs256Jwt } from '../../src/platform/crypto/jwt.js';
import {
  ecdsaSignDer,
  ecdsaVerifyDer,
  generateP256,
  InvalidKeyError,
  p256DeriveFromSeed,
  p256FromPrivateScalar,
  p256PrivateScalar,
  parseP256PublicKey,
} from '../../src/platform/crypto/p256.js';
import { SecretBox, SecretBoxError } from '../../src/platform/crypto/secret-box.js';
import { parseStamp, STAMP_SCHEME, StampMalformedError, verifyStamp } from '../../src/platform/crypto/stamp.js';
import {
  BundleError,
  exportBundle,
  openEncryptedOtpBundle,
  otpEncryptionTargetBundle,
  otpVerificationToken,
  sealCredentialBundle,
  type EnclaveSigner,
} from '../../src/modules/wallet-auth/enclave/bundles.js';
import { derSignature, P256_ORDER, splitDer } from '../helpers/der.js';

const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
const ORG = 'InternalAccount:019a0000-0000-7000-8000-000000000001';

function newSigner(): EnclaveSigner {
  const pair = generateP256();
  return { privateKey: pair.privateKey, publicHex: pair.publicUncompressed.toString('hex') };
}

/** A client key pair held the way Turnkey clients hold it: hex strings. */
function clientKey() {
  return generateP256KeyPair();
}

function encodeStamp(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function decodeStamp(header: string): { publicKey: string; scheme: string; signature: string } {
  return JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
}

async function clientStamp(payload: string, runtimeOverride?: 'node' | 'purejs') {
  const key = clientKey();
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey, runtimeOverride });
  return { key, header: (await stamper.stamp(payload)).stampHeaderValue };
}

/** An x coordinate with no point on P-256 (x = 1: 1 - 3 + b is not a square mod p). */
const OFF_CURVE_COMPRESSED = `02${'00'.repeat(31)}01`;

describe('encoding', () => {
  it('base64url round-trips and rejects anything but the canonical unpadded alphabet', async () => {
    const bytes = Buffer.from([0xfb, 0xff, 0xbf, 0x00, 0x01]);
    expect(base64url(bytes)).toBe('-_-_AAE');
    expect(fromBase64url('-_-_AAE')).toEqual(bytes);
    expect(fromBase64url('')).toEqual(Buffer.alloc(0));
    for (const bad of ['-_-_AAE=', '+/+/AAE', '-_-_ AAE', '-_-_AA!E', 'A', '-_-_AAF']) {
      expect(() => fromBase64url(bad), bad).toThrow('not canonical unpadded base64url');
    }
  });

  it('base58check round-trips, matches the well-known vector, and rejects bad checksums and characters', async () => {
    expect(base58checkEncode(Buffer.alloc(21))).toBe('1111111111111111111114oLvT2');
    expect(base58checkDecode('1111111111111111111114oLvT2')).toEqual(Buffer.alloc(21));
    for (const bytes of [Buffer.alloc(0), Buffer.from([0, 0, 1, 2, 255]), Buffer.from('ff'.repeat(80), 'hex')]) {
      expect(base58checkDecode(base58checkEncode(bytes))).toEqual(bytes);
    }
    expect(() => base58checkDecode('1111111111111111111114oLvT3')).toThrow('Invalid checksum');
    expect(() => base58checkDecode('1111111111111111111114oLvT0')).toThrow('Unknown letter "0"');
    expect(() => base58checkDecode('1111111111111111111114oLvTl')).toThrow('Unknown letter "l"');
    expect(() => base58checkDecode('2')).toThrow('Invalid checksum');
  });
});

describe('p256', () => {
  it('generates key pairs whose encodings agree with the Turnkey client', async () => {
    const pair = generateP256();
    const privHex = p256PrivateScalar(pair.privateKey).toString('hex');
    expect(privHex).toHaveLength(64);
    expect(pair.publicCompressed.toString('hex')).toBe(Buffer.from(getPublicKey(privHex, true)).toString('hex'));
    expect(pair.publicUncompressed.toString('hex')).toBe(Buffer.from(getPublicKey(privHex, false)).toString('hex'));
  });

  it('rebuilds a key pair from its scalar and rejects scalars outside [1, n-1]', async () => {
    const client = clientKey();
    const pair = p256FromPrivateScalar(Buffer.from(client.privateKey, 'hex'));
    expect(pair.publicCompressed.toString('hex')).toBe(client.publicKey);
    expect(pair.publicUncompressed.toString('hex')).toBe(client.publicKeyUncompressed);
    expect(p256PrivateScalar(pair.privateKey).toString('hex')).toBe(client.privateKey);

    const nMinus1 = Buffer.from((P256_ORDER - 1n).toString(16), 'hex');
    expect(p256FromPrivateScalar(nMinus1).publicUncompressed.toString('hex')).toBe(Buffer.from(getPublicKey(nMinus1, false)).toString('hex'));
    expect(() => p256FromPrivateScalar(Buffer.alloc(32))).toThrow(InvalidKeyError);
    expect(() => p256FromPrivateScalar(Buffer.from(P256_ORDER.toString(16), 'hex'))).toThrow('P-256 private scalar is out of range');
    expect(() => p256FromPrivateScalar(Buffer.alloc(32, 0xff))).toThrow('P-256 private scalar is out of range');
    expect(() => p256FromPrivateScalar(Buffer.alloc(31, 1))).toThrow('P-256 private scalar must be 32 bytes, got 31');
  });

  it('derives the same key from the same seed and label, a different one per label or seed', async () => {
    const seed = Buffer.alloc(32, 7);
    const a = p256DeriveFromSeed(seed, 'corridor/enclave-signing');
    const again = p256DeriveFromSeed(Buffer.alloc(32, 7), 'corridor/enclave-signing');
    const otherLabel = p256DeriveFromSeed(seed, 'corridor/otp-hash');
    const otherSeed = p256DeriveFromSeed(Buffer.alloc(32, 8), 'corridor/enclave-signing');
    expect(again.publicUncompressed.toString('hex')).toBe(a.publicUncompressed.toString('hex'));
    expect(p256PrivateScalar(again.privateKey)).toEqual(p256PrivateScalar(a.privateKey));
    expect(otherLabel.publicUncompressed.equals(a.publicUncompressed)).toBe(false);
    expect(otherSeed.publicUncompressed.equals(a.publicUncompressed)).toBe(false);
    const scalar = p256PrivateScalar(a.privateKey);
    expect(Buffer.from(getPublicKey(scalar, false)).equals(a.publicUncompressed)).toBe(true);
  });

  it('parses compressed and uncompressed keys, as bytes or hex in either case', async () => {
    const client = clientKey();
    const fromCompressed = parseP256PublicKey(client.publicKey);
    const fromUncompressed = parseP256PublicKey(Buffer.from(client.publicKeyUncompressed, 'hex'));
    const fromUpper = parseP256PublicKey(client.publicKey.toUpperCase());
    for (const parsed of [fromCompressed, fromUncompressed, fromUpper]) {
      expect(parsed.compressed.toString('hex')).toBe(client.publicKey);
      expect(parsed.uncompressed.toString('hex')).toBe(client.publicKeyUncompressed);
      expect(parsed.key.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    }
    expect(Buffer.from(uncompressRawPublicKey(Buffer.from(client.publicKey, 'hex'))).equals(fromCompressed.uncompressed)).toBe(true);
  });

  it('rejects bad lengths, prefixes, hex and points off the curve', async () => {
    const client = clientKey();
    const uncompressed = Buffer.from(client.publicKeyUncompressed, 'hex');
    const offCurve = Buffer.from(uncompressed);
    offCurve[64]! ^= 1;
    const shapes = [
      Buffer.alloc(0),
      Buffer.from(client.publicKey, 'hex').subarray(0, 32),
      Buffer.concat([Buffer.from(client.publicKey, 'hex'), Buffer.from([0])]),
      uncompressed.subarray(0, 64),
      Buffer.concat([uncompressed, Buffer.from([0])]),
      Buffer.concat([Buffer.from([0x04]), Buffer.from(client.publicKey, 'hex').subarray(1)]),
      Buffer.concat([Buffer.from([0x02]), uncompressed.subarray(1)]),
      Buffer.concat([Buffer.from([0x06 | (uncompressed[64]! & 1)]), uncompressed.subarray(1)]),
      Buffer.from([0x00]),
    ];
    for (const bad of shapes) expect(() => parseP256PublicKey(bad), bad.toString('hex')).toThrow('public key must be a 33-byte compressed or 65-byte uncompressed SEC1 point');
    for (const bad of ['abc', `${client.publicKey}0`, `0x${client.publicKey}`, client.publicKey.replace(/.$/, 'g')]) {
      expect(() => parseP256PublicKey(bad), bad).toThrow('public key is not hex');
    }
    expect(() => parseP256PublicKey(offCurve)).toThrow('public key is not a point on P-256');
    expect(() => parseP256PublicKey(OFF_CURVE_COMPRESSED)).toThrow('public key is not a point on P-256');
    expect(() => parseP256PublicKey(`02${'ff'.repeat(32)}`)).toThrow(InvalidKeyError);
  });

  it('signs DER signatures the Turnkey client verifies; verifies false on garbage without throwing', async () => {
    const pair = generateP256();
    const signature = ecdsaSignDer('héllo', pair.privateKey);
    expect(await verifyStampSignature(pair.publicCompressed.toString('hex'), signature.toString('hex'), 'héllo')).toBe(true);
    expect(ecdsaVerifyDer(Buffer.from('héllo', 'utf8'), signature, pair.publicKey)).toBe(true);
    expect(ecdsaVerifyDer('hello', signature, pair.publicKey)).toBe(false);
    expect(ecdsaVerifyDer('héllo', Buffer.from('garbage'), pair.publicKey)).toBe(false);
    expect(ecdsaVerifyDer('héllo', Buffer.alloc(0), pair.publicKey)).toBe(false);
    expect(ecdsaVerifyDer('héllo', signature, generateP256().publicKey)).toBe(false);
  });
});

describe('hpke', () => {
  it('opens what the Turnkey client seals', async () => {
    const recipient = generateP256();
    const sealed = hpkeEncrypt({ plainTextBuf: Buffer.from('to the server'), targetKeyBuf: recipient.publicUncompressed });
    const encapped = parseP256PublicKey(Buffer.from(sealed.subarray(0, 33))).uncompressed;
    const opened = await hpkeOpen({ encapped, ciphertext: Buffer.from(sealed.subarray(33)), recipientPrivate: recipient.privateKey });
    expect(opened.toString()).toBe('to the server');
  });

  it('seals what the Turnkey client opens, to an uncompressed or compressed recipient key', async () => {
    for (const compressed of [false, true]) {
      const client = clientKey();
      const recipient = Buffer.from(compressed ? client.publicKey : client.publicKeyUncompressed, 'hex');
      const { encapped, ciphertext } = await hpkeSeal(Buffer.from('to the client'), recipient);
      expect(encapped).toHaveLength(65);
      expect(encapped[0]).toBe(0x04);
      expect(ciphertext).toHaveLength('to the client'.length + 16);
      const opened = hpkeDecrypt({ ciphertextBuf: ciphertext, encappedKeyBuf: encapped, receiverPriv: client.privateKey });
      expect(Buffer.from(opened).toString()).toBe('to the client');
    }
  });

  it('encapsulates afresh for every seal: the same secret to the same key never repeats its ephemeral key or ciphertext', async () => {
    const recipient = generateP256();
    const seals = await Promise.all(Array.from({ length: 8 }, () => hpkeSeal(Buffer.from('the same secret'), recipient.publicCompressed)));
    expect(new Set(seals.map((sealed) => sealed.encapped.toString('hex'))).size).toBe(seals.length);
    expect(new Set(seals.map((sealed) => sealed.ciphertext.toString('hex'))).size).toBe(seals.length);
    for (const sealed of seals) expect((await hpkeOpen({ ...sealed, recipientPrivate: recipient.privateKey })).toString()).toBe('the same secret');
  });

  it('fails with HpkeError on tampering, the wrong recipient or malformed input', async () => {
    const recipient = generateP256();
    const { encapped, ciphertext } = await hpkeSeal(Buffer.from('secret'), recipient.publicUncompressed);
    expect((await hpkeOpen({ encapped, ciphertext, recipientPrivate: recipient.privateKey })).toString()).toBe('secret');

    for (let i = 0; i < ciphertext.length; i += 7) {
      const tampered = Buffer.from(ciphertext);
      tampered[i]! ^= 0x01;
      await expect(hpkeOpen({ encapped, ciphertext: tampered, recipientPrivate: recipient.privateKey })).rejects.toThrow(HpkeError);
    }
    const otherEncapped = generateP256().publicUncompressed;
    await expect(hpkeOpen({ encapped: otherEncapped, ciphertext, recipientPrivate: recipient.privateKey })).rejects.toThrow('decryption failed');
    await expect(hpkeOpen({ encapped, ciphertext, recipientPrivate: generateP256().privateKey })).rejects.toThrow('decryption failed');
    await expect(hpkeOpen({ encapped: parseP256PublicKey(encapped).compressed, ciphertext, recipientPrivate: recipient.privateKey })).rejects.toThrow(
      'encapsulated key must be a 65-byte uncompressed point',
    );
    const offCurve = Buffer.from(encapped);
    offCurve[64]! ^= 1;
    await expect(hpkeOpen({ encapped: offCurve, ciphertext, recipientPrivate: recipient.privateKey })).rejects.toThrow('decryption failed');
    await expect(hpkeOpen({ encapped, ciphertext: ciphertext.subarray(0, 15), recipientPrivate: recipient.privateKey })).rejects.toThrow(
      'ciphertext is shorter than the authentication tag',
    );
    await expect(hpkeSeal(Buffer.from('x'), Buffer.from(OFF_CURVE_COMPRESSED, 'hex'))).rejects.toThrow('invalid recipient public key: public key is not a point on P-256');
  });
});

describe('stamps', () => {
  it.each(['node', 'purejs'] as const)('parses and verifies a stamp made by the Turnkey ApiKeyStamper (%s runtime)', async (runtime) => {
    const payload = '{"type":"ACTIVITY_TYPE_X","parameters":{"name":"Zoë ✓"}}';
    const { key, header } = await clientStamp(payload, runtime);
    const stamp = parseStamp(header);
    expect(stamp.publicKey).toBe(key.publicKey);
    expect(stamp.scheme).toBe(STAMP_SCHEME);
    expect(stamp.signature.toString('hex')).toBe(decodeStamp(header).signature);
    expect(verifyStamp(stamp, payload)).toBe(true);
    expect(verifyStamp(stamp, `${payload} `)).toBe(false);
    expect(verifyStamp(stamp, payload.replace('Zoë', 'Zoe'))).toBe(false);

    const other = await clientStamp(payload, runtime);
    const mixed = parseStamp(encodeStamp({ ...decodeStamp(header), publicKey: other.key.publicKey }));
    expect(verifyStamp(mixed, payload)).toBe(false);
  });

  it('accepts both the low-S and the high-S form of a signature', async () => {
    const payload = 'payload to sign';
    const { header } = await clientStamp(payload);
    const original = decodeStamp(header);
    const { r, s } = splitDer(Buffer.from(original.signature, 'hex'));
    const flipped = derSignature(r, P256_ORDER - s);
    expect(flipped.equals(Buffer.from(original.signature, 'hex'))).toBe(false);
    const variant = parseStamp(encodeStamp({ ...original, signature: flipped.toString('hex') }));
    expect(verifyStamp(variant, payload)).toBe(true);
    expect(verifyStamp(parseStamp(header), payload)).toBe(true);
  });

  it('parses r or s of n and above (as DER allows) but never verifies them, nor r + n or s + n for a genuine signature', async () => {
    const payload = 'r and s below n';
    const { header } = await clientStamp(payload);
    const original = decodeStamp(header);
    const { r, s } = splitDer(Buffer.from(original.signature, 'hex'));
    const MAX = 2n ** 256n - 1n;
    const forms: Array<[string, bigint, bigint]> = [
      ['r = n', P256_ORDER, s],
      ['s = n', r, P256_ORDER],
      ['r = 2^256 - 1', MAX, s],
      ['s = 2^256 - 1', r, MAX],
      ...(r + P256_ORDER <= MAX ? [['r + n', r + P256_ORDER, s] as [string, bigint, bigint]] : []),
      ...(s + P256_ORDER <= MAX ? [['s + n', r, s + P256_ORDER] as [string, bigint, bigint]] : []),
    ];
    for (const [name, rForm, sForm] of forms) {
      const stamp = parseStamp(encodeStamp({ ...original, signature: derSignature(rForm, sForm).toString('hex') }));
      expect(verifyStamp(stamp, payload), name).toBe(false);
    }
    // 0x81 (long-form length) for a SEQUENCE that fits the short form is not DER.
    const der = Buffer.from(original.signature, 'hex');
    const longForm = Buffer.concat([Buffer.from([0x30, 0x81, der[1]!]), der.subarray(2)]);
    expect(() => parseStamp(encodeStamp({ ...original, signature: longForm.toString('hex') }))).toThrow('signature is not a DER-encoded ECDSA signature');
  });

  it('normalises uppercase hex to lowercase', async () => {
    const payload = 'upper';
    const { key, header } = await clientStamp(payload);
    const original = decodeStamp(header);
    const stamp = parseStamp(encodeStamp({ ...original, publicKey: original.publicKey.toUpperCase(), signature: original.signature.toUpperCase() }));
    expect(stamp.publicKey).toBe(key.publicKey);
    expect(stamp.signature.toString('hex')).toBe(original.signature);
    expect(verifyStamp(stamp, payload)).toBe(true);
  });

  it('rejects malformed stamps with a message saying what is wrong', async () => {
    const { key, header } = await clientStamp('x');
    const good = decodeStamp(header);
    const der = Buffer.from(good.signature, 'hex');
    const { r, s } = splitDer(der);
    const rHex = r.toString(16).padStart(64, '0');
    const sHex = s.toString(16).padStart(64, '0');
    const cases: Array<[string, string, string]> = [
      ['not base64url', 'eyJ+cHVibGljS2V5Ijp9', 'stamp is not unpadded base64url of UTF-8 text'],
      ['padded base64url', `${Buffer.from(JSON.stringify(good)).toString('base64url')}=`, 'stamp is not unpadded base64url of UTF-8 text'],
      ['not UTF-8', Buffer.from([0xff, 0xfe, 0x7b]).toString('base64url'), 'stamp is not unpadded base64url of UTF-8 text'],
      ['empty', '', 'stamp does not decode to JSON'],
      ['not JSON', Buffer.from('publicKey=02..').toString('base64url'), 'stamp does not decode to JSON'],
      ['array', encodeStamp([good.publicKey, good.scheme, good.signature]), 'stamp does not decode to a JSON object'],
      ['null', encodeStamp(null), 'stamp does not decode to a JSON object'],
      ['string', encodeStamp('stamp'), 'stamp does not decode to a JSON object'],
      ['missing publicKey', encodeStamp({ scheme: good.scheme, signature: good.signature }), 'publicKey is missing or not a string'],
      ['numeric publicKey', encodeStamp({ ...good, publicKey: 2 }), 'publicKey is missing or not a string'],
      ['uncompressed publicKey', encodeStamp({ ...good, publicKey: key.publicKeyUncompressed }), 'publicKey is not a compressed P-256 public key'],
      ['short publicKey', encodeStamp({ ...good, publicKey: good.publicKey.slice(0, 64) }), 'publicKey is not a compressed P-256 public key'],
      ['non-hex publicKey', encodeStamp({ ...good, publicKey: `${good.publicKey.slice(0, 65)}z` }), 'publicKey is not a compressed P-256 public key'],
      ['publicKey off the curve', encodeStamp({ ...good, publicKey: OFF_CURVE_COMPRESSED }), 'publicKey is not a point on P-256'],
      ['missing scheme', encodeStamp({ publicKey: good.publicKey, signature: good.signature }), `scheme must be ${STAMP_SCHEME}`],
      ['wrong scheme', encodeStamp({ ...good, scheme: 'SIGNATURE_SCHEME_TK_API_SECP256K1' }), `scheme must be ${STAMP_SCHEME}`],
      ['missing signature', encodeStamp({ publicKey: good.publicKey, scheme: good.scheme }), 'signature is missing or not a string'],
      ['array signature', encodeStamp({ ...good, signature: [...der] }), 'signature is missing or not a string'],
      ['non-hex signature', encodeStamp({ ...good, signature: `${good.signature.slice(0, -2)}zz` }), 'signature is not hex'],
      ['odd-length signature', encodeStamp({ ...good, signature: good.signature.slice(0, -1) }), 'signature is not hex'],
      ['empty signature', encodeStamp({ ...good, signature: '' }), 'signature is not hex'],
      ['raw r||s signature', encodeStamp({ ...good, signature: rHex + sHex }), 'signature is not a DER-encoded ECDSA signature'],
      ['truncated DER', encodeStamp({ ...good, signature: good.signature.slice(0, -2) }), 'signature is not a DER-encoded ECDSA signature'],
      ['DER with trailing byte', encodeStamp({ ...good, signature: `${good.signature}00` }), 'signature is not a DER-encoded ECDSA signature'],
      ['DER, non-minimal integer', encodeStamp({ ...good, signature: '300702020001020101' }), 'signature is not a DER-encoded ECDSA signature'],
      ['DER, negative integer', encodeStamp({ ...good, signature: '3006020180020101' }), 'signature is not a DER-encoded ECDSA signature'],
      ['DER, zero integer', encodeStamp({ ...good, signature: '3006020100020101' }), 'signature is not a DER-encoded ECDSA signature'],
      ['too long', encodeStamp({ ...good, padding: 'x'.repeat(1600) }), 'stamp is longer than 2048 characters'],
    ];
    for (const [name, value, message] of cases) {
      let thrown: unknown;
      try {
        parseStamp(value);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, name).toBeInstanceOf(StampMalformedError);
      expect((thrown as Error).message, name).toContain(message);
    }
  });
});

describe('JWT', () => {
  it('signs a compact ES256 JWT with a 64-byte r||s signature', async () => {
    const pair = generateP256();
    const jwt = signEs256Jwt({ sub: 'x', n: 1 }, pair.privateKey);
    const [header, payload, signature] = jwt.split('.');
    expect(Buffer.from(header!, 'base64url').toString()).toBe('{"alg":"ES256","typ":"JWT"}');
    expect(Buffer.from(payload!, 'base64url').toString()).toBe('{"sub":"x","n":1}');
    const raw = Buffer.from(signature!, 'base64url');
    expect(raw).toHaveLength(64);
    expect(verify('sha256', Buffer.from(`${header}.${payload}`), { key: createPublicKey(pair.privateKey), dsaEncoding: 'ieee-p1363' }, raw)).toBe(true);
  });
});

describe('SecretBox', () => {
  const master = Buffer.alloc(32, 3);

  it('round-trips and binds the aad, key and purpose', async () => {
    const box = new SecretBox(master, 'wallet-secret');
    const sealed = box.seal(Buffer.from(MNEMONIC), 'account-1');
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(sealed.slice(3), 'base64url')).toHaveLength(12 + MNEMONIC.length + 16);
    expect(box.seal(Buffer.from(MNEMONIC), 'account-1')).not.toBe(sealed);
    expect(box.open(sealed, 'account-1').toString()).toBe(MNEMONIC);
    expect(new SecretBox(Buffer.alloc(32, 3), 'wallet-secret').open(sealed, 'account-1').toString()).toBe(MNEMONIC);
    expect(box.open(box.seal(Buffer.alloc(0), ''), '')).toEqual(Buffer.alloc(0));

    const cannotOpen = 'sealed value cannot be opened: tampered, or sealed under another key or aad';
    expect(() => box.open(sealed, 'account-2')).toThrow(cannotOpen);
    expect(() => new SecretBox(Buffer.alloc(32, 4), 'wallet-secret').open(sealed, 'account-1')).toThrow(cannotOpen);
    expect(() => new SecretBox(master, 'otp-target').open(sealed, 'account-1')).toThrow(cannotOpen);
  });

  it('detects tampering and malformed values', async () => {
    const box = new SecretBox(master, 'otp-target');
    const sealed = box.seal(Buffer.from('0123456789abcdef'), 'otp-target');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const tampered = Buffer.from(raw);
      tampered[i]! ^= 0x80;
      expect(() => box.open(`v1.${tampered.toString('base64url')}`, 'otp-target')).toThrow(SecretBoxError);
    }
    expect(() => box.open(`v1.${raw.subarray(0, raw.length - 1).toString('base64url')}`, 'otp-target')).toThrow(SecretBoxError);
    expect(() => box.open(`v2.${raw.toString('base64url')}`, 'otp-target')).toThrow('sealed value has an unknown version');
    expect(() => box.open(`v1.${raw.toString('base64')}==`, 'otp-target')).toThrow('sealed value is not base64url');
    expect(() => box.open(`v1.${raw.subarray(0, 27).toString('base64url')}`, 'otp-target')).toThrow('sealed value is too short');
    expect(() => new SecretBox(Buffer.alloc(16), 'x')).toThrow('master key must be 32 bytes, got 16');
  });
});

describe('enclave bundles', () => {
  it('makes an OTP target bundle the Turnkey client accepts, and opens what it encrypts', async () => {
    const signer = newSigner();
    const target = generateP256();
    const bundle = otpEncryptionTargetBundle(target.publicUncompressed, signer, ORG);
    const parsed = JSON.parse(bundle);
    expect(Object.keys(parsed)).toEqual(['version', 'data', 'dataSignature', 'enclaveQuorumPublic']);
    expect(parsed.version).toBe('v1.0.0');
    expect(parsed.enclaveQuorumPublic).toBe(signer.publicHex);
    expect(JSON.parse(Buffer.from(parsed.data, 'hex').toString())).toEqual({ organizationId: ORG, targetPublic: target.publicUncompressed.toString('hex') });

    const client = clientKey();
    const encrypted = await encryptOtpCodeToBundle('123456', bundle, client.publicKey, signer.publicHex);
    expect(await openEncryptedOtpBundle(encrypted, target.privateKey)).toEqual({ otpCode: '123456', publicKey: client.publicKey, publicKeyCompressed: client.publicKey });

    const withUncompressed = await encryptOtpCodeToBundle('000000', bundle, client.publicKeyUncompressed, signer.publicHex);
    expect(await openEncryptedOtpBundle(withUncompressed, target.privateKey)).toEqual({
      otpCode: '000000',
      publicKey: client.publicKeyUncompressed,
      publicKeyCompressed: client.publicKey,
    });

    await expect(encryptOtpCodeToBundle('123456', bundle, client.publicKey, newSigner().publicHex)).rejects.toThrow('does not match signer key');
    const forged = JSON.stringify({ ...parsed, dataSignature: ecdsaSignDer(Buffer.from(parsed.data, 'hex'), newSigner().privateKey).toString('hex') });
    await expect(encryptOtpCodeToBundle('123456', forged, client.publicKey, signer.publicHex)).rejects.toThrow();
  });

  it('opens an encryptedOtpBundle built by hpkeEncrypt + formatHpkeBuf, with uppercase hex lowercased', async () => {
    const target = generateP256();
    const client = clientKey();
    const plaintext = JSON.stringify({ otp_code: 'A1B2C3', public_key: client.publicKeyUncompressed.toUpperCase() });
    const bundle = formatHpkeBuf(hpkeEncrypt({ plainTextBuf: Buffer.from(plaintext), targetKeyBuf: target.publicUncompressed }));
    expect(await openEncryptedOtpBundle(bundle, target.privateKey)).toEqual({
      otpCode: 'A1B2C3',
      publicKey: client.publicKeyUncompressed,
      publicKeyCompressed: client.publicKey,
    });
  });

  it('rejects malformed or undecryptable OTP bundles with BundleError', async () => {
    const target = generateP256();
    const client = clientKey();
    const sealTo = (plaintext: string, to = target.publicUncompressed) =>
      formatHpkeBuf(hpkeEncrypt({ plainTextBuf: Buffer.from(plaintext), targetKeyBuf: to }));
    const good = JSON.parse(sealTo(JSON.stringify({ otp_code: '123456', public_key: client.publicKey })));
    const tampered = `${good.ciphertext.slice(0, -2)}${good.ciphertext.endsWith('00') ? '01' : '00'}`;
    const cases: Array<[string, string, string]> = [
      ['not JSON', 'encappedPublic=04..', 'encryptedOtpBundle is not JSON'],
      ['array', '[]', 'encryptedOtpBundle is not a JSON object'],
      ['missing encappedPublic', JSON.stringify({ ciphertext: good.ciphertext }), 'encappedPublic is not an uncompressed public key'],
      ['compressed encappedPublic', JSON.stringify({ ...good, encappedPublic: parseP256PublicKey(good.encappedPublic).compressed.toString('hex') }), 'encappedPublic is not an uncompressed public key'],
      ['non-hex ciphertext', JSON.stringify({ ...good, ciphertext: 'xyz' }), 'ciphertext is not hex'],
      ['numeric ciphertext', JSON.stringify({ ...good, ciphertext: 12 }), 'ciphertext is not hex'],
      ['tampered ciphertext', JSON.stringify({ ...good, ciphertext: tampered }), 'encryptedOtpBundle cannot be decrypted with this target key'],
      ['other encapped key', JSON.stringify({ ...good, encappedPublic: client.publicKeyUncompressed }), 'encryptedOtpBundle cannot be decrypted with this target key'],
      ['off-curve encapped key', JSON.stringify({ ...good, encappedPublic: `04${'00'.repeat(63)}01` }), 'encryptedOtpBundle cannot be decrypted with this target key'],
      ['wrong target', sealTo(JSON.stringify({ otp_code: '1', public_key: client.publicKey }), generateP256().publicUncompressed), 'encryptedOtpBundle cannot be decrypted with this target key'],
      ['plaintext not JSON', sealTo('otp=123456'), 'decrypted OTP bundle is not JSON'],
      ['plaintext array', sealTo('["123456"]'), 'decrypted OTP bundle is not a JSON object'],
      ['otp_code missing', sealTo(JSON.stringify({ public_key: client.publicKey })), 'otp_code is not a string of 1 to 64 characters'],
      ['otp_code number', sealTo(JSON.stringify({ otp_code: 123456, public_key: client.publicKey })), 'otp_code is not a string of 1 to 64 characters'],
      ['otp_code empty', sealTo(JSON.stringify({ otp_code: '', public_key: client.publicKey })), 'otp_code is not a string of 1 to 64 characters'],
      ['otp_code too long', sealTo(JSON.stringify({ otp_code: '1'.repeat(65), public_key: client.publicKey })), 'otp_code is not a string of 1 to 64 characters'],
      ['public_key missing', sealTo(JSON.stringify({ otp_code: '123456' })), 'public_key is not a string'],
      ['public_key off curve', sealTo(JSON.stringify({ otp_code: '123456', public_key: OFF_CURVE_COMPRESSED })), 'public_key: public key is not a point on P-256'],
      ['public_key bad length', sealTo(JSON.stringify({ otp_code: '123456', public_key: client.publicKey.slice(0, 64) })), 'public_key: public key must be a 33-byte'],
    ];
    for (const [name, value, message] of cases) {
      let thrown: unknown;
      try {
        await openEncryptedOtpBundle(value, target.privateKey);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, name).toBeInstanceOf(BundleError);
      expect((thrown as Error).message, name).toContain(message);
    }
    expect((await openEncryptedOtpBundle(sealTo(JSON.stringify({ otp_code: '1'.repeat(64), public_key: client.publicKey })), target.privateKey)).otpCode).toBe('1'.repeat(64));
  });

  it('seals a credential bundle decryptCredentialBundle opens', async () => {
    const client = clientKey();
    const secret = Buffer.from(p256PrivateScalar(generateP256().privateKey));
    const bundle = await sealCredentialBundle(secret, Buffer.from(client.publicKeyUncompressed, 'hex'));
    const raw = base58checkDecode(bundle);
    expect(raw).toHaveLength(33 + 32 + 16);
    expect([0x02, 0x03]).toContain(raw[0]);
    expect(decryptCredentialBundle(bundle, client.privateKey)).toBe(secret.toString('hex'));
    expect(() => decryptCredentialBundle(bundle, clientKey().privateKey)).toThrow();
  });

  it('makes an export bundle decryptExportBundle opens to the mnemonic', async () => {
    const signer = newSigner();
    const client = clientKey();
    const bundle = await exportBundle(Buffer.from(MNEMONIC), Buffer.from(client.publicKeyUncompressed, 'hex'), signer, ORG);
    const parsed = JSON.parse(bundle);
    expect(Object.keys(parsed)).toEqual(['version', 'data', 'dataSignature', 'enclaveQuorumPublic']);
    expect(Object.keys(JSON.parse(Buffer.from(parsed.data, 'hex').toString()))).toEqual(['encappedPublic', 'ciphertext', 'organizationId']);
    const params = { exportBundle: bundle, embeddedKey: client.privateKey, organizationId: ORG, dangerouslyOverrideSignerPublicKey: signer.publicHex };
    expect(await decryptExportBundle({ ...params, returnMnemonic: true })).toBe(MNEMONIC);
    expect(await decryptExportBundle({ ...params, returnMnemonic: false })).toBe(Buffer.from(MNEMONIC).toString('hex'));
    await expect(decryptExportBundle({ ...params, organizationId: 'someone-else', returnMnemonic: true })).rejects.toThrow('organization id does not match');
    await expect(decryptExportBundle({ ...params, embeddedKey: clientKey().privateKey, returnMnemonic: true })).rejects.toThrow('hpkeDecrypt');
    await expect(decryptExportBundle({ ...params, dangerouslyOverrideSignerPublicKey: newSigner().publicHex, returnMnemonic: true })).rejects.toThrow('does not match signer key');
  });

  it('rejects an invalid recipient key for sealed bundles', async () => {
    const signer = newSigner();
    const offCurve = Buffer.from(OFF_CURVE_COMPRESSED, 'hex');
    await expect(sealCredentialBundle(Buffer.from('x'), offCurve)).rejects.toThrow(BundleError);
    await expect(exportBundle(Buffer.from('x'), Buffer.alloc(65), signer, ORG)).rejects.toThrow(BundleError);
    expect(() => otpEncryptionTargetBundle(offCurve, signer, ORG)).toThrow('target public key: public key is not a point on P-256');
  });

  it('issues an OTP verification token verifyOtpVerificationToken accepts', async () => {
    const signer = newSigner();
    const client = clientKey();
    const claims = {
      id: 'SignedRequest:019a0000-0000-7000-8000-000000000002',
      verification_type: 'OTP_TYPE_EMAIL',
      contact: 'user@example.com',
      organization_id: ORG,
      public_key: client.publicKey,
      exp: String(Date.now() + 300_000),
      purpose: 'verify',
    };
    const token = otpVerificationToken(claims, signer);
    expect(await verifyOtpVerificationToken(token, signer.publicHex)).toEqual(claims);
    await expect(verifyOtpVerificationToken(token, newSigner().publicHex)).rejects.toThrow('OTP verification token signature is invalid');
    const expired = otpVerificationToken({ ...claims, exp: String(Date.now() - 1000) }, signer);
    await expect(verifyOtpVerificationToken(expired, signer.publicHex)).rejects.toThrow('OTP verification token has expired');
  });
});
