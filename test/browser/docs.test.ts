import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, servedAt } from '../helpers/browser.js';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * The API reference at /docs in headless Chromium, under the content security policy it is
 * served with: the UI renders the operations, and the browser reports no violation.
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

describe('/docs in Chromium', () => {
  it('renders the operations under its CSP, never sniffed or framed by another site', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    const response = await page.goto(`${origin}/docs/`);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toContain("frame-ancestors 'self'");
    expect(headers['content-security-policy']).toMatch(/script-src 'self' ?;/);
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['x-frame-options']).toBe('SAMEORIGIN');
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    expect(await page.locator('.opblock').count()).toBeGreaterThan(50);
    expect(violations).toEqual([]);
    await page.close();
  }, 60_000);
});
