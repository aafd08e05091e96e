import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * URLs PATCH /config stores for Corridor to call or trust (modules/config/README.md) carry no
 * credentials: a password alone is one, though the URL has no user name.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Config = Record<string, unknown> & { updatedAt: string };
const getConfig = async (p: TestPlatform) => (await ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: p.auth } })).json() as Config;
const patch = (p: TestPlatform, payload: unknown) => ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: payload as object });
const refusedFields = async (p: TestPlatform, payload: unknown) =>
  (expectEnvelope(await patch(p, payload), 400, 'INVALID_INPUT').details!.errors as Array<{ field: string }>).map((e) => e.field).sort();

describe('PATCH /config URLs carrying credentials', () => {
  it('refuses a password without a user name, in webhookEndpoint, a JWKS and a passkey origin', async () => {
    for (const environment of ['sandbox', 'production'] as const) {
      const p = await ctx.newPlatform(environment);
      const before = await getConfig(p);
      expect(await refusedFields(p, { webhookEndpoint: 'https://:secret@hooks.example.com/in' }), environment).toEqual(['webhookEndpoint']);
      expect(
        await refusedFields(p, {
          embeddedWalletConfig: {
            oidcIssuers: [{ issuer: 'https://id.example.com', jwksUri: 'https://:secret@id.example.com/jwks' }],
            passkeyOrigins: ['https://:secret@wallet.example.com'],
          },
        }),
        environment,
      ).toEqual(['embeddedWalletConfig.oidcIssuers.0.jwksUri', 'embeddedWalletConfig.passkeyOrigins.0']);
      expect(await getConfig(p)).toEqual(before);
    }
  });
});
