import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { evmWallet } from '../helpers/external-accounts.js';

/**
 * The pages Corridor serves to end users at secret links — the hosted KYC page and the wallet
 * liveness page — in every state they are shown in: one header policy, and what a caller stored
 * reaches the HTML only escaped.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
  expect((await call('PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
});
afterAll(() => ctx.close());

function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object) {
  return ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload ? { payload } : {}) });
}
const open = (path: string) => ctx.app.inject({ method: 'GET', url: path });

async function created(path: string, body: object): Promise<Record<string, unknown>> {
  const response = await call('POST', path, body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Record<string, unknown>;
}

async function kycPagePath(customer: object): Promise<string> {
  const { id } = await created('/customers', customer);
  const link = await created(`/customers/${String(id)}/kyc-link`, {});
  return new URL(String(link.kycUrl)).pathname;
}

async function livenessPagePath(): Promise<string> {
  const account = await created('/platform/external-accounts', { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } });
  const challenge = await created(`/platform/external-accounts/${String(account.id)}/challenge`, { method: 'LIVENESS' });
  return new URL(String(challenge.verificationLink)).pathname;
}

function expectHostedPageHeaders(response: Awaited<ReturnType<typeof open>>) {
  expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
  // A secret-bearing page must never be rendered as anything but the HTML it is.
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
  expect(response.headers['x-frame-options']).toBe('DENY');
  const csp = String(response.headers['content-security-policy']);
  const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
  expect(nonce).toBeDefined();
  for (const directive of ["default-src 'none'", `style-src 'nonce-${nonce}'`, "connect-src 'self'", "frame-ancestors 'none'", "form-action 'none'", "base-uri 'none'"]) {
    expect(csp).toContain(directive);
  }
  expect(csp).not.toContain('unsafe');
  // Every script and style element carries this response's nonce; nothing inline runs without it.
  expect(response.body.match(/<(script|style)\b[^>]*>/g)?.every((tag) => tag.includes(`nonce="${nonce}"`))).toBe(true);
}

describe('hosted pages', () => {
  it('serve the KYC page, open or gone, under the hosted-page header policy', async () => {
    const path = await kycPagePath({ customerType: 'INDIVIDUAL', platformCustomerId: 'hosted-headers-1' });
    const shown = await open(path);
    expect(shown.statusCode).toBe(200);
    expectHostedPageHeaders(shown);
    const unknown = await open(`${BASE}/kyc/${'A'.repeat(43)}`);
    expect(unknown.statusCode).toBe(404);
    expectHostedPageHeaders(unknown);
    ctx.clock.advance(24 * 60 * 60_000);
    const expired = await open(path);
    expect(expired.statusCode).toBe(410);
    expectHostedPageHeaders(expired);
  });

  it('treat a KYC link whose customer was deleted as gone: the page is 410 under the same policy, its calls 404, and neither names the customer', async () => {
    const { id } = await created('/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'hosted-withdrawn-1', fullName: 'Jane Doe' });
    const link = await created(`/customers/${String(id)}/kyc-link`, {});
    const path = new URL(String(link.kycUrl)).pathname;
    expect((await call('DELETE', `/customers/${String(id)}`)).statusCode).toBe(200);
    const shown = await open(path);
    expect(shown.statusCode).toBe(410);
    expectHostedPageHeaders(shown);
    expect(shown.body).toContain('no longer valid');
    const calls = [
      await ctx.app.inject({ method: 'POST', url: `${path}/fields`, payload: { birthDate: '1990-01-15' } }),
      await ctx.app.inject({ method: 'POST', url: `${path}/submit` }),
    ];
    for (const answer of calls) expectEnvelope(answer, 404, 'REFERENCE_NOT_FOUND');
    for (const answer of [shown, ...calls]) expect(answer.body).not.toContain(String(id).split(':')[1]);
  });

  it('serve the liveness page, open, expired or unknown, under the same policy', async () => {
    const path = await livenessPagePath();
    const shown = await open(path);
    expect(shown.statusCode).toBe(200);
    expectHostedPageHeaders(shown);
    ctx.clock.advance(30 * 60_000);
    const expired = await open(path);
    expect(expired.statusCode).toBe(410);
    expectHostedPageHeaders(expired);
    const unknown = await open(`${BASE}/ownership/liveness/${'A'.repeat(43)}`);
    expect(unknown.statusCode).toBe(404);
    expectHostedPageHeaders(unknown);
  });

  it('show a beneficial owner name that carries markup as text only', async () => {
    const hostile = `</script><img src=x onerror=alert(1)>"'\u2028`;
    const { id } = await created('/customers', {
      customerType: 'BUSINESS',
      platformCustomerId: 'hosted-escape-1',
      businessInfo: { legalName: hostile, country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' },
    });
    await created('/beneficial-owners', {
      customerId: id,
      roles: ['UBO', 'DIRECTOR'],
      ownershipPercentage: 60,
      personalInfo: { firstName: hostile, lastName: 'Garcia', birthDate: '1980-05-20', nationality: 'MX', address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' }, idType: 'NON_US_TAX_ID', identifier: 'GAMM800520XX1' },
    });
    const link = await created(`/customers/${String(id)}/kyc-link`, {});
    const shown = await open(new URL(String(link.kycUrl)).pathname);
    expect(shown.statusCode).toBe(200);
    expectHostedPageHeaders(shown);
    expect(shown.body).toContain('&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;\u2028 Garcia');
    expect(shown.body).not.toContain('<img');
    expect(shown.body.match(/<\/script>/g)).toHaveLength(1);
  });

  it('refuse a call a browser says comes from another site, before reading its body: the link stays open', async () => {
    const kyc = await kycPagePath({ customerType: 'INDIVIDUAL', platformCustomerId: 'hosted-cross-site-1' });
    const liveness = await livenessPagePath();
    const crossSite = [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'https://attacker.example' }, { origin: 'null' }];
    for (const headers of crossSite) {
      // A form on another site posts text/plain or multipart without a CORS preflight.
      const submitted = await ctx.app.inject({ method: 'POST', url: `${kyc}/submit`, headers: { ...headers, 'content-type': 'text/plain' }, payload: 'x' });
      expectEnvelope(submitted, 403, 'FORBIDDEN');
      const consented = await ctx.app.inject({ method: 'POST', url: liveness, headers, payload: { consent: true } });
      expectEnvelope(consented, 403, 'FORBIDDEN');
    }
    expect((await open(kyc)).statusCode).toBe(200);
    expect((await open(liveness)).statusCode).toBe(200);
    // The page's own calls (same origin, or a client that is no browser) go through.
    const own = await ctx.app.inject({ method: 'POST', url: liveness, headers: { 'sec-fetch-site': 'same-origin', origin: 'http://localhost:3000', host: 'localhost:3000' }, payload: { consent: false } });
    expect(own.statusCode, own.body).toBe(200);
    const fields = await ctx.app.inject({ method: 'POST', url: `${kyc}/fields`, payload: { fullName: 'Jane Doe' } });
    expect(fields.statusCode, fields.body).toBe(200);
  });

  it('never write the link token to the request log, for matched and unmatched calls', async () => {
    const path = await kycPagePath({ customerType: 'INDIVIDUAL', platformCustomerId: 'hosted-log-1' });
    const liveness = await livenessPagePath();
    const tokens = [path, liveness].map((p) => p.split('/')[p.split('/').indexOf(p.includes('/kyc/') ? 'kyc' : 'liveness') + 1]!);
    logLines.length = 0;
    await open(path);
    await ctx.app.inject({ method: 'POST', url: `${path}/submit?x=1` });
    await ctx.app.inject({ method: 'GET', url: `${path}/submit` });
    await open(liveness);
    await ctx.app.inject({ method: 'POST', url: liveness, payload: { consent: true } });
    const requests = logLines.filter((line) => line.includes('"msg":"request"'));
    expect(requests.length).toBeGreaterThanOrEqual(5);
    for (const token of tokens) expect(logLines.filter((line) => line.includes(token))).toEqual([]);
    expect(requests.some((line) => line.includes('/kyc/[token]/submit"') && !line.includes('x=1'))).toBe(true);
  });
});
