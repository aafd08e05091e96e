import type { KeyObject } from 'node:crypto';
import { base58checkEncode } from '../../../platform/crypto/encoding.js';
import { HpkeError, hpkeOpen, hpkeSeal } from '../../../platform/crypto/hpke.js';
import { signEs256Jwt } from '../../../platform/crypto/jwt.js';
import { ecdsaSignDer, InvalidKeyError, parseP256PublicKey } from '../../../platform/crypto/p256.js';

/*
 * The wire formats of Turnkey's enclave bundles, byte-compatible with @turnkey/crypto so that
 * unmodified Turnkey client code can talk to this service.
 */

export interface EnclaveSigner {
  privateKey: KeyObject;
  /** Uncompressed, lowercase hex (130 characters); clients compare it as a string. */
  publicHex: string;
}

/** The message names what is wrong with the bundle, never its secret content. */
export class BundleError extends Error {}

const BUNDLE_VERSION = 'v1.0.0';
const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const UNCOMPRESSED_HEX = /^04[0-9a-fA-F]{128}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Clients verify `dataSignature` over the hex-decoded `data`, not over the hex string. */
function signedBundle(data: Record<string, string>, signer: EnclaveSigner): string {
  const bytes = Buffer.from(JSON.stringify(data), 'utf8');
  return JSON.stringify({
    version: BUNDLE_VERSION,
    data: bytes.toString('hex'),
    dataSignature: ecdsaSignDer(bytes, signer.privateKey).toString('hex'),
    enclaveQuorumPublic: signer.publicHex,
  });
}

async function seal(plaintext: Buffer, recipient: Buffer): Promise<{ encapped: Buffer; ciphertext: Buffer }> {
  try {
    return await hpkeSeal(plaintext, recipient);
  } catch (error) {
    if (error instanceof HpkeError) throw new BundleError(error.message);
    throw error;
  }
}

function jsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BundleError(`${what} is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new BundleError(`${what} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/** Server → client: the key the client encrypts its OTP to, signed so the client can trust it. */
export function otpEncryptionTargetBundle(targetPublicUncompressed: Buffer, signer: EnclaveSigner, organizationId: string): string {
  let targetPublic: string;
  try {
    targetPublic = parseP256PublicKey(targetPublicUncompressed).uncompressed.toString('hex');
  } catch (error) {
    if (error instanceof InvalidKeyError) throw new BundleError(`target public key: ${error.message}`);
    throw error;
  }
  return signedBundle({ organizationId, targetPublic }, signer);
}

/** Client → server: `encryptedOtpBundle` as @turnkey/crypto's encryptOtpCodeToBundle makes it. */
export async function openEncryptedOtpBundle(encryptedOtpBundle: string, targetPrivate: KeyObject): Promise<{ otpCode: string; publicKey: string; publicKeyCompressed: string }> {
  const { encappedPublic, ciphertext } = jsonObject(encryptedOtpBundle, 'encryptedOtpBundle');
  if (typeof encappedPublic !== 'string' || !UNCOMPRESSED_HEX.test(encappedPublic)) {
    throw new BundleError('encappedPublic is not an uncompressed public key (130 hex characters starting 04)');
  }
  if (typeof ciphertext !== 'string' || !HEX.test(ciphertext)) throw new BundleError('ciphertext is not hex');

  let plaintext: Buffer;
  try {
    plaintext = await hpkeOpen({ encapped: Buffer.from(encappedPublic, 'hex'), ciphertext: Buffer.from(ciphertext, 'hex'), recipientPrivate: targetPrivate });
  } catch (error) {
    if (error instanceof HpkeError) throw new BundleError('encryptedOtpBundle cannot be decrypted with this target key');
    throw error;
  }
  let text: string;
  try {
    text = utf8.decode(plaintext);
  } catch {
    throw new BundleError('decrypted OTP bundle is not UTF-8');
  }
  const { otp_code: otpCode, public_key: publicKey } = jsonObject(text, 'decrypted OTP bundle');
  if (typeof otpCode !== 'string' || otpCode.length < 1 || otpCode.length > 64) throw new BundleError('otp_code is not a string of 1 to 64 characters');
  if (typeof publicKey !== 'string') throw new BundleError('public_key is not a string');
  let publicKeyCompressed: string;
  try {
    publicKeyCompressed = parseP256PublicKey(publicKey).compressed.toString('hex');
  } catch (error) {
    if (error instanceof InvalidKeyError) throw new BundleError(`public_key: ${error.message}`);
    throw error;
  }
  return { otpCode, publicKey: publicKey.toLowerCase(), publicKeyCompressed };
}

/**
 * The legacy credential bundle (e.g. `encryptedSessionSigningKey`): Base58Check of the compressed
 * encapsulated key followed by the ciphertext. Clients decompress the key before opening, so the
 * HPKE context still binds the uncompressed form.
 */
export async function sealCredentialBundle(secret: Buffer, recipientUncompressed: Buffer): Promise<string> {
  const { encapped, ciphertext } = await seal(secret, recipientUncompressed);
  return base58checkEncode(Buffer.concat([parseP256PublicKey(encapped).compressed, ciphertext]));
}

/** The wallet export bundle; `organizationId` is signed so a client can refuse a bundle made for someone else. */
export async function exportBundle(plaintext: Buffer, recipientUncompressed: Buffer, signer: EnclaveSigner, organizationId: string): Promise<string> {
  const { encapped, ciphertext } = await seal(plaintext, recipientUncompressed);
  return signedBundle({ encappedPublic: encapped.toString('hex'), ciphertext: ciphertext.toString('hex'), organizationId }, signer);
}

/**
 * The OTP verification token: a plain ES256 JWT (unlike Turnkey session JWTs, which sign a double
 * SHA-256). Clients require every listed claim as a non-empty string and read `exp` as epoch
 * milliseconds.
 */
export function otpVerificationToken(
  claims: { id: string; verification_type: string; contact: string; organization_id: string; public_key: string; exp: string } & Record<string, string>,
  signer: EnclaveSigner,
): string {
  return signEs256Jwt(claims, signer.privateKey);
}
