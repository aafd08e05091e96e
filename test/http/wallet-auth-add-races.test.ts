import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SoftwareAuthenticator } from '../helpers/authenticator.js';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { WalletClient } from '../helpers/wallet.js';

/**
 * One passkey, or one OIDC identity, added to one account by many signed retries at once: each
 * passes the pre-check before any has committed, so the unique index (auth_credentials_passkey_once,
 * auth_credentials_oauth_identity) decides, and every loser must get the pre-check's 400 (README,
 * Credentials), never a 500. Only PostgreSQL runs the retries at the same time.
 */
const RACERS = 6;
const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };
const ISSUER = 'https://idp.races.example';

let ctx: TestContext;
let client: WalletClient;
beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, await ctx.newPlatform());
  await client.enableWallets();
  const configured = await client.call('PATCH', '/config', {
    embeddedWalletConfig: { passkeyRpId: RP.rpId, passkeyOrigins: [RP.origin], oidcIssuers: [{ issuer: ISSUER, jwksUri: `${ISSUER}/jwks` }] },
  });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(() => ctx?.close());

type Answer = Awaited<ReturnType<WalletClient['call']>>;

function expectOneAdded(answers: Answer[], code: string): void {
  const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
  expect(answers.map((a) => a.statusCode).sort(), bodies).toEqual([201, ...Array<number>(RACERS - 1).fill(400)]);
  for (const loser of answers.filter((a) => a.statusCode === 400)) expect((loser.json() as { code: string }).code, bodies).toBe(code);
}

const activeOfType = async (accountId: string, type: string) =>
  ((await client.call('GET', `/auth/credentials?accountId=${accountId}`)).json() as { data: Array<{ type: string }> }).data.filter((c) => c.type === type);

describe.runIf(onPostgres)('one credential added by many signed retries at once (PostgreSQL)', () => {
  it('one passkey: one 201, the rest 400 PASSKEY_CREDENTIAL_ALREADY_EXISTS, one PASSKEY credential', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const challenge = Buffer.from(`registration-${Math.random()}`).toString('base64url');
    const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Laptop', challenge, attestation: new SoftwareAuthenticator().create({ ...RP, challenge }) };
    const [answers] = await client.raceSigned([Array(RACERS).fill({ method: 'POST' as const, path: '/auth/credentials', body, key })]);
    expectOneAdded(answers!, 'PASSKEY_CREDENTIAL_ALREADY_EXISTS');
    expect(await activeOfType(wallet.accountId, 'PASSKEY')).toHaveLength(1);
  });

  it('one OIDC identity, each retry with its own token: one 201, the rest 400 INVALID_INPUT (identity already registered), one OAUTH credential', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const now = Math.floor(ctx.clock.now().getTime() / 1000);
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    // A sandbox platform checks no signature; each token is distinct (jti), the identity one.
    const token = (i: number) => `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iss: ISSUER, sub: 'raced-subject', aud: 'acme-web', iat: now, exp: now + 600, jti: `t${i}` })}.c2ln`;
    const legs = Array.from({ length: RACERS }, (_, i) => ({ method: 'POST' as const, path: '/auth/credentials', body: { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token(i) }, key }));
    const [answers] = await client.raceSigned([legs]);
    expectOneAdded(answers!, 'INVALID_INPUT');
    expect(await activeOfType(wallet.accountId, 'OAUTH')).toHaveLength(1);
  });
});
