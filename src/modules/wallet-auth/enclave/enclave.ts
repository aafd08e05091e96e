import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { generateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { generateP256, p256DeriveFromSeed, p256FromPrivateScalar, p256PrivateScalar, parseP256PublicKey } from '../../../platform/crypto/p256.js';
import { SecretBox } from '../../../platform/crypto/secret-box.js';
import {
  exportBundle,
  openEncryptedOtpBundle,
  otpEncryptionTargetBundle,
  otpVerificationToken,
  sealCredentialBundle,
  type EnclaveSigner,
} from './bundles.js';

export interface OtpTarget {
  /** The target's private key, sealed; only this enclave can use it. */
  sealedTargetKey: string;
  /** `otpEncryptionTargetBundle` for the client. */
  bundle: string;
}

export interface OpenedOtp {
  otpCode: string;
  /** The client's key pair inside the bundle, which becomes the session key (lowercase hex, as sent). */
  publicKey: string;
  publicKeyCompressed: string;
}

export interface IssuedSessionKey {
  publicKeyCompressed: string;
  /** The session private key sealed to the client's key; the only copy. */
  encryptedSessionSigningKey: string;
}

/**
 * Everything that touches wallet secrets and enclave keys, behind one interface so an external
 * enclave or HSM can take the in-process one's place. Secrets never leave it unsealed.
 */
export interface WalletEnclave {
  /** Uncompressed hex of the key that signs target bundles, export bundles and verification tokens. */
  readonly publicKey: string;
  createWalletSecret(accountId: string): string;
  /** A fresh target for the code of challenge `challenge`, its key sealed to that challenge. */
  newOtpTarget(organizationId: string, challenge: OtpChallengeRef): OtpTarget;
  /**
   * Throws BundleError when the bundle was not made for this target or is malformed, and
   * SecretBoxError when the sealed key was not sealed for `challenge`.
   */
  openOtp(sealedTargetKey: string, encryptedOtpBundle: string, challenge: OtpChallengeRef): Promise<OpenedOtp>;
  /** A keyed hash of an OTP, bound to its challenge, so stored hashes cannot be brute-forced offline. */
  otpHash(challengeId: string, code: string): string;
  otpMatches(challengeId: string, code: string, hash: string): boolean;
  verificationToken(claims: Parameters<typeof otpVerificationToken>[0]): string;
  /** A new session key pair whose private half is sealed to `clientPublicKey` (uncompressed). */
  issueSessionKey(clientPublicKey: Buffer): Promise<IssuedSessionKey>;
  exportWallet(sealedSecret: string, accountId: string, clientPublicKey: Buffer, organizationId: string): Promise<string>;
}

/** The challenge an OTP target key belongs to: the row it is stored in, and that row's credential. */
export interface OtpChallengeRef {
  challengeId: string;
  credentialId: string;
}

/**
 * The associated data an OTP target key is sealed under: its challenge and credential, so a
 * sealed key copied into another challenge row, or a row moved to another credential, does not
 * open. Keys sealed under the former constant ('otp-target') no longer open either: a code
 * outstanding at the upgrade (at most `expirationSeconds`) answers OTP_NOT_ISSUED, and the
 * end user asks for a new one; accepting the constant as well would let any such key, kept,
 * open in any row for ever.
 */
function otpTargetAad({ challengeId, credentialId }: OtpChallengeRef): string {
  return `otp-target\n${challengeId}\n${credentialId}`;
}

/** The enclave inside the Corridor process: keys derived from, and secrets sealed under, the master key. */
export class LocalEnclave implements WalletEnclave {
  readonly publicKey: string;
  private readonly signer: EnclaveSigner;
  private readonly secrets: SecretBox;
  private readonly targets: SecretBox;
  private readonly otpKey: Buffer;

  constructor(masterKey: Buffer) {
    const signing = p256DeriveFromSeed(masterKey, 'corridor/enclave-signing');
    this.publicKey = signing.publicUncompressed.toString('hex');
    this.signer = { privateKey: signing.privateKey, publicHex: this.publicKey };
    this.secrets = new SecretBox(masterKey, 'wallet-secret');
    this.targets = new SecretBox(masterKey, 'otp-target');
    this.otpKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'corridor/otp-hash', 32));
  }

  createWalletSecret(accountId: string): string {
    return this.secrets.seal(Buffer.from(generateMnemonic(wordlist, 256), 'utf8'), accountId);
  }

  newOtpTarget(organizationId: string, challenge: OtpChallengeRef): OtpTarget {
    const target = generateP256();
    return {
      sealedTargetKey: this.targets.seal(p256PrivateScalar(target.privateKey), otpTargetAad(challenge)),
      bundle: otpEncryptionTargetBundle(target.publicUncompressed, this.signer, organizationId),
    };
  }

  async openOtp(sealedTargetKey: string, encryptedOtpBundle: string, challenge: OtpChallengeRef): Promise<OpenedOtp> {
    const target = p256FromPrivateScalar(this.targets.open(sealedTargetKey, otpTargetAad(challenge)));
    return openEncryptedOtpBundle(encryptedOtpBundle, target.privateKey);
  }

  otpHash(challengeId: string, code: string): string {
    return createHmac('sha256', this.otpKey).update(`${challengeId}\n${code}`).digest('hex');
  }

  otpMatches(challengeId: string, code: string, hash: string): boolean {
    const expected = Buffer.from(hash, 'hex');
    const actual = Buffer.from(this.otpHash(challengeId, code), 'hex');
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }

  verificationToken(claims: Parameters<typeof otpVerificationToken>[0]): string {
    return otpVerificationToken(claims, this.signer);
  }

  async issueSessionKey(clientPublicKey: Buffer): Promise<IssuedSessionKey> {
    const session = generateP256();
    return {
      publicKeyCompressed: session.publicCompressed.toString('hex'),
      encryptedSessionSigningKey: await sealCredentialBundle(p256PrivateScalar(session.privateKey), parseP256PublicKey(clientPublicKey).uncompressed),
    };
  }

  async exportWallet(sealedSecret: string, accountId: string, clientPublicKey: Buffer, organizationId: string): Promise<string> {
    const mnemonic = this.secrets.open(sealedSecret, accountId);
    return exportBundle(mnemonic, clientPublicKey, this.signer, organizationId);
  }
}
