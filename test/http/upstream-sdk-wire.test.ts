/**
 * Corridor under the upstream's published SDK (`@lightsparkdev/grid` 0.7/0.8, a Stainless
 * client), with only its base URL changed. The requests here are the ones that SDK sends, byte
 * for byte where it matters, written out by hand (no SDK code): its default headers
 * (`Accept: application/json`, `User-Agent: LightsparkGrid/JS <version>`, `X-Stainless-*`), a
 * JSON body only where the method takes one (no body and no Content-Type on `quotes.execute`,
 * `invitations.cancel`, `webhooks.sendTest`), query values encoded as `URLSearchParams`, arrays
 * comma-joined.
 *
 * That SDK was generated from an earlier document of the same date version: three of its paths
 * moved since and two operations left the upstream's document. Every one of its 44 operations is
 * answered: served where its operation lives now, or 501 NOT_IMPLEMENTED with
 * `x-should-retry: false` (the SDK retries any other 5xx twice), never the router's 404 or 405.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/** The headers the SDK puts on every request besides Authorization (Node, Linux, x64). */
const SDK_HEADERS = {
  accept: 'application/json',
  'user-agent': 'LightsparkGrid/JS 0.7.0',
  'x-stainless-lang': 'js',
  'x-stainless-package-version': '0.7.0',
  'x-stainless-os': 'Linux',
  'x-stainless-arch': 'x64',
  'x-stainless-runtime': 'node',
  'x-stainless-runtime-version': 'v20.20.2',
  'x-stainless-retry-count': '0',
};

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
/** The SDK's 44 operations: method, path (ids filled in), and whether it sends a JSON body. */
const SDK_OPERATIONS: Array<[Method, string, 'json' | 'none']> = [
  ['GET', '/config', 'none'],
  ['PATCH', '/config', 'json'],
  ['POST', '/customers', 'json'],
  ['GET', '/customers/Customer:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['PATCH', '/customers/Customer:01a2aaaa-0000-7000-8000-000000000001', 'json'],
  ['GET', '/customers?limit=2', 'none'],
  ['DELETE', '/customers/Customer:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['GET', '/customers/kyc-link?platformCustomerId=nobody', 'none'],
  ['GET', '/customers/internal-accounts?limit=2', 'none'],
  ['POST', '/customers/external-accounts', 'json'],
  ['GET', '/customers/external-accounts?limit=2', 'none'],
  ['GET', '/customers/bulk/jobs/Job:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['POST', '/customers/bulk/csv', 'json'],
  ['GET', '/platform/internal-accounts', 'none'],
  ['POST', '/platform/external-accounts', 'json'],
  ['GET', '/platform/external-accounts', 'none'],
  ['POST', '/plaid/link-tokens', 'json'],
  ['POST', '/plaid/callback/link-sandbox-1234', 'json'],
  ['POST', '/transfer-in', 'json'],
  ['POST', '/transfer-out', 'json'],
  ['GET', '/receiver/external-account/ExternalAccount:01a2aaaa-0000-7000-8000-000000000001?customerId=Customer%3A01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['GET', '/receiver/uma/$success.usd@sandbox.uma.money?customerId=Customer%3A01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['POST', '/quotes', 'json'],
  ['GET', '/quotes/Quote:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['GET', '/quotes?limit=2', 'none'],
  ['POST', '/quotes/Quote:01a2aaaa-0000-7000-8000-000000000001/execute', 'none'],
  ['GET', '/transactions/Transaction:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['GET', '/transactions?limit=2', 'none'],
  ['POST', '/transactions/Transaction:01a2aaaa-0000-7000-8000-000000000001/approve', 'json'],
  ['POST', '/transactions/Transaction:01a2aaaa-0000-7000-8000-000000000001/reject', 'json'],
  ['POST', '/webhooks/test', 'none'],
  ['POST', '/invitations', 'json'],
  ['GET', '/invitations/abcdefghij', 'none'],
  ['POST', '/invitations/abcdefghij/cancel', 'none'],
  ['POST', '/invitations/abcdefghij/claim', 'json'],
  ['POST', '/sandbox/send', 'json'],
  ['POST', '/sandbox/uma/receive', 'json'],
  ['POST', '/sandbox/internal-accounts/InternalAccount:01a2aaaa-0000-7000-8000-000000000001/fund', 'json'],
  ['GET', '/uma-providers?limit=2', 'none'],
  ['POST', '/tokens', 'json'],
  ['GET', '/tokens/Token:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['GET', '/tokens?limit=2', 'none'],
  ['DELETE', '/tokens/Token:01a2aaaa-0000-7000-8000-000000000001', 'none'],
  ['GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR%2CGBP', 'none'],
];

/** The SDK's operations Corridor does not build (modules/unbuilt UNBUILT_SDK_OPERATIONS). */
const NOT_BUILT = new Map([
  ['POST /plaid/link-tokens', 'createPlaidLinkToken'],
  ['POST /plaid/callback/link-sandbox-1234', 'submitPlaidPublicToken'],
  ['GET /quotes?limit=2', 'listQuotes'],
]);

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

function sdkCall(p: TestPlatform, method: Method, path: string, body?: Record<string, unknown>) {
  return ctx.app.inject({
    method,
    url: `${BASE}${path}`,
    headers: { ...SDK_HEADERS, authorization: p.auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
}

describe('the upstream SDK’s operations', () => {
  it('each reaches an operation: served, or 501 NOT_IMPLEMENTED that the SDK does not retry; never the router’s 404 or 405', async () => {
    expect(SDK_OPERATIONS).toHaveLength(44);
    const wrong: string[] = [];
    for (const [method, path, body] of SDK_OPERATIONS) {
      const response = await sdkCall(ctx.platform, method, path, body === 'json' ? {} : undefined);
      const answer = response.json() as { code?: string; message?: string; details?: { operation?: string } };
      const key = `${method} ${path}`;
      const notBuilt = NOT_BUILT.get(key);
      if (notBuilt) {
        if (response.statusCode !== 501 || answer.code !== 'NOT_IMPLEMENTED' || answer.details?.operation !== notBuilt || response.headers['x-should-retry'] !== 'false') {
          wrong.push(`${key}: ${response.statusCode} ${response.body.slice(0, 200)}`);
        }
      } else if (response.statusCode === 405 || response.statusCode >= 500 || (answer.message ?? '').startsWith('The endpoint ')) {
        wrong.push(`${key}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('customers.externalAccounts.create with the SDK 0.7 accountInfo, `countries` included (its types require it)', () => {
  it('creates the account, checking the countries against the account’s and keeping them nowhere', async () => {
    const p = await ctx.newPlatform();
    const customer = await sdkCall(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'sdk-countries', fullName: 'Ada Lovelace' });
    const customerId = (customer.json() as { id: string }).id;
    const usd = (countries: string[], accountNumber: string) => ({
      customerId,
      currency: 'USD',
      accountInfo: {
        accountType: 'USD_ACCOUNT',
        countries,
        paymentRails: ['ACH'],
        accountNumber,
        routingNumber: '021000021',
        beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace', birthDate: '1990-01-15', nationality: 'US' },
      },
    });
    const created = await sdkCall(p, 'POST', '/customers/external-accounts', usd(['US'], '12345678901'));
    expect(created.statusCode, created.body).toBe(201);
    const account = created.json() as { id: string; accountInfo: Record<string, unknown> };
    expect(account.accountInfo).toMatchObject({ accountType: 'USD_ACCOUNT', paymentRails: ['ACH'] });
    expect(account.accountInfo).not.toHaveProperty('countries');
    const read = (await sdkCall(p, 'GET', `/customers/external-accounts?customerId=${encodeURIComponent(customerId)}`)).json() as { data: Array<{ accountInfo: object }> };
    expect(read.data[0]!.accountInfo).not.toHaveProperty('countries');
    // A SEPA account names no single country by its type: the SDK's list of SEPA countries is taken.
    const eur = await sdkCall(p, 'POST', '/customers/external-accounts', {
      customerId,
      currency: 'EUR',
      accountInfo: {
        accountType: 'EUR_ACCOUNT',
        countries: ['DE', 'FR', 'NL'],
        paymentRails: ['SEPA_INSTANT'],
        iban: 'DE89370400440532013000',
        swiftCode: 'COBADEFF',
        beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace', countryOfResidence: 'DE' },
      },
    });
    expect(eur.statusCode, eur.body).toBe(201);
    const elsewhere = expectEnvelope(await sdkCall(p, 'POST', '/customers/external-accounts', usd(['CA'], '12345678902')), 400, 'INVALID_INPUT');
    expect(elsewhere.details).toEqual({ errors: [{ field: 'accountInfo.countries', message: "must include US, the account's country" }] });
    expectEnvelope(await sdkCall(p, 'POST', '/customers/external-accounts', usd(['USA'], '12345678903')), 400, 'INVALID_INPUT');
  });
});

describe('customers.getKYCLink: GET /customers/kyc-link', () => {
  it('issues the hosted link of the customer the platform’s own id names, answering as the POST and naming the customer', async () => {
    const p = await ctx.newPlatform();
    const created = await sdkCall(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'crm 42/ä', fullName: 'Ada Lovelace' });
    expect(created.statusCode, created.body).toBe(201);
    const customerId = (created.json() as { id: string }).id;
    const query = new URLSearchParams({ platformCustomerId: 'crm 42/ä', redirectUri: 'https://example.com/done?x=1' }).toString();
    const response = await sdkCall(p, 'GET', `/customers/kyc-link?${query}`);
    expect(response.statusCode, response.body).toBe(200);
    const link = response.json() as { customerId: string; platformCustomerId: string; kycUrl: string; expiresAt: string; provider: string };
    expect(link).toMatchObject({ customerId, platformCustomerId: 'crm 42/ä', provider: 'CORRIDOR' });
    expect(Date.parse(link.expiresAt)).toBe(ctx.clock.now().getTime() + 24 * 3600_000);
    // The link opens the customer's hosted page, as one from POST /customers/{id}/kyc-link does.
    const page = await ctx.app.inject({ method: 'GET', url: new URL(link.kycUrl).pathname });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    // Each call is a new link.
    const again = (await sdkCall(p, 'GET', `/customers/kyc-link?${query}`)).json() as { kycUrl: string };
    expect(again.kycUrl).not.toBe(link.kycUrl);
    // It writes, so a HEAD (monitors and proxies send them freely) is not served and issues nothing.
    const links = async () => (await ctx.handle.db.selectFrom('kyc_links').select('id').where('platform_id', '=', p.uuid).execute()).length;
    const before = await links();
    const head = await ctx.app.inject({ method: 'HEAD', url: `${BASE}/customers/kyc-link?${query}`, headers: { authorization: p.auth } });
    expect(head.statusCode).not.toBe(200);
    expect(await links()).toBe(before);
  });

  it('is 404 USER_NOT_FOUND, not retried, when no live customer holds the id; 400 without it; 403 to a token that may only read', async () => {
    const p = await ctx.newPlatform();
    const missing = await sdkCall(p, 'GET', '/customers/kyc-link?platformCustomerId=nobody');
    expect(expectEnvelope(missing, 404, 'USER_NOT_FOUND').details).toEqual({ platformCustomerId: 'nobody' });
    expect(missing.headers['x-should-retry']).toBe('false');
    const deleted = await sdkCall(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'gone', fullName: 'Gone Away' });
    expect((await sdkCall(p, 'DELETE', `/customers/${(deleted.json() as { id: string }).id}`)).statusCode).toBe(200);
    expectEnvelope(await sdkCall(p, 'GET', '/customers/kyc-link?platformCustomerId=gone'), 404, 'USER_NOT_FOUND');
    expectEnvelope(await sdkCall(p, 'GET', '/customers/kyc-link'), 400, 'INVALID_INPUT');
    const reader = await ctx.newToken(p, ['VIEW']);
    expectEnvelope(await sdkCall(reader, 'GET', '/customers/kyc-link?platformCustomerId=nobody'), 403, 'FORBIDDEN');
  });
});

describe('webhooks.sendTest: POST /webhooks/test, no body', () => {
  it('sends a signed TEST webhook and reports its answer, as POST /sandbox/webhooks/test', async () => {
    const p = await ctx.newPlatform();
    expectEnvelope(await sdkCall(p, 'POST', '/webhooks/test'), 400, 'WEBHOOK_ENDPOINT_NOT_SET');
    const receiver = await WebhookReceiver.start();
    try {
      const patched = await sdkCall(p, 'PATCH', '/config', { webhookEndpoint: receiver.url });
      expect(patched.statusCode, patched.body).toBe(200);
      receiver.trust(((await sdkCall(p, 'GET', '/webhooks/signing-keys')).json() as { data: Array<{ publicKey: string }> }).data.map((k) => k.publicKey));
      const before = receiver.received.length;
      const response = await sdkCall(p, 'POST', '/webhooks/test');
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ response_status: 200, url: receiver.url });
      const sent = receiver.received.slice(before);
      expect(sent.map((w) => [w.body.type, w.verified])).toEqual([['TEST', true]]);
    } finally {
      await receiver.close();
    }
  });
});
