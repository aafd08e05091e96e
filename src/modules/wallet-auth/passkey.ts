import { createPublicKey } from 'node:crypto';
import { InvalidKeyError, parseP256PublicKey } from '../../platform/crypto/p256.js';
import { AppError } from '../../platform/errors.js';
import type { EmbeddedWalletConfig } from '../config/index.js';
import type { CredentialRow } from './repo.js';
import type { PasskeyAssertion, PasskeyCredentialCreate } from './schemas.js';

// Loaded on the first passkey check: the library is large and only passkey logins need it.
const webAuthn = () => import('@simplewebauthn/server');
const webAuthnHelpers = () => import('@simplewebauthn/server/helpers');

/**
 * COSE algorithms a passkey may sign with: those upstream names for assertions (ES256 with a DER
 * signature, RS256, EdDSA). Pinned, not the library's default, which follows its version and the
 * runtime (it adds ML-DSA-44 where the runtime has it); `credentialKeyProblem` checks each key.
 */
const SUPPORTED_ALGORITHMS = [-7, -8, -257];
const COSE = { kty: 1, alg: 3, crv: -1, x: -2, y: -3, n: -1, e: -2 } as const;
const RSA_EXPONENT = Buffer.from([0x01, 0x00, 0x01]);

/**
 * Ed25519 points of order 1, 2, 4 and 8 (libsodium's blocklist; the sign bit cleared). Node
 * accepts them as keys, and under one a signature anyone can make verifies: for the identity,
 * R = identity and S = 0 for every message. A passkey with such a key would let whoever knows
 * its credential id log in without any private key.
 */
const ED25519_SMALL_ORDER = new Set([
  '00'.repeat(32),
  `01${'00'.repeat(31)}`,
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  `ec${'ff'.repeat(30)}7f`,
]);
const ED25519_P = 2n ** 255n - 19n;

/** A small-order point, or y not below p (non-canonical: y + p spells the point y, p + 1 the identity). */
function weakEd25519Key(x: Buffer): boolean {
  const y = Buffer.from(x);
  y[31]! &= 0x7f;
  return BigInt(`0x${Buffer.from(y).reverse().toString('hex')}`) >= ED25519_P || ED25519_SMALL_ORDER.has(y.toString('hex'));
}

export interface PasskeySettings {
  rpId: string;
  origins: string[];
}

/** What is kept of a registered passkey to verify its assertions. */
export interface StoredPasskey {
  webauthnId: string;
  /** COSE public key, base64url. */
  publicKey: string;
  counter: number;
  transports?: string[];
}

/** The passkey facts an active PASSKEY credential keeps (its `details` and WebAuthn id). */
export function storedPasskey(credential: CredentialRow): StoredPasskey {
  const details = credential.details as { publicKey: string; counter: number; transports?: string[] };
  return { webauthnId: credential.webauthn_id!, publicKey: details.publicKey, counter: details.counter, ...(details.transports ? { transports: details.transports } : {}) };
}

export type PasskeyCheck = 'challenge' | 'origin' | 'rpId' | 'userPresence' | 'counter' | 'signature' | 'credential' | 'publicKey' | 'format';

/** Which check a @simplewebauthn/server error is about, from its message. */
function checkOf(error: unknown): PasskeyCheck {
  const message = error instanceof Error ? `${error.name} ${error.message}` : '';
  if (/challenge/i.test(message)) return 'challenge';
  if (/origin/i.test(message)) return 'origin';
  if (/RP ?ID/i.test(message)) return 'rpId';
  if (/not present/i.test(message)) return 'userPresence';
  if (/counter/i.test(message)) return 'counter';
  if (/signature/i.test(message)) return 'signature';
  return 'format';
}

export function passkeyRejected(check: PasskeyCheck, message: string): AppError {
  return new AppError('UNAUTHORIZED', `The passkey assertion failed the ${check} check: ${message}`, { details: { check } });
}

