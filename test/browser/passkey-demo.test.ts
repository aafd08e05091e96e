import { readFile } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, servedAt } from '../helpers/browser.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WalletClient } from '../helpers/wallet.js';

/**
 * The passkey demo page (examples/passkey-demo.html) in headless Chromium, with a virtual
 * authenticator from the Chrome DevTools Protocol: registration and sign-in go through the real
 * navigator.credentials API and are verified by Corridor as any browser's would be.
 */
const DEMO_PATH = '/demo/passkey';

let ctx: TestContext;
let browser: Browser;
let origin: string;

beforeAll(async () => {
  const page = await readFile(new URL('../../examples/passkey-demo.html', import.meta.url), 'utf8');
  ctx = await createTestContext({
    extraRoutes: async (api) => {
      api.get(DEMO_PATH, { schema: { hide: true }, config: { auth: false } }, async (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
    },
  });
  origin = await servedAt(ctx.app);
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await ctx.close();
});

describe('passkey demo page in Chromium', () => {
  it('registers a passkey and signs in with it through navigator.credentials', async () => {
    const client = new WalletClient(ctx, ctx.platform);
    await client.enableWallets();
    const configured = await client.call('PATCH', '/config', { embeddedWalletConfig: { passkeyRpId: 'localhost', passkeyOrigins: [origin] } });
    expect(configured.statusCode, configured.body).toBe(200);
    const wallet = await client.newWallet();
    // The end user's first login (EMAIL_OTP): its session key signs the passkey registration.
    const { key, session: emailSession } = await client.login(wallet.credentialId);

    const page = await browser.newPage();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });

    const auth = ctx.platform.auth.replace(/^Basic /, '');
    const hash = new URLSearchParams({
      base: `${origin}/2025-10-13`,
      auth,
      accountId: wallet.accountId,
      sessionPrivateKey: key.privateKey,
      sessionPublicKey: key.publicKeyUncompressed,
    });
    await page.goto(`${origin}/2025-10-13${DEMO_PATH}#${hash}`);
    await page.click('#register');
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'registering…', undefined, { timeout: 20_000 });
    expect(await page.textContent('#status')).toBe('registered');
    const credential = JSON.parse((await page.textContent('#result'))!) as { id: string; type: string; credentialId: string };
    expect(credential).toMatchObject({ type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Demo passkey' });
    const { credentials } = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })) as { credentials: Array<{ credentialId: string; signCount: number }> };
    expect(credentials.map((c) => c.credentialId.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''))).toEqual([credential.credentialId]);

    await page.click('#login');
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'signing in…', undefined, { timeout: 20_000 });
    expect(await page.textContent('#status')).toBe('signed in');
    const session = JSON.parse((await page.textContent('#result'))!) as Record<string, unknown>;
    expect(session).toMatchObject({ id: expect.stringMatching(/^Session:/), type: 'PASSKEY', credentialId: credential.credentialId, encryptedSessionSigningKey: expect.any(String) });
    const sessions = (await client.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: Array<{ id: string }> };
    expect(sessions.data.map((s) => s.id).sort()).toEqual([emailSession.id, session.id].sort());
    await page.close();
  }, 60_000);
});
