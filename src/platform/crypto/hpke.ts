import type { CipherSuite } from '@hpke/core';
import type { KeyObject } from 'node:crypto';
import { p256PrivateScalar, p256PublicUncompressed, parseP256PublicKey } from './p256.js';

/*
 * HPKE (RFC 9180) base mode, DHKEM(P-256, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM, from
 * @hpke/core, as Turnkey runs it: the info is "turnkey_hpke" and the AEAD additional data is
 * enc || pkR (both uncompressed) rather than empty. One message per context (sequence 0).
 * Interoperability with @turnkey/crypto in both directions is proved in test/unit/wallet-crypto.
 */

export class HpkeError extends Error {}

/** @hpke/core (some 45 modules) is imported on the first seal or open, not at start-up. */
let suite: Promise<CipherSuite> | undefined;
const cipherSuite = () =>
  (suite ??= import('@hpke/core').then(({ Aes256Gcm, CipherSuite, DhkemP256HkdfSha256, HkdfSha256 }) => new CipherSuite({ kem: new DhkemP256HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() })));
const INFO = new TextEncoder().encode('turnkey_hpke');

/** A copy as a standalone ArrayBuffer (a Buffer may be a view into a shared pool). */
const bytes = (buffer: Buffer): ArrayBuffer => buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;

/** `recipientPublic` may be compressed or uncompressed; the uncompressed form is what gets bound. */
export async function hpkeSeal(plaintext: Buffer, recipientPublic: Buffer): Promise<{ encapped: Buffer; ciphertext: Buffer }> {
  let recipient: Buffer;
  try {
    recipient = parseP256PublicKey(recipientPublic).uncompressed;
  } catch (error) {
    throw new HpkeError(`invalid recipient public key: ${(error as Error).message}`);
  }
  const SUITE = await cipherSuite();
  const sender = await SUITE.createSenderContext({ recipientPublicKey: await SUITE.kem.deserializePublicKey(bytes(recipient)), info: INFO });
  const encapped = Buffer.from(sender.enc);
  const ciphertext = Buffer.from(await sender.seal(bytes(plaintext), bytes(Buffer.concat([encapped, recipient]))));
  return { encapped, ciphertext };
}

export async function hpkeOpen(input: { encapped: Buffer; ciphertext: Buffer; recipientPrivate: KeyObject }): Promise<Buffer> {
  const { encapped, ciphertext, recipientPrivate } = input;
  if (encapped.length !== 65 || encapped[0] !== 0x04) throw new HpkeError('encapsulated key must be a 65-byte uncompressed point');
  if (ciphertext.length < 16) throw new HpkeError('ciphertext is shorter than the authentication tag');
  const SUITE = await cipherSuite();
  try {
    const recipientKey = await SUITE.kem.deserializePrivateKey(bytes(p256PrivateScalar(recipientPrivate)));
    const context = await SUITE.createRecipientContext({ recipientKey, enc: bytes(encapped), info: INFO });
    return Buffer.from(await context.open(bytes(ciphertext), bytes(Buffer.concat([encapped, p256PublicUncompressed(recipientPrivate)]))));
  } catch {
    throw new HpkeError('decryption failed');
  }
}
