import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import type { ManualClock } from '../../src/platform/clock.js';

type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/** An OIDC issuer for tests: signs ID tokens with its current key and serves its JWKS over HTTP. */
export class TestIssuer {
  private server: Server | undefined;
  private keys: Array<{ kid: string; privateKey: SigningKey; jwk: JWK }> = [];
  jwksRequests = 0;
  issuer = '';
  jwksUri = '';

  static async start(): Promise<TestIssuer> {
    const issuer = new TestIssuer();
    await issuer.rotate();
    issuer.server = createServer((_request, response) => {
      issuer.jwksRequests++;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: issuer.keys.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve) => issuer.server!.listen(0, '127.0.0.1', resolve));
    const { port } = issuer.server.address() as { port: number };
    issuer.issuer = `http://127.0.0.1:${port}`;
    issuer.jwksUri = `http://127.0.0.1:${port}/jwks`;
    return issuer;
  }

  /** A new signing key, published alone: tokens of the old key no longer verify. */
  async rotate(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const kid = `k${this.keys.length + 1}-${Date.now()}`;
    this.keys = [{ kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } }];
  }

  async token(claims: Record<string, unknown>, options: { iat: number; expiresIn?: number; key?: SigningKey; kid?: string }): Promise<string> {
    const current = this.keys[0]!;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? current.kid, typ: 'JWT' })
      .setIssuer(typeof claims.iss === 'string' ? claims.iss : this.issuer)
      .setIssuedAt(options.iat)
      .setExpirationTime(options.iat + (options.expiresIn ?? 600))
      .sign(options.key ?? current.privateKey);
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** Moves `clock` forward to the next whole second (a JWT's times are whole seconds) and answers it, in seconds. */
export function nextWholeSecond(clock: ManualClock): number {
  const seconds = Math.ceil(clock.now().getTime() / 1000) + 1;
  clock.set(new Date(seconds * 1000));
  return seconds;
}
