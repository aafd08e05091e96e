import { sha256Hex } from '../../platform/crypto/encoding.js';
import type { createRemoteJWKSet, JWTPayload } from 'jose';
import { AppError } from '../../platform/errors.js';
import { KNOWN_OIDC_ISSUERS, knownOidcIssuer, type KnownOidcIssuer } from '../../platform/oidc-issuers.js';
import { guardedJwksFetch, JwksFetchError, type JwksFetch, type Resolver } from './jwks-fetch.js';

/** jose (some 45 modules) is imported on the first OIDC login, not at start-up. */
let joseModule: Promise<typeof import('jose')> | undefined;
const jose = () => (joseModule ??= import('jose'));

/** Spec §4.4 / §8: a token may be at most this old when it arrives. */
export const MAX_TOKEN_AGE_MS = 60_000;
/** Tolerated drift between the issuer's clock and ours for `iat` in the future. */
const CLOCK_SKEW_MS = 5_000;
/**
 * A token may be valid for at most this long from now (Google's last an hour, Apple's at most a
 * day): a later `exp` is refused like an expired one, so what is stored of a used token
 * (`oidc_tokens_used.expires_at`) stays a real date.
 */
export const MAX_TOKEN_LIFETIME_MS = 24 * 3600_000;
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

/**
 * The issuer a token's `iss` resolved to. `jwksUri` is where its keys come from: a known
 * issuer's built-in location (never the platform's), or the platform's for one it configured
 * (`platformJwks`: fetched through the address guard).
 */
export interface ResolvedIssuer {
  issuer: string;
  jwksUri: string;
  audiences?: string[] | undefined;
  platformJwks: boolean;
}

/** A token that passed `OidcVerifier.verify`: its claims, the identity they name, and the JWKS a platform-configured issuer's keys came from. */
export interface OidcVerified {
  claims: JWTPayload;
  identity: OidcIdentity;
  jwksUri?: string;
}

