import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, servedAt } from '../helpers/browser.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { solanaWallet } from '../helpers/external-accounts.js';

/**
 * The hosted ownership check (LIVENESS) in headless Chromium: the page Corridor serves at the
 * challenge's verificationLink, its consent step, and the account status it leaves behind.
 */
let ctx: TestContext;
let browser: Browser;
let origin: string;

beforeAll(async () => {
  ctx = await createTestContext();
  origin = await servedAt(ctx.app);
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await ctx.close();
});

const call = (method: 'GET' | 'POST', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload ? { payload } : {}) });

/** A FIRST_PARTY self-custody wallet with a LIVENESS challenge; the link's path on this server. */
async function pendingWallet() {
  const address = solanaWallet().address;
  const created = await call('POST', '/platform/external-accounts', { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address } });
  const account = created.json() as { id: string };
  const challenge = (await call('POST', `/platform/external-accounts/${account.id}/challenge`, { method: 'LIVENESS' })).json() as { verificationLink: string };
  return { account, address, url: `${origin}${new URL(challenge.verificationLink).pathname}` };
}

const statusOf = async (id: string) => ((await call('GET', `/platform/external-accounts/${id}`)).json() as { status: string }).status;

describe('liveness page in Chromium', () => {
  it('completes the check only after consent, and the account becomes ACTIVE', async () => {
    const { account, address, url } = await pendingWallet();
    const page = await browser.newPage();
    await page.goto(url);
    expect(await page.textContent('#address')).toBe(address);
    await page.click('#complete');
    expect(await page.textContent('#status')).toBe('tick the consent box first');
    expect(await statusOf(account.id)).toBe('PENDING_OWNERSHIP_VERIFICATION');
    await page.check('#consent');
    await page.click('#complete');
    await page.waitForFunction(() => !['', 'sending…', 'tick the consent box first'].includes(document.getElementById('status')!.textContent!), undefined, { timeout: 20_000 });
    expect(await page.textContent('#status')).toBe('verified');
    expect(await statusOf(account.id)).toBe('ACTIVE');
    await page.goto(url);
    expect(await page.textContent('h1')).toBe('Link not valid');
    await page.close();
  }, 60_000);

  it('fails the check when the owner declines: the account becomes UNVERIFIED', async () => {
    const { account, url } = await pendingWallet();
    const page = await browser.newPage();
    await page.goto(url);
    await page.click('#decline');
    await page.waitForFunction(() => !['', 'sending…'].includes(document.getElementById('status')!.textContent!), undefined, { timeout: 20_000 });
    expect(await page.textContent('#status')).toBe('not verified (CONSENT_DECLINED)');
    expect(await statusOf(account.id)).toBe('UNVERIFIED');
    await page.close();
  }, 60_000);
});
