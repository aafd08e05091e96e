import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { databaseDigest } from '../helpers/database-digest.js';

/**
 * The sandbox operations are the sandbox's: a production platform's token, holding every
 * permission and sending a well-formed request, is refused 403 FORBIDDEN (sandbox README), and
 * nothing changes. Swept over every `/sandbox/` operation of the served OpenAPI document, so a
 * sandbox operation added later must say here how it is called, or why production may use it.
 */
const id = (type: string) => `${type}:${randomUUID()}`;

/** A well-formed request of each sandbox-only operation: what a sandbox platform would send. */
const SANDBOX_ONLY: Record<string, { body?: Record<string, unknown>; path?: Record<string, string> }> = {
  'POST /sandbox/send': { body: { quoteId: id('Quote'), currencyCode: 'USD' } },
  'POST /sandbox/uma/receive': { body: { senderUmaAddress: '$alice@sandbox.uma.example', customerId: id('Customer'), receivingCurrencyCode: 'USD', receivingCurrencyAmount: 100 } },
  'POST /sandbox/deposits': { body: { reference: 'CDR7K2M9Q4T8V1XZ', amount: 100 } },
  'POST /sandbox/transactions/{transactionId}/refund': { path: { transactionId: id('Transaction') } },
  'GET /sandbox/clock': {},
  'POST /sandbox/clock/advance': { body: { seconds: 60 } },
  'POST /sandbox/internal-accounts/{accountId}/fund': { path: { accountId: id('InternalAccount') }, body: { amount: 100 } },
  'POST /sandbox/verifications/{verificationId}/manual-review': { path: { verificationId: id('Verification') }, body: { verificationStatus: 'APPROVED' } },
};

/** Sandbox-tagged operations production platforms may call, and the rule that says so. */
const PRODUCTION_TOO: Record<string, string> = {
  'POST /sandbox/webhooks/test': 'webhooks/routes.ts: "Works for production platforms too" (checks the live endpoint)',
};

let ctx: TestContext;
let operations: string[];
beforeAll(async () => {
  ctx = await createTestContext();
  const document = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as { paths: Record<string, Record<string, unknown>> };
  operations = Object.entries(document.paths)
    .filter(([path]) => path.startsWith('/sandbox/'))
    .flatMap(([path, item]) => Object.keys(item).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m)).map((m) => `${m.toUpperCase()} ${path}`));
});
afterAll(() => ctx.close());

function request(key: string) {
  const [method, template] = key.split(' ') as ['GET' | 'POST', string];
  const { body, path = {} } = SANDBOX_ONLY[key]!;
  const url = Object.entries(path).reduce((u, [name, value]) => u.replace(`{${name}}`, encodeURIComponent(value)), template);
  return { method, url: `${BASE}${url}`, ...(body ? { payload: body } : {}) };
}

describe('sandbox operations and production platforms', () => {
  it('classifies every /sandbox/ operation of the served OpenAPI document, and nothing else', () => {
    const classified = [...Object.keys(SANDBOX_ONLY), ...Object.keys(PRODUCTION_TOO)];
    expect(operations.filter((op) => !classified.includes(op)), 'sandbox operations to classify').toEqual([]);
    expect(classified.filter((op) => !operations.includes(op)), 'entries no longer served').toEqual([]);
  });

  it('refuses a production platform’s every-permission token 403 FORBIDDEN on each sandbox-only operation, changing nothing', async () => {
    const production = await ctx.newPlatform('production');
    const before = await databaseDigest(ctx.handle.db);
    const wrong: string[] = [];
    for (const key of Object.keys(SANDBOX_ONLY)) {
      const response = await ctx.app.inject({ ...request(key), headers: { authorization: production.auth, 'idempotency-key': randomUUID() } });
      const body = response.json() as { status?: number; code?: string; message?: unknown };
      if (response.statusCode !== 403 || body.status !== 403 || body.code !== 'FORBIDDEN' || typeof body.message !== 'string') wrong.push(`${key}: ${response.statusCode} ${response.body.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
    expect(await databaseDigest(ctx.handle.db)).toEqual(before);
  });

  it('refuses a production platform before looking at the request: a malformed body or id is 403 too, not 400', async () => {
    const production = await ctx.newPlatform('production');
    const wrong: string[] = [];
    for (const key of Object.keys(SANDBOX_ONLY)) {
      const { method, url } = request(key);
      const malformed = url.replace(/[A-Za-z]+(:|%3A)[0-9a-f-]{36}/, 'not-an-id');
      const response = await ctx.app.inject({ method, url: malformed, headers: { authorization: production.auth }, ...(method === 'POST' ? { payload: { unknownField: true } } : {}) });
      if (response.statusCode !== 403) wrong.push(`${key}: ${response.statusCode} ${response.body.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('lets a sandbox platform past the same requests (what it names does not exist: never 403)', async () => {
    const sandbox = await ctx.newPlatform();
    const refused: string[] = [];
    for (const key of Object.keys(SANDBOX_ONLY)) {
      const response = await ctx.app.inject({ ...request(key), headers: { authorization: sandbox.auth } });
      if (response.statusCode === 403 || response.statusCode >= 500) refused.push(`${key}: ${response.statusCode} ${response.body.slice(0, 160)}`);
    }
    expect(refused).toEqual([]);
  });
});