/** The platform's relying party; passkeys cannot be used until it is configured. */
export function passkeySettings(config: EmbeddedWalletConfig | undefined): PasskeySettings {
  if (!config?.passkeyRpId || !config.passkeyOrigins?.length) {
    throw new AppError('INVALID_INPUT', 'Passkeys need embeddedWalletConfig.passkeyRpId and passkeyOrigins; set them with PATCH /config.', {
      details: { errors: [{ field: 'type', message: 'PASSKEY is not configured for this platform' }] },
    });
  }
  return { rpId: config.passkeyRpId, origins: config.passkeyOrigins };
}

const bytesOf = (value: unknown): Buffer | undefined => (value instanceof Uint8Array ? Buffer.from(value) : undefined);

/**
 * Why a passkey's credential public key (COSE_Key) cannot be one of SUPPORTED_ALGORITHMS that
 * authenticates anything, or undefined. With `none` attestation (what browsers send by default)
 * the library checks nothing of the key and stores whatever the authenticator data carries: a
 * point off the curve, another curve under ES256, a short RSA modulus, an Ed25519 point of small
 * order. Checked at registration, and at each login for keys stored before this check.
 */
async function credentialKeyProblem(coseKey: Uint8Array<ArrayBuffer>): Promise<string | undefined> {
  const { decodeCredentialPublicKey } = await webAuthnHelpers();
  let cose: Map<number, unknown>;
  try {
    cose = decodeCredentialPublicKey(coseKey) as Map<number, unknown>;
  } catch {
    return 'the key is not a CBOR map';
  }
  if (!(cose instanceof Map)) return 'the key is not a CBOR map';
  const alg = cose.get(COSE.alg);
  switch (cose.get(COSE.kty)) {
    case 2: {
      const x = bytesOf(cose.get(COSE.x));
      const y = bytesOf(cose.get(COSE.y));
      if (alg !== -7 || cose.get(COSE.crv) !== 1) return 'an EC2 key must be ES256 on P-256 (alg -7, crv 1)';
      if (x?.length !== 32 || y?.length !== 32) return 'an ES256 key needs 32-byte x and y';
      try {
        parseP256PublicKey(Buffer.concat([Buffer.from([0x04]), x, y]));
      } catch (error) {
        if (error instanceof InvalidKeyError) return 'the ES256 key is not a point on P-256';
        throw error;
      }
      return undefined;
    }
    case 1: {
      const x = bytesOf(cose.get(COSE.x));
      if (alg !== -8 || cose.get(COSE.crv) !== 6 || x?.length !== 32) return 'an OKP key must be EdDSA on Ed25519 (alg -8, crv 6) with a 32-byte x';
      if (weakEd25519Key(x)) return 'the EdDSA key is a point of small order or not canonically encoded';
      return undefined;
    }
    case 3: {
      const n = bytesOf(cose.get(COSE.n));
      const e = bytesOf(cose.get(COSE.e));
      if (alg !== -257) return 'an RSA key must be RS256 (alg -257)';
      if (!n || n[0] === 0 || n.length < 256 || n.length > 512 || !(n[n.length - 1]! & 1)) return 'an RS256 modulus must be odd and of 2048 to 4096 bits';
      if (!e?.equals(RSA_EXPONENT)) return 'an RS256 public exponent must be 65537';
      try {
        createPublicKey({ key: { kty: 'RSA', n: n.toString('base64url'), e: e.toString('base64url') }, format: 'jwk' });
      } catch {
        return 'the RS256 key cannot be imported';
      }
      return undefined;
    }
    default:
      return 'the key type is not EC2, OKP or RSA';
  }
}

