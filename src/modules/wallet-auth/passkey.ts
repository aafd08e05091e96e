import { AppError } from '../../platform/errors.js';
import type { EmbeddedWalletConfig } from '../config/index.js';
import type { CredentialRow } from './repo.js';
import type { PasskeyAssertion, PasskeyCredentialCreate } from './schemas.js';

// Loaded on the first passkey check: the library is large and only passkey logins need it.
const webAuthn = () => import('@simplewebauthn/server');

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

export type PasskeyCheck = 'challenge' | 'origin' | 'rpId' | 'userPresence' | 'counter' | 'signature' | 'credential' | 'format';

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
