/**
 * OIDC issuers Corridor knows without setup (issue 12 C20): a platform names one in
 * `embeddedWalletConfig.oidcIssuers` with only its client ids (`audiences`); the JWKS location
 * comes from here. `aliases` are other spellings of `iss` the issuer uses for the same
 * identities (Google issues both `https://accounts.google.com` and the bare host), so a
 * credential's identity is stored under the canonical `issuer` whichever form a token carries.
 */
export interface KnownOidcIssuer {
  issuer: string;
  aliases: string[];
  jwksUri: string;
}

export const KNOWN_OIDC_ISSUERS: readonly KnownOidcIssuer[] = [
  { issuer: 'https://accounts.google.com', aliases: ['accounts.google.com'], jwksUri: 'https://www.googleapis.com/oauth2/v3/certs' },
  { issuer: 'https://appleid.apple.com', aliases: [], jwksUri: 'https://appleid.apple.com/auth/keys' },
];

/** The known issuer that `iss` names (canonical form or alias), if any. */
export function knownOidcIssuer(iss: string, known: readonly KnownOidcIssuer[] = KNOWN_OIDC_ISSUERS): KnownOidcIssuer | undefined {
  return known.find((k) => k.issuer === iss || k.aliases.includes(iss));
}

/**
 * The known issuers with some JWKS locations replaced, e.g. by a mirror in an air-gapped
 * deployment or a local issuer in tests (`CORRIDOR_OIDC_JWKS_OVERRIDES`).
 */
export function withJwksOverrides(overrides: Record<string, string>): KnownOidcIssuer[] {
  return KNOWN_OIDC_ISSUERS.map((k) => (overrides[k.issuer] ? { ...k, jwksUri: overrides[k.issuer]! } : k));
}