/** Verifies a registration ceremony (`none` or any attestation format the library knows). */
export async function verifyRegistration(body: PasskeyCredentialCreate, settings: PasskeySettings): Promise<StoredPasskey> {
  const { attestation } = body;
  let result;
  try {
    const { verifyRegistrationResponse } = await webAuthn();
    result = await verifyRegistrationResponse({
      response: {
        id: attestation.credentialId,
        rawId: attestation.credentialId,
        type: 'public-key',
        response: {
          clientDataJSON: attestation.clientDataJson,
          attestationObject: attestation.attestationObject,
          ...(attestation.transports ? { transports: attestation.transports } : {}),
        },
        clientExtensionResults: {},
      },
      expectedChallenge: body.challenge,
      expectedOrigin: settings.origins,
      expectedRPID: settings.rpId,
      requireUserVerification: false,
      supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
    });
  } catch (error) {
    throw new AppError('INVALID_INPUT', `The passkey attestation does not verify: ${(error as Error).message}`, {
      details: { check: checkOf(error), errors: [{ field: 'attestation', message: 'does not verify' }] },
    });
  }
  if (!result.verified) {
    throw new AppError('INVALID_INPUT', 'The passkey attestation does not verify.', { details: { check: 'signature', errors: [{ field: 'attestation', message: 'does not verify' }] } });
  }
  const { credential } = result.registrationInfo;
  // The library takes the id from the authenticator data and never compares it with rawId: a
  // mismatch is an altered response, and an id longer than any assertion may name (1023 bytes,
  // WebAuthn) could never log in.
  if (credential.id !== attestation.credentialId) {
    throw new AppError('INVALID_INPUT', 'The passkey attestation names another credentialId than its authenticator data.', {
      details: { check: 'credential', errors: [{ field: 'attestation', message: 'credentialId is not the one in the authenticator data' }] },
    });
  }
  const keyProblem = await credentialKeyProblem(credential.publicKey);
  if (keyProblem) {
    throw new AppError('INVALID_INPUT', `The passkey's public key cannot be used: ${keyProblem}.`, {
      details: { check: 'publicKey', errors: [{ field: 'attestation', message: keyProblem }] },
    });
  }
  return {
    webauthnId: credential.id,
    publicKey: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    ...(attestation.transports ? { transports: attestation.transports } : {}),
  };
}

/**
 * Verifies an assertion over `challenge` (the UTF-8 bytes of the string the challenge call
 * answered); answers the authenticator's new signature counter.
 */
export async function verifyAssertion(assertion: PasskeyAssertion, challenge: string, stored: StoredPasskey, settings: PasskeySettings): Promise<number> {
  if (assertion.credentialId !== stored.webauthnId) throw passkeyRejected('credential', 'the assertion is for another passkey');
  // Passkeys registered before their keys were checked: one whose key anyone can sign for proves nothing.
  const keyProblem = await credentialKeyProblem(Buffer.from(stored.publicKey, 'base64url'));
  if (keyProblem) throw passkeyRejected('publicKey', `the registered key cannot be used (${keyProblem}); register the passkey again`);
  let result;
  try {
    const { verifyAuthenticationResponse } = await webAuthn();
    result = await verifyAuthenticationResponse({
      response: {
        id: assertion.credentialId,
        rawId: assertion.credentialId,
        type: 'public-key',
        response: {
          clientDataJSON: assertion.clientDataJson,
          authenticatorData: assertion.authenticatorData,
          signature: assertion.signature,
          ...(assertion.userHandle ? { userHandle: assertion.userHandle } : {}),
        },
        clientExtensionResults: {},
      },
      expectedChallenge: Buffer.from(challenge, 'utf8').toString('base64url'),
      expectedOrigin: settings.origins,
      expectedRPID: settings.rpId,
      credential: { id: stored.webauthnId, publicKey: Buffer.from(stored.publicKey, 'base64url'), counter: stored.counter },
      requireUserVerification: false,
    });
  } catch (error) {
    throw passkeyRejected(checkOf(error), (error as Error).message);
  }
  if (!result.verified) throw passkeyRejected('signature', 'the signature does not verify');
  return result.authenticationInfo.newCounter;
}
