import { createCipheriv, createDecipheriv, createHmac, diffieHellman, hkdfSync, type KeyObject } from 'node:crypto';
import { generateP256, p256PublicUncompressed, parseP256PublicKey } from './p256.js';

/*
 * HPKE (RFC 9180) base mode, DHKEM(P-256, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM, as Turnkey
 * runs it: the info is "turnkey_hpke" and the AEAD additional data is enc || pkR (both
 * uncompressed) rather than empty. Only a single message is sealed per context (sequence 0),
 * so the nonce is the base nonce.
 */

export class HpkeError extends Error {}

const VERSION = Buffer.from('HPKE-v1');
const KEM_SUITE = Buffer.from([0x4b, 0x45, 0x4d, 0x00, 0x10]); // "KEM" || 0x0010
const HPKE_SUITE = Buffer.from([0x48, 0x50, 0x4b, 0x45, 0x00, 0x10, 0x00, 0x01, 0x00, 0x02]); // "HPKE" || kem || kdf || aead
const INFO = Buffer.from('turnkey_hpke');
const EMPTY = Buffer.alloc(0);

const labeledIkm = (suite: Buffer, label: string, ikm: Buffer) => Buffer.concat([VERSION, suite, Buffer.from(label), ikm]);
const labeledInfo = (suite: Buffer, label: string, info: Buffer, length: number) =>
  Buffer.concat([Buffer.from([length >> 8, length & 0xff]), VERSION, suite, Buffer.from(label), info]);
const labeledExtract = (suite: Buffer, salt: Buffer, label: string, ikm: Buffer) => createHmac('sha256', salt).update(labeledIkm(suite, label, ikm)).digest();
const extractAndExpand = (salt: Buffer, ikm: Buffer, info: Buffer, length: number) => Buffer.from(hkdfSync('sha256', ikm, salt, info, length));

const KEY_SCHEDULE_CONTEXT = Buffer.concat([
  Buffer.from([0x00]), // mode_base
  labeledExtract(HPKE_SUITE, EMPTY, 'psk_id_hash', EMPTY),
  labeledExtract(HPKE_SUITE, EMPTY, 'info_hash', INFO),
]);
const SECRET_IKM = labeledIkm(HPKE_SUITE, 'secret', EMPTY);
const KEY_INFO = labeledInfo(HPKE_SUITE, 'key', KEY_SCHEDULE_CONTEXT, 32);
const NONCE_INFO = labeledInfo(HPKE_SUITE, 'base_nonce', KEY_SCHEDULE_CONTEXT, 12);

function keySchedule(dh: Buffer, encapped: Buffer, recipientUncompressed: Buffer): { key: Buffer; nonce: Buffer; aad: Buffer } {
  const kemContext = Buffer.concat([encapped, recipientUncompressed]);
  const sharedSecret = extractAndExpand(EMPTY, labeledIkm(KEM_SUITE, 'eae_prk', dh), labeledInfo(KEM_SUITE, 'shared_secret', kemContext, 32), 32);
  return {
    key: extractAndExpand(sharedSecret, SECRET_IKM, KEY_INFO, 32),
    nonce: extractAndExpand(sharedSecret, SECRET_IKM, NONCE_INFO, 12),
    aad: kemContext,
  };
}

/** `recipientPublic` may be compressed or uncompressed; the uncompressed form is what gets bound. */
export function hpkeSeal(plaintext: Buffer, recipientPublic: Buffer): { encapped: Buffer; ciphertext: Buffer } {
  let recipient: ReturnType<typeof parseP256PublicKey>;
  try {
    recipient = parseP256PublicKey(recipientPublic);
  } catch (error) {
    throw new HpkeError(`invalid recipient public key: ${(error as Error).message}`);
  }
  const ephemeral = generateP256();
  const dh = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient.key });
  const { key, nonce, aad } = keySchedule(dh, ephemeral.publicUncompressed, recipient.uncompressed);
  const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { encapped: ephemeral.publicUncompressed, ciphertext };
}

export function hpkeOpen(input: { encapped: Buffer; ciphertext: Buffer; recipientPrivate: KeyObject }): Buffer {
  const { encapped, ciphertext, recipientPrivate } = input;
  if (encapped.length !== 65 || encapped[0] !== 0x04) throw new HpkeError('encapsulated key must be a 65-byte uncompressed point');
  if (ciphertext.length < 16) throw new HpkeError('ciphertext is shorter than the authentication tag');
  try {
    const dh = diffieHellman({ privateKey: recipientPrivate, publicKey: parseP256PublicKey(encapped).key });
    const { key, nonce, aad } = keySchedule(dh, encapped, p256PublicUncompressed(recipientPrivate));
    const decipher = createDecipheriv('aes-256-gcm', key, nonce).setAAD(aad);
    decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
    return Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  } catch {
    throw new HpkeError('decryption failed');
  }
}
