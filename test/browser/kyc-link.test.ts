import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchBrowser, servedAt } from '../helpers/browser.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { validPdf } from '../helpers/document-files.js';

/**
 * The hosted KYC page in headless Chromium: the customer opens the link, fills in what the
 * review needs, uploads an identity document, submits, and lands on the platform's redirectUri.
 * One browser per test: it runs --single-process, so it does not outlive a closed context.
 */
let ctx: TestContext;
let browser: Browser | undefined;
let origin: string;

beforeAll(async () => {
  ctx = await createTestContext();
  origin = await servedAt(ctx.app);
  const settings = await call('PATCH', '/customers/settings', { sandboxAutoApprove: false });
  expect(settings.statusCode).toBe(200);
}, 60_000);
beforeEach(async () => {
  browser = await launchBrowser();
}, 60_000);
afterEach(async () => {
  await browser?.close();
  browser = undefined;
});
afterAll(async () => {
  await ctx.close();
});

function call(method: 'GET' | 'POST' | 'PATCH', path: string, payload?: object) {
  return ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload ? { payload } : {}) });
}

let seq = 0;
async function linkFor(body: object, redirectUri?: string) {
  const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `browser-kyc-${++seq}`, ...body });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as { id: string }).id;
  const link = await call('POST', `/customers/${customerId}/kyc-link`, redirectUri ? { redirectUri } : {});
  expect(link.statusCode, link.body).toBe(201);
  // The link names the configured public URL; the test server listens on its own port.
  return { customerId, url: `${origin}${new URL((link.json() as { kycUrl: string }).kycUrl).pathname}` };
}

/** True once the status line shows an outcome (a function: the page's CSP forbids evaluating strings). */
const idle = () => !['', 'sending…'].includes(document.getElementById('status')?.textContent ?? '');

describe('hosted KYC page in Chromium', () => {
  it('takes the missing details and a passport, submits, and redirects to redirectUri', async () => {
    const done = `${origin}/kyc-finished?customer=${seq + 1}`;
    const { customerId, url } = await linkFor({ fullName: 'Jane Doe' }, done);
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(url);
    expect(await page.textContent('h1')).toBe('Verify your identity');
    // fullName is on file: only the missing fields are asked for.
    expect(await page.locator('#fullName').count()).toBe(0);
    await page.click('#submit');
    await page.waitForFunction(idle, undefined, { timeout: 20_000 });
    expect(await page.textContent('#status')).toContain('customer.birthDate');
    await page.fill('#birthDate', '1990-01-15');
    await page.fill('#nationality', 'US');
    await page.fill('#address-line1', '1 Main St');
    await page.fill('#address-postalCode', '62701');
    await page.fill('#address-country', 'US');
    await Promise.all([page.waitForEvent('load'), page.click('#save-fields')]);
    expect(await page.locator('#fields').count()).toBe(0);
    expect(await call('GET', `/customers/${customerId}`).then((r) => r.json())).toMatchObject({ birthDate: '1990-01-15', nationality: 'US', address: { postalCode: '62701' } });
    // The identity document: a passport, its country prefilled from the nationality now on file.
    const form = page.locator(`form.upload[data-holder="${customerId}"]`);
    expect(await form.locator('input[name=country]').inputValue()).toBe('US');
    await form.locator('select[name=documentType]').selectOption('PASSPORT');
    await form.locator('input[name=file]').setInputFiles({ name: 'passport.pdf', mimeType: 'application/pdf', buffer: await validPdf() });
    await Promise.all([page.waitForEvent('load'), form.locator('button[type=submit]').click()]);
    expect(await page.locator('#ready').count()).toBe(1);
    await Promise.all([page.waitForURL(done, { timeout: 20_000 }), page.click('#submit')]);
    const verifications = (await call('GET', `/verifications?customerId=${customerId}`)).json() as { data: Array<{ verificationStatus: string }> };
    expect(verifications.data.map((v) => v.verificationStatus)).toEqual(['IN_PROGRESS']);
    // Single use: the link now says it was submitted.
    const again = await context.newPage();
    await again.goto(url);
    expect(await again.textContent('#gone')).toContain('already submitted');
  }, 90_000);

  it('shows the server’s refusal of a bad upload and keeps the page usable', async () => {
    const { url } = await linkFor({ fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US', address: { line1: '1 Main St', postalCode: '62701', country: 'US' } });
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(url);
    const form = page.locator('form.upload');
    await form.locator('input[name=file]').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a document') });
    await form.locator('button[type=submit]').click();
    await page.waitForFunction(idle, undefined, { timeout: 20_000 });
    expect(await page.textContent('#status')).toContain('file: must be one of application/pdf, image/jpeg, image/png');
    expect(await page.locator('form.upload').count()).toBe(1);
  }, 90_000);
});
