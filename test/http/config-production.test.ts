import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * What PATCH /config refuses because nothing could use it: a production umaDomain other VASPs
 * cannot reach (and would refuse payments from), and logo URLs naming no host.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Config = Record<string, unknown> & { updatedAt: string };
const getConfig = async (p: TestPlatform) => (await ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: p.auth } })).json() as Config;
const patch = (p: TestPlatform, payload: unknown) => ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: payload as object });

describe('PATCH /config umaDomain of a production platform', () => {
  it('refuses a local or non-public host (400 naming umaDomain), changing nothing and holding it from no sandbox platform', async () => {
    const production = await ctx.newPlatform('production');
    const before = await getConfig(production);
    for (const umaDomain of ['localhost:8080', 'LOCALHOST', 'wallet.localhost', '127.0.0.1:9000', '10.0.0.5', '[::1]:8443', '169.254.169.254', 'vasp.local', 'bank.internal']) {
      const refused = expectEnvelope(await patch(production, { umaDomain, webhookEndpoint: 'https://hooks.example.com/in' }), 400, 'INVALID_INPUT');
      expect((refused.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field), umaDomain).toEqual(['umaDomain']);
    }
    expect(await getConfig(production)).toEqual(before);
    // The domain stays free for sandbox platforms testing against a local VASP.
    const sandbox = await ctx.newPlatform();
    expect((await patch(sandbox, { umaDomain: 'localhost:8080' })).statusCode).toBe(200);
    // A public name is the production platform's, as before.
    const taken = await patch(production, { umaDomain: 'pay.example.com' });
    expect(taken.statusCode, taken.body).toBe(200);
    expect((taken.json() as Config).umaDomain).toBe('pay.example.com');
  });
});

describe('PATCH /config logo URLs', () => {
  it('refuses an https URL naming no host, in embeddedWalletConfig and cardTokenization2faConfig, and changes nothing', async () => {
    const p = await ctx.newPlatform();
    const before = await getConfig(p);
    const refused = expectEnvelope(await patch(p, { embeddedWalletConfig: { logoUrl: 'https://' }, cardTokenization2faConfig: { logoUrl: 'https:///logo.png' } }), 400, 'INVALID_INPUT');
    expect((refused.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort()).toEqual(['cardTokenization2faConfig.logoUrl', 'embeddedWalletConfig.logoUrl']);
    expect(await getConfig(p)).toEqual(before);
    const accepted = await patch(p, { embeddedWalletConfig: { logoUrl: 'https://cdn.example.com/logo.png' }, cardTokenization2faConfig: { logoUrl: 'https://cdn.example.com/card.png' } });
    expect(accepted.statusCode, accepted.body).toBe(200);
  });
});
