import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/platform/crypto/encoding.js';
import { validPdf } from '../helpers/document-files.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { multipartBody, textParts, type Part } from '../helpers/multipart.js';
import { CapturingMessages, WalletClient } from '../helpers/wallet.js';

/**
 * POST /customers/{customerId}/kyc-link (upstream createCustomerKycLink) and the calls the hosted
 * page makes with the link's token: fill missing fields, upload documents, submit.
 */
let ctx: TestContext;
let p: TestPlatform;
const messages = new CapturingMessages();
beforeAll(async () => {
  ctx = await createTestContext({ messages });
  p = await ctx.newPlatform('sandbox');
  expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Link = { kycUrl: string; expiresAt: string; provider: string; token?: string };

function call(pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown, headers: Record<string, string> = {}) {
  return ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

let seq = 0;
async function customer(pl: TestPlatform, extra: Body = {}): Promise<string> {
  const response = await call(pl, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `kyc-${++seq}`, ...extra });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { id: string }).id;
}

async function link(pl: TestPlatform, customerId: string, body: Body = {}): Promise<Link> {
  const response = await call(pl, 'POST', `/customers/${customerId}/kyc-link`, body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Link;
}

/** The page's own calls: the path of the link (no Basic credentials), plus a suffix. */
const pagePath = (kyc: Link, suffix = '') => `${new URL(kyc.kycUrl).pathname}${suffix}`;
const page = (kyc: Link, method: 'GET' | 'POST', suffix = '', payload?: Body) =>
  ctx.app.inject({ method, url: pagePath(kyc, suffix), ...(payload === undefined ? {} : { payload }) });
async function upload(kyc: Link, parts: Part[], method: 'POST' | 'PUT' = 'POST', suffix = '/documents') {
  const { payload, headers } = multipartBody(parts);
  return ctx.app.inject({ method, url: pagePath(kyc, suffix), headers, payload });
}
const passport = async (holder: string, extra: Record<string, string> = {}) => [
  ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US', ...extra }),
  { name: 'file', filename: 'passport.pdf', contentType: 'application/pdf', data: await validPdf() },
];

describe('POST /customers/{customerId}/kyc-link', () => {
  it('answers 201 with a page URL of our own, its expiry and provider CORRIDOR; the database keeps only a hash of the token', async () => {
    const id = await customer(p);
    const kyc = await link(p, id, { redirectUri: 'https://app.example.com/onboarding/done' });
    expect(kyc.provider).toBe('CORRIDOR');
    expect(kyc.token).toBeUndefined();
    expect(kyc.kycUrl).toMatch(new RegExp(`^https?://[^/]+${BASE}/kyc/[A-Za-z0-9_-]{43}$`));
    expect(new Date(kyc.expiresAt).getTime()).toBe(ctx.clock.now().getTime() + 24 * 3_600_000);
    const token = kyc.kycUrl.split('/').pop()!;
    const rows = await ctx.handle.db.selectFrom('kyc_links').selectAll().where('platform_id', '=', p.uuid).execute();
    const row = rows.find((r) => r.token_sha256 === sha256Hex(token))!;
    expect(row).toMatchObject({ redirect_uri: 'https://app.example.com/onboarding/done', submitted_at: null });
    expect(JSON.stringify(rows)).not.toContain(token);
    // The customer's status does not change by issuing a link.
    expect(((await call(p, 'GET', `/customers/${id}`)).json() as Body).kycStatus).toBe('UNVERIFIED');
  });

  it('makes a fresh link on every call; with Idempotency-Key a replay answers the same link and the key record holds no token', async () => {
    const id = await customer(p);
    const [a, b] = [await link(p, id), await link(p, id)];
    expect(a.kycUrl).not.toBe(b.kycUrl);
    const first = await call(p, 'POST', `/customers/${id}/kyc-link`, {}, { 'idempotency-key': `kyc-${id}` });
    const replay = await call(p, 'POST', `/customers/${id}/kyc-link`, {}, { 'idempotency-key': `kyc-${id}` });
    expect(first.statusCode).toBe(201);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    const token = (first.json() as Link).kycUrl.split('/').pop()!;
    const stored = await ctx.handle.db.selectFrom('idempotency_keys').selectAll().where('platform_id', '=', p.uuid).where('key', '=', `kyc-${id}`).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(token);
    expectEnvelope(await call(p, 'POST', `/customers/${id}/kyc-link`, { redirectUri: 'https://other.example.com' }, { 'idempotency-key': `kyc-${id}` }), 409, 'CONFLICT');
  });

  it('is 404 USER_NOT_FOUND for an unknown or another platform’s customer, 410 for a deleted one', async () => {
    expectEnvelope(await call(p, 'POST', '/customers/Customer:019542f5-b3e7-1d02-0000-000000000001/kyc-link', {}), 404, 'USER_NOT_FOUND');
    expectEnvelope(await call(p, 'POST', '/customers/nope/kyc-link', {}), 404, 'USER_NOT_FOUND');
    const other = await ctx.newPlatform('sandbox');
    expectEnvelope(await call(other, 'POST', `/customers/${await customer(p)}/kyc-link`, {}), 404, 'USER_NOT_FOUND');
    const deleted = await customer(p);
    expect((await call(p, 'DELETE', `/customers/${deleted}`)).statusCode).toBe(200);
    expectEnvelope(await call(p, 'POST', `/customers/${deleted}/kyc-link`, {}), 410, 'CUSTOMER_DELETED');
  });

  it('validates the body: redirectUri must be an http(s) URL (https for production platforms), nothing else is accepted', async () => {
    const id = await customer(p);
    for (const redirectUri of ['ftp://example.com/x', 'not a url', 'javascript:alert(1)']) {
      const error = expectEnvelope(await call(p, 'POST', `/customers/${id}/kyc-link`, { redirectUri }), 400, 'INVALID_INPUT');
      expect(error.details).toMatchObject({ errors: [expect.objectContaining({ field: 'redirectUri' })] });
    }
    expectEnvelope(await call(p, 'POST', `/customers/${id}/kyc-link`, { redirectTo: 'https://x.example' }), 400, 'INVALID_INPUT');
    // A missing body is an empty request.
    expect((await call(p, 'POST', `/customers/${id}/kyc-link`)).statusCode).toBe(201);
    const production = await ctx.newPlatform('production');
    const prodCustomer = await customer(production);
    const error = expectEnvelope(await call(production, 'POST', `/customers/${prodCustomer}/kyc-link`, { redirectUri: 'http://localhost:3000/done' }), 400, 'INVALID_INPUT');
    expect(error.details).toMatchObject({ errors: [expect.objectContaining({ field: 'redirectUri', constraint: expect.objectContaining({ pattern: '^https://' }) })] });
    expect((await call(production, 'POST', `/customers/${prodCustomer}/kyc-link`, { redirectUri: 'https://app.example.com/done' })).statusCode).toBe(201);
    expect(await ctx.handle.db.selectFrom('kyc_links').select('id').where('platform_id', '=', production.uuid).execute()).toHaveLength(1);
  });

  it('needs MANAGE', async () => {
    const viewer = await ctx.newToken(p, ['VIEW']);
    expectEnvelope(await call(viewer, 'POST', `/customers/${await customer(p)}/kyc-link`, {}), 403, 'FORBIDDEN');
  });

  it('is 409 while the e-mail the customer’s wallet signs in with was never confirmed, and 201 once it is', async () => {
    const wallets = new WalletClient(ctx, p);
    await wallets.enableWallets();
    const wallet = await wallets.newWallet();
    const error = expectEnvelope(await call(p, 'POST', `/customers/${wallet.customerId}/kyc-link`, {}), 409, 'CONFLICT');
    expect(error.details).toEqual({ reason: 'CONTACT_VERIFICATION_INCOMPLETE', unverified: [{ contact: 'EMAIL', credentialId: wallet.credentialId }] });
    expect(await ctx.handle.db.selectFrom('kyc_links').select('id').where('platform_id', '=', p.uuid).where('customer_id', '=', wallet.customerId.slice('Customer:'.length)).execute()).toEqual([]);
    await wallets.login(wallet.credentialId);
    expect((await call(p, 'POST', `/customers/${wallet.customerId}/kyc-link`, {})).statusCode).toBe(201);
  });
});

describe('the hosted page’s calls', () => {
  it('serves the page with what is missing, under a strict CSP; unknown tokens get a 404 page', async () => {
    const kyc = await link(p, await customer(p));
    const shown = await page(kyc, 'GET');
    expect(shown.statusCode).toBe(200);
    expect(shown.headers['content-type']).toContain('text/html');
    expect(shown.headers['cache-control']).toBe('no-store');
    expect(shown.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    for (const text of ['The customer&#39;s fullName is required.', 'Upload an identity document for the customer.', 'id="birthDate"', 'id="address-line1"']) expect(shown.body).toContain(text);
    // The page takes no longer a document number than the upload does.
    expect(shown.body).toContain('name="documentNumber" maxlength="64"');
    const unknown = await ctx.app.inject({ method: 'GET', url: `${BASE}/kyc/${'A'.repeat(43)}` });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('Link not valid');
    expectEnvelope(await ctx.app.inject({ method: 'POST', url: `${BASE}/kyc/${'A'.repeat(43)}/submit` }), 404, 'REFERENCE_NOT_FOUND');
  });

  it('fills only missing fields, uploads for the customer only, refuses to submit while something is missing, then submits once', async () => {
    const id = await customer(p, { fullName: 'Jane Doe' });
    const kyc = await link(p, id, { redirectUri: 'https://app.example.com/done' });
    // fullName is on file: the page may not rewrite it.
    const refused = expectEnvelope(await page(kyc, 'POST', '/fields', { fullName: 'Mallory' }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [expect.objectContaining({ field: 'fullName' })] });
    expectEnvelope(await page(kyc, 'POST', '/fields', { birthDate: '2999-01-01' }), 400, 'INVALID_INPUT');
    expectEnvelope(await page(kyc, 'POST', '/fields', {}), 400, 'INVALID_INPUT');
    // Submitting now lists what is missing and leaves the link open.
    const early = expectEnvelope(await page(kyc, 'POST', '/submit'), 400, 'INVALID_INPUT');
    expect((early.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['customer.birthDate', 'customer.nationality', 'customer.address', id]);
    const saved = await page(kyc, 'POST', '/fields', { birthDate: '1990-01-15', nationality: 'US', address: { line1: '1 Main St', postalCode: '62701', country: 'US' } });
    expect(saved.statusCode, saved.body).toBe(200);
    expect((await call(p, 'GET', `/customers/${id}`)).json()).toMatchObject({ fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US', address: { line1: '1 Main St' } });
    // Another customer's id is not a holder this link may upload for.
    const stranger = await customer(p);
    const outside = expectEnvelope(await upload(kyc, await passport(stranger)), 400, 'INVALID_INPUT');
    expect(outside.details).toMatchObject({ errors: [expect.objectContaining({ field: 'documentHolder' })] });
    const uploaded = await upload(kyc, await passport(id));
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const document = uploaded.json() as { id: string };
    expect(((await call(p, 'GET', `/documents/${document.id}`)).json() as Body).documentHolder).toBe(id);
    const submitted = await page(kyc, 'POST', '/submit');
    expect(submitted.statusCode, submitted.body).toBe(200);
    expect(submitted.json()).toEqual({ verificationStatus: 'IN_PROGRESS', redirectUri: 'https://app.example.com/done' });
    const verifications = (await call(p, 'GET', `/verifications?customerId=${id}`)).json() as { data: Array<{ id: string; verificationStatus: string }> };
    expect(verifications.data.map((v) => v.verificationStatus)).toEqual(['IN_PROGRESS']);
    const row = await ctx.handle.db.selectFrom('kyc_links').selectAll().where('token_sha256', '=', sha256Hex(kyc.kycUrl.split('/').pop()!)).executeTakeFirstOrThrow();
    expect(`Verification:${row.verification_id}`).toBe(verifications.data[0]!.id);
    // Single use: the page is gone and so are its calls.
    const after = await page(kyc, 'GET');
    expect(after.statusCode).toBe(410);
    expect(after.body).toContain('already submitted');
    expectEnvelope(await page(kyc, 'POST', '/submit'), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await upload(kyc, await passport(id)), 404, 'REFERENCE_NOT_FOUND');
  });

  it('replaces a document the review rejected, but only one of the link’s holders', async () => {
    const id = await customer(p, { fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US', address: { line1: '1 Main St', postalCode: '62701', country: 'US' } });
    const kyc = await link(p, id);
    const first = (await upload(kyc, await passport(id, { country: 'FR' }))).json() as { id: string };
    const shown = await page(kyc, 'GET');
    expect(shown.body).toContain(`data-document="${first.id}"`);
    expect(shown.body).toContain('but the nationality on file is US');
    const replacement = (await passport(id)).filter((part) => part.name !== 'documentHolder');
    // Another customer's link cannot touch this document.
    const other = await link(p, await customer(p));
    expectEnvelope(await upload(other, replacement, 'PUT', `/documents/${first.id}`), 404, 'REFERENCE_NOT_FOUND');
    const replaced = await upload(kyc, replacement, 'PUT', `/documents/${first.id}`);
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(((await call(p, 'GET', `/documents/${first.id}`)).json() as Body).country).toBe('US');
    expect((await page(kyc, 'GET')).body).toContain('id="ready"');
  });

  it('expires: after 24 hours the page says so and its calls are 404', async () => {
    const kyc = await link(p, await customer(p));
    ctx.clock.advance(24 * 3_600_000);
    const shown = await page(kyc, 'GET');
    expect(shown.statusCode).toBe(410);
    expect(shown.body).toContain('expired');
    expectEnvelope(await page(kyc, 'POST', '/fields', { fullName: 'Late' }), 404, 'REFERENCE_NOT_FOUND');
  });
});

describe('uploads and submits at once on the same link', () => {
  it('never leave a document the submitted review did not read', async () => {
    // On PostgreSQL the upload's screening gives the submit time to land before the file is stored.
    for (let round = 0; round < 6; round++) {
      const id = await customer(p, { fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US', address: { line1: '1 Main St', postalCode: '62701', country: 'US' } });
      const kyc = await link(p, id);
      expect((await upload(kyc, await passport(id))).statusCode).toBe(201);
      const [late, submitted] = await Promise.all([upload(kyc, await passport(id, { documentNumber: `tab-${round}` })), page(kyc, 'POST', '/submit')]);
      expect(submitted.statusCode, submitted.body).toBe(200);
      if (late.statusCode !== 201) expectEnvelope(late, 404, 'REFERENCE_NOT_FOUND');
      const documents = await ctx.handle.db.selectFrom('documents').select('submitted_at').where('platform_id', '=', p.uuid).where('holder_id', '=', id.split(':')[1]!).execute();
      expect(documents).toHaveLength(late.statusCode === 201 ? 2 : 1);
      expect(documents.every((d) => d.submitted_at !== null)).toBe(true);
    }
  });
});

describe('an upload racing a submit in another tab', () => {
  // A production platform's uploads are screened by the configured provider; this one answers only
  // when the test opens the gate, so a submit can land between the upload's check and its store.
  let held: TestContext;
  let production: TestPlatform;
  let provider: Server;
  let gate: Promise<void> = Promise.resolve();
  let screened: () => void = () => {};
  beforeAll(async () => {
    provider = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        screened();
        void gate.then(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"precheckErrors":[]}'));
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const { port } = provider.address() as AddressInfo;
    held = await createTestContext({ env: { CORRIDOR_SCREENING_URL: `http://127.0.0.1:${port}/screen`, CORRIDOR_SCREENING_TIMEOUT_MS: '20000' } });
    production = await held.newPlatform('production');
  });
  afterAll(async () => {
    await held.close();
    await new Promise((resolve) => provider.close(resolve));
  });

  it('refuses (404, as any call on a submitted link) an upload whose file is stored after the link was submitted', async () => {
    const call = (method: 'POST', path: string, payload: Body) => held.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: production.auth }, payload });
    const created = await call('POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: 'kyc-race',
      fullName: 'Jane Doe',
      birthDate: '1990-01-15',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as { id: string }).id;
    const issued = await call('POST', `/customers/${id}/kyc-link`, {});
    expect(issued.statusCode, issued.body).toBe(201);
    const path = new URL((issued.json() as Link).kycUrl).pathname;
    const uploadIn = async (parts: Part[]) => {
      const { payload, headers } = multipartBody(parts);
      return held.app.inject({ method: 'POST', url: `${path}/documents`, headers, payload });
    };
    const first = await uploadIn(await passport(id));
    expect(first.statusCode, first.body).toBe(201);

    // Tab A: the upload passed the link's check and waits for its screening verdict.
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const inScreening = new Promise<void>((resolve) => (screened = resolve));
    const late = uploadIn(await passport(id, { documentNumber: 'second-tab' }));
    await inScreening;
    // Tab B: submits; the review reads the customer's documents now.
    const submitted = await held.app.inject({ method: 'POST', url: `${path}/submit` });
    expect(submitted.statusCode, submitted.body).toBe(200);
    open();
    expectEnvelope(await late, 404, 'REFERENCE_NOT_FOUND');

    // Every document of the customer is one the submitted review read.
    const documents = await held.handle.db.selectFrom('documents').select(['id', 'submitted_at']).where('platform_id', '=', production.uuid).execute();
    expect(documents.map((d) => `Document:${d.id}`)).toEqual([(first.json() as { id: string }).id]);
    expect(documents.every((d) => d.submitted_at !== null)).toBe(true);
  }, 30_000);
});