export type OidcCheck = 'signature' | 'issuer' | 'audience' | 'iat' | 'nbf' | 'exp' | 'identity' | 'nonce' | 'replay';

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
 * What identifies a token for single use: the digest of its signed part (header and payload as
 * sent), not of the whole string. The signature segment can be spelled otherwise and still verify
 * (spare bits of its last base64url character; an ECDSA signature's (r, n − s)), so a digest of
 * the whole token let one token be spent once per spelling.
 */
export function oidcTokenDigest(token: string): string {
  return sha256Hex(token.slice(0, token.lastIndexOf('.')));
}

/**
 * Checks OIDC ID tokens against the issuers a platform trusts. JWKS are cached per URI; a token
 * whose `kid` the cache does not know makes jose fetch the set again (at most once per
 * `cooldownMs`), which is how issuer key rotation is followed.
 *
 * Whose keys: a known issuer's (Google, Apple) always come from its built-in JWKS location (or
 * the operator's `CORRIDOR_OIDC_JWKS_OVERRIDES`), never from a platform: a platform that could
 * repoint them could sign tokens for any of its end users' Google identities. A JWKS a platform
 * configured for its own issuer is fetched with `platformJwksFetch`: by default https only,
 * through the address guard webhooks and UMA use, at most 64 KiB.
 */
/**
 * Key sets one process keeps, least recently used dropped first: each JWKS a platform configures
 * adds one, and a platform may change its issuers without end. A dropped set is fetched again.
 */
const MAX_KEY_SETS = 1000;

export class OidcVerifier {
  /** In order of use, the most recent last. */
  private readonly keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

  private readonly known: readonly KnownOidcIssuer[];

  private readonly platformJwksFetch: JwksFetch;

  /**
   * `knownIssuers`: Google and Apple with their public JWKS unless replaced (tests, mirrors).
   * `resolver`: DNS for the guard (tests answer it). `platformJwksFetch`: replaces the guarded
   * fetch of platform-configured JWKS (tests that serve one locally).
   */
  constructor(
    private readonly options: {
      cooldownMs: number;
      cacheMaxAgeMs: number;
      timeoutMs: number;
      knownIssuers?: readonly KnownOidcIssuer[];
      resolver?: Resolver;
      platformJwksFetch?: JwksFetch;
      /** Key sets kept (MAX_KEY_SETS unless given: tests). */
      maxKeySets?: number;
    },
  ) {
    this.known = options.knownIssuers ?? KNOWN_OIDC_ISSUERS;
    this.platformJwksFetch = options.platformJwksFetch ?? guardedJwksFetch({ guard: true, ...(options.resolver ? { resolver: options.resolver } : {}) });
  }

  /**
   * The platform's entry for the token's `iss` (a known issuer matches in any of its spellings),
   * with the canonical issuer identities are stored under and the JWKS to check against. A
   * `jwksUri` stored on a known issuer's entry (configs saved before it was refused) is ignored.
   */
  private resolve(iss: unknown, trusted: TrustedIssuer[]): ResolvedIssuer | undefined {
    if (typeof iss !== 'string') return undefined;
    const known = knownOidcIssuer(iss, this.known);
    const entry = trusted.find((t) => t.issuer === iss || (known !== undefined && knownOidcIssuer(t.issuer, this.known) === known));
    if (!entry) return undefined;
    if (known) return { issuer: known.issuer, jwksUri: known.jwksUri, audiences: entry.audiences, platformJwks: false };
    if (!entry.jwksUri) return undefined;
    return { issuer: entry.issuer, jwksUri: entry.jwksUri, audiences: entry.audiences, platformJwks: true };
  }

  private async keySet(uri: string, platformJwks: boolean) {
    const cacheKey = `${platformJwks ? 'platform' : 'known'} ${uri}`;
    let set = this.keySets.get(cacheKey);
    if (set) {
      this.keySets.delete(cacheKey);
      this.keySets.set(cacheKey, set);
    } else {
      const { createRemoteJWKSet, customFetch } = await jose();
      set = createRemoteJWKSet(new URL(uri), {
        cooldownDuration: this.options.cooldownMs,
        cacheMaxAge: this.options.cacheMaxAgeMs,
        timeoutDuration: this.options.timeoutMs,
        ...(platformJwks ? { [customFetch]: this.platformJwksFetch } : {}),
      });
      this.keySets.set(cacheKey, set);
      if (this.keySets.size > (this.options.maxKeySets ?? MAX_KEY_SETS)) this.keySets.delete(this.keySets.keys().next().value!);
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
    let header: ReturnType<typeof decodeProtectedHeader>;
    let claims: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      claims = decodeJwt(token);
    } catch {
      throw malformed('the header or payload is not base64url JSON');
    }
    // jose verifies a JWS with an unencoded payload (RFC 7797, `b64: false` under `crit`) over the
    // payload segment's text, while the claims above are that segment base64url-decoded: a token
    // whose claims no key signed. A JWT never has either header (RFC 7797 §7).
    if (header.b64 !== undefined || header.crit !== undefined) throw malformed('a JWS with b64 or crit in its header is not a JWT');
    return claims;
  }

  /**
   * Signature (skipped in sandbox), trusted issuer, `iat` age and `exp`. Identity, nonce and
   * single use are the caller's to check, against the credential and the database.
   * `pinned`: the issuer and JWKS an OAUTH credential of a platform-configured issuer was
   * registered under; a token of that issuer is checked against that JWKS whatever the
   * platform's config says now. Answers `jwksUri` for such an issuer, so registration can pin it.
   */
  async verify(
    token: string,
    input: { trusted: TrustedIssuer[]; now: Date; checkSignature: boolean; pinned?: { iss: string; jwksUri?: string | undefined } | undefined },
  ): Promise<OidcVerified> {
    const claims = await this.decode(token);
    const resolved = this.resolve(claims.iss, input.trusted);
    if (!resolved) throw oidcRejected('issuer', `issuer ${JSON.stringify(claims.iss ?? null)} is not trusted by this platform (embeddedWalletConfig.oidcIssuers)`);
    const pinnedJwksUri = resolved.platformJwks && input.pinned?.iss === resolved.issuer ? input.pinned.jwksUri : undefined;
    const issuer = pinnedJwksUri ? { ...resolved, jwksUri: pinnedJwksUri } : resolved;
    if (input.checkSignature) {
      const { compactVerify, errors: joseErrors } = await jose();
      try {
        await compactVerify(token, await this.keySet(issuer.jwksUri, issuer.platformJwks), { algorithms: SIGNING_ALGORITHMS });
      } catch (error) {
        if (jwksUnavailable(error, joseErrors)) {
          const reason = error instanceof JwksFetchError ? ` (${error.message})` : '';
          throw new AppError('SERVICE_UNAVAILABLE', `The issuer's JWKS could not be fetched from ${issuer.jwksUri}${reason}. Retry later.`);
        }
        throw oidcRejected('signature', error instanceof joseErrors.JWKSNoMatchingKey ? 'no key of the issuer matches the token' : 'the signature does not verify');
      }
    }
    const now = input.now.getTime();
    if (typeof claims.iat !== 'number' || !Number.isFinite(claims.iat)) throw oidcRejected('iat', 'iat is missing');
    if (claims.iat * 1000 > now + CLOCK_SKEW_MS) throw oidcRejected('iat', 'iat is in the future');
    if (now - claims.iat * 1000 > MAX_TOKEN_AGE_MS) throw oidcRejected('iat', `the token was issued more than ${MAX_TOKEN_AGE_MS / 1000} seconds before this request`);
    // Optional (RFC 7519 §4.1.5), but a token that says it is not valid yet is not valid yet.
    if (claims.nbf !== undefined) {
      if (typeof claims.nbf !== 'number' || !Number.isFinite(claims.nbf)) throw oidcRejected('nbf', 'nbf is not a number');
      if (claims.nbf * 1000 > now + CLOCK_SKEW_MS) throw oidcRejected('nbf', 'the token is not valid yet (nbf is ahead)');
    }
    if (typeof claims.exp !== 'number' || !Number.isFinite(claims.exp) || claims.exp * 1000 <= now) throw oidcRejected('exp', 'the token has expired');
    if (claims.exp * 1000 > now + MAX_TOKEN_LIFETIME_MS + CLOCK_SKEW_MS) {
      throw oidcRejected('exp', `exp is more than ${MAX_TOKEN_LIFETIME_MS / 3600_000} hours ahead; no issuer Corridor accepts makes tokens that long-lived`);
    }
    const aud = Array.isArray(claims.aud) ? (claims.aud.length === 1 ? claims.aud[0] : undefined) : claims.aud;
    if (typeof claims.sub !== 'string' || !claims.sub || typeof aud !== 'string' || !aud) {
      throw oidcRejected('identity', 'sub and a single aud are required');
    }
    if (issuer.audiences && !issuer.audiences.includes(aud)) {
      throw oidcRejected('audience', `aud ${JSON.stringify(aud)} is not a client id of this platform at ${issuer.issuer} (embeddedWalletConfig.oidcIssuers[].audiences)`);
    }
    const email = typeof claims.email === 'string' ? claims.email : undefined;
    return {
      claims,
      identity: { iss: issuer.issuer, aud, sub: claims.sub, ...(email ? { email } : {}) },
      ...(issuer.platformJwks ? { jwksUri: issuer.jwksUri } : {}),
    };
  }
}

/**
 * Whether the JWKS itself could not be had (503: retry later) rather than the token failing it
 * (401 signature): unreachable, refused by the guard, timed out, not a 200, not a key set.
 */
function jwksUnavailable(error: unknown, joseErrors: typeof import('jose').errors): boolean {
  if (error instanceof JwksFetchError || error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid) return true;
  // jose's own fetch (known issuers): a network failure, or an answer that is not a 200 JSON key set.
  if (error instanceof joseErrors.JOSEError && error.code === 'ERR_JOSE_GENERIC' && /JSON Web Key Set/.test(error.message)) return true;
  return error instanceof Error && !(error instanceof joseErrors.JOSEError) && /fetch|network|ECONNREFUSED/i.test(error.message);
}
