import { sha256Hex } from '../../platform/crypto/encoding.js';
import type { createRemoteJWKSet, JWTPayload } from 'jose';
import { AppError } from '../../platform/errors.js';
import { KNOWN_OIDC_ISSUERS, knownOidcIssuer, type KnownOidcIssuer } from '../../platform/oidc-issuers.js';

/** jose (some 45 modules) is imported on the first OIDC login, not at start-up. */
let joseModule: Promise<typeof import('jose')> | undefined;
const jose = () => (joseModule ??= import('jose'));

/** Spec §4.4 / §8: a token may be at most this old when it arrives. */
export const MAX_TOKEN_AGE_MS = 60_000;
/** Tolerated drift between the issuer's clock and ours for `iat` in the future. */
const CLOCK_SKEW_MS = 5_000;
const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'];

/** An issuer as a platform configures it: a known one needs no `jwksUri`; `audiences` limits `aud`. */
export interface TrustedIssuer {
  issuer: string;
  jwksUri?: string | undefined;
  audiences?: string[] | undefined;
}

/** The identity an OAUTH credential is bound to. */
export interface OidcIdentity {
  iss: string;
  aud: string;
  sub: string;
  email?: string;
}

export type OidcCheck = 'signature' | 'issuer' | 'audience' | 'iat' | 'exp' | 'identity' | 'nonce' | 'replay';

export function oidcRejected(check: OidcCheck, message: string): AppError {
  return new AppError('UNAUTHORIZED', `The OIDC token failed the ${check} check: ${message}`, { details: { check } });
}

function malformed(message: string): AppError {
  return new AppError('INVALID_INPUT', `oidcToken is not a well-formed JWT: ${message}`, {
    details: { errors: [{ field: 'oidcToken', message }] },
  });
}

/** Lowercase hex SHA-256 of the exact `clientPublicKey` string: what the token's `nonce` must be. */
export function nonceFor(clientPublicKey: string): string {
  return sha256Hex(clientPublicKey);
}

/**
 * Checks OIDC ID tokens against the issuers a platform trusts. JWKS are fetched over HTTPS and
 * cached per URI; a token whose `kid` the cache does not know makes jose fetch the set again
 * (at most once per `cooldownMs`), which is how issuer key rotation is followed.
 */
export class OidcVerifier {
  private readonly keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

  private readonly known: readonly KnownOidcIssuer[];

  /** `knownIssuers`: Google and Apple with their public JWKS unless replaced (tests, mirrors). */
  constructor(private readonly options: { cooldownMs: number; cacheMaxAgeMs: number; timeoutMs: number; knownIssuers?: readonly KnownOidcIssuer[] }) {
    this.known = options.knownIssuers ?? KNOWN_OIDC_ISSUERS;
  }

  /**
   * The platform's entry for the token's `iss` (a known issuer matches in any of its spellings),
   * with the canonical issuer identities are stored under and the JWKS to check against.
   */
  private resolve(iss: unknown, trusted: TrustedIssuer[]): { issuer: string; jwksUri: string; audiences?: string[] | undefined } | undefined {
    if (typeof iss !== 'string') return undefined;
    const known = knownOidcIssuer(iss, this.known);
    const entry = trusted.find((t) => t.issuer === iss || (known !== undefined && knownOidcIssuer(t.issuer, this.known) === known));
    if (!entry) return undefined;
    const jwksUri = entry.jwksUri ?? known?.jwksUri;
    if (!jwksUri) return undefined;
    return { issuer: known?.issuer ?? entry.issuer, jwksUri, audiences: entry.audiences };
  }

  private async keySet(uri: string) {
    let set = this.keySets.get(uri);
    if (!set) {
      const { createRemoteJWKSet } = await jose();
      set = createRemoteJWKSet(new URL(uri), {
        cooldownDuration: this.options.cooldownMs,
        cacheMaxAge: this.options.cacheMaxAgeMs,
        timeoutDuration: this.options.timeoutMs,
      });
      this.keySets.set(uri, set);
    }
    return set;
  }

  /** The token's claims, if it is JWT-shaped (400 INVALID_INPUT otherwise). */
  private async decode(token: string): Promise<JWTPayload> {
    const { decodeJwt, decodeProtectedHeader } = await jose();
    const parts = token.split('.');
    if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p)) || !parts[0] || !parts[1]) {
      throw malformed('expected three base64url segments');
    }
    try {
      decodeProtectedHeader(token);
      return decodeJwt(token);
    } catch {
      throw malformed('the header or payload is not base64url JSON');
    }
  }

  /**
   * Signature (skipped in sandbox), trusted issuer, `iat` age and `exp`. Identity, nonce and
   * single use are the caller's to check, against the credential and the database.
   */
  async verify(token: string, input: { trusted: TrustedIssuer[]; now: Date; checkSignature: boolean }): Promise<{ claims: JWTPayload; identity: OidcIdentity }> {
    const claims = await this.decode(token);
    const issuer = this.resolve(claims.iss, input.trusted);
    if (!issuer) throw oidcRejected('issuer', `issuer ${JSON.stringify(claims.iss ?? null)} is not trusted by this platform (embeddedWalletConfig.oidcIssuers)`);
    if (input.checkSignature) {
      const { compactVerify, errors: joseErrors } = await jose();
      try {
        await compactVerify(token, await this.keySet(issuer.jwksUri), { algorithms: SIGNING_ALGORITHMS });
      } catch (error) {
        if (error instanceof joseErrors.JWKSTimeout || (error instanceof Error && /fetch|network|ECONNREFUSED/i.test(error.message))) {
          throw new AppError('SERVICE_UNAVAILABLE', `The issuer's JWKS could not be fetched from ${issuer.jwksUri}. Retry later.`);
        }
        throw oidcRejected('signature', error instanceof joseErrors.JWKSNoMatchingKey ? 'no key of the issuer matches the token' : 'the signature does not verify');
      }
    }
    const now = input.now.getTime();
    if (typeof claims.iat !== 'number') throw oidcRejected('iat', 'iat is missing');
    if (claims.iat * 1000 > now + CLOCK_SKEW_MS) throw oidcRejected('iat', 'iat is in the future');
    if (now - claims.iat * 1000 > MAX_TOKEN_AGE_MS) throw oidcRejected('iat', `the token was issued more than ${MAX_TOKEN_AGE_MS / 1000} seconds before this request`);
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) throw oidcRejected('exp', 'the token has expired');
    const aud = Array.isArray(claims.aud) ? (claims.aud.length === 1 ? claims.aud[0] : undefined) : claims.aud;
    if (typeof claims.sub !== 'string' || !claims.sub || typeof aud !== 'string' || !aud) {
      throw oidcRejected('identity', 'sub and a single aud are required');
    }
    if (issuer.audiences && !issuer.audiences.includes(aud)) {
      throw oidcRejected('audience', `aud ${JSON.stringify(aud)} is not a client id of this platform at ${issuer.issuer} (embeddedWalletConfig.oidcIssuers[].audiences)`);
    }
    const email = typeof claims.email === 'string' ? claims.email : undefined;
    return { claims, identity: { iss: issuer.issuer, aud, sub: claims.sub, ...(email ? { email } : {}) } };
  }
}
