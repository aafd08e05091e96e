import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permission } from '../../src/platform/http/auth.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { databaseDigest } from '../helpers/database-digest.js';

/**
 * API token permissions, swept over every operation of the served OpenAPI document. `REQUIRED`
 * says, for each operation, the permission it needs and the rule that says so; an operation of
 * the document that is not in it (or an entry the document no longer has) fails the first test,
 * so a route added later must be classified here.
 *
 * For each operation and each non-empty set of permissions a token can hold:
 * - lacking the permission: 403 FORBIDDEN in the spec's envelope (§2.3) naming the permission,
 *   before anything else looks at the request (unknown query parameter, unparsable JSON body,
 *   unknown or malformed id), and no row of the database changes;
 * - holding it: never 403 FORBIDDEN (a bogus body or id answers 400 or 404, which is fine).
 */

type Rule = { needs: Permission; why: string };

/** Upstream `Permission` schema (reference/upstream-openapi.yaml), quoted per clause. */
const UPSTREAM_VIEW = 'upstream Permission: "VIEW: Can view all data, including platform config, customers and transactions"';
const UPSTREAM_TRANSACT = 'upstream Permission: "TRANSACT: Can send payments"';
const UPSTREAM_MANAGE = 'upstream Permission: "MANAGE: Can manage platform config, api tokens and customers"';

/** Reads: every token may read (tokens/README.md), which is what VIEW grants upstream. */
const READ: Rule = { needs: 'VIEW', why: `${UPSTREAM_VIEW}; tokens/README.md: every token may read` };
/** A read that takes its question as a body (withdrawal-fees/routes.ts: it changes nothing). */
const READ_BY_POST: Rule = { needs: 'VIEW', why: `${READ.why}; a POST only because the question is a body, nothing is stored` };
/** Quote create and execute (UPSTREAM-FACTS "API token permissions enum": 403 otherwise). */
const QUOTE: Rule = { needs: 'TRANSACT', why: `${UPSTREAM_TRANSACT}; UPSTREAM-FACTS: quote create/execute need TRANSACT (403 otherwise)` };
/** Money movement: sends, pulls, cancels, decides or records a payment. */
const MONEY: Rule = { needs: 'TRANSACT', why: `${UPSTREAM_TRANSACT}: the operation moves money or decides a payment` };
/** Invitations/README.md: an invitation is the first step of a payment. */
const INVITATION: Rule = { needs: 'TRANSACT', why: `${UPSTREAM_TRANSACT}; invitations/README.md: an invitation is the first step of a payment` };
/** Sandbox operations that stand in for money arriving, leaving or settling (sandbox/README.md). */
const SANDBOX_MONEY: Rule = { needs: 'TRANSACT', why: `${UPSTREAM_TRANSACT}: the sandbox operation moves or settles money as a rail would` };
const TOKENS: Rule = { needs: 'MANAGE', why: `${UPSTREAM_MANAGE}: API tokens` };
const CONFIG: Rule = { needs: 'MANAGE', why: `${UPSTREAM_MANAGE}: platform config (settings, webhooks, the platform's own accounts)` };
/** Customers and what hangs off them: KYC/KYB, documents, owners, their accounts and wallets' credentials. */
const CUSTOMERS: Rule = { needs: 'MANAGE', why: `${UPSTREAM_MANAGE}: customers and what belongs to them` };

const REQUIRED: Record<string, Rule> = {
  'POST /tokens': TOKENS,
  'GET /tokens': READ,
  'GET /tokens/{tokenId}': READ,
  'DELETE /tokens/{tokenId}': TOKENS,

  'GET /config': READ,
  'PATCH /config': CONFIG,

  'POST /customers/bulk/csv': CUSTOMERS,
  'GET /customers/bulk/jobs/{jobId}/errors': READ,
  'GET /customers/bulk/jobs/{jobId}': READ,
  'POST /customers': CUSTOMERS,
  'GET /customers': READ,
  'GET /customers/end-user-terms': READ,
  'GET /customers/settings': READ,
  'PATCH /customers/settings': CONFIG,
  'GET /customers/{customerId}': READ,
  'PATCH /customers/{customerId}': CUSTOMERS,
  'DELETE /customers/{customerId}': CUSTOMERS,

  // An embedded wallet is a customer's account: its settings, export and credentials are the customer's.
  'PATCH /internal-accounts/{id}': CUSTOMERS,
  'POST /internal-accounts/{id}/export': CUSTOMERS,
  'GET /customers/internal-accounts': READ,
  'GET /platform/internal-accounts': READ,
  'POST /sandbox/internal-accounts/{accountId}/fund': SANDBOX_MONEY,

  'GET /auth/enclave': READ,
  'POST /auth/credentials': CUSTOMERS,
  'GET /auth/credentials': READ,
  'POST /auth/credentials/{id}/challenge': CUSTOMERS,
  'POST /auth/credentials/{id}/verify': CUSTOMERS,
  'DELETE /auth/credentials/{id}': CUSTOMERS,
  'GET /auth/sessions': READ,
  'DELETE /auth/sessions/{id}': CUSTOMERS,
  'POST /auth/sessions/{id}/refresh': CUSTOMERS,

  'POST /beneficial-owners': CUSTOMERS,
  'GET /beneficial-owners': READ,
  'GET /beneficial-owners/{beneficialOwnerId}': READ,
  'PATCH /beneficial-owners/{beneficialOwnerId}': CUSTOMERS,
  'POST /verifications': CUSTOMERS,
  'GET /verifications': READ,
  'GET /verifications/{verificationId}': READ,
  'POST /sandbox/verifications/{verificationId}/manual-review': CUSTOMERS,
  'POST /customers/{customerId}/kyc-link': CUSTOMERS,
  // Issues a link as the POST does, at the path the upstream's published SDK asks with a GET.
  'GET /customers/kyc-link': CUSTOMERS,

  'GET /webhooks/signing-keys': READ,
  'POST /webhooks/signing-keys/rotate': CONFIG,
  'GET /webhooks/deliveries': READ,
  'GET /webhooks/deliveries/{webhookId}': READ,
  'POST /webhooks/deliveries/{webhookId}/resend': CONFIG,
  'POST /sandbox/webhooks/test': CONFIG,
  'POST /webhooks/test': CONFIG,

  'POST /documents': CUSTOMERS,
  'GET /documents': READ,
  'GET /documents/{documentId}': READ,
  'PUT /documents/{documentId}': CUSTOMERS,
  'DELETE /documents/{documentId}': CUSTOMERS,

  'GET /exchange-rates': READ,

  'POST /quotes': QUOTE,
  'GET /quotes/{quoteId}': READ,
  'POST /quotes/{quoteId}/execute': QUOTE,
  // SPEC §9.3: deprecated in favour of POST /quotes with immediatelyExecute, "continue to work unchanged".
  'POST /transfer-in': MONEY,
  'POST /transfer-out': MONEY,
  'GET /receiver/uma/{receiverUmaAddress}': READ,
  'GET /receiver/external-account/{accountId}': READ,
  'POST /crypto/estimate-withdrawal-fee': READ_BY_POST,

  'POST /customers/external-accounts': CUSTOMERS,
  'GET /customers/external-accounts': READ,
  'GET /customers/external-accounts/{externalAccountId}': READ,
  'DELETE /customers/external-accounts/{externalAccountId}': CUSTOMERS,
  'POST /customers/external-accounts/{externalAccountId}/challenge': CUSTOMERS,
  'POST /customers/external-accounts/{externalAccountId}/verify': CUSTOMERS,
  'POST /platform/external-accounts': CONFIG,
  'GET /platform/external-accounts': READ,
  'GET /platform/external-accounts/{externalAccountId}': READ,
  'DELETE /platform/external-accounts/{externalAccountId}': CONFIG,
  'POST /platform/external-accounts/{externalAccountId}/challenge': CONFIG,
  'POST /platform/external-accounts/{externalAccountId}/verify': CONFIG,

  'GET /vasps': READ,
  'GET /uma-providers': READ,
  'GET /discoveries': READ,

  'POST /invitations': INVITATION,
  'GET /invitations/{invitationCode}': READ,
  'POST /invitations/{invitationCode}/claim': INVITATION,
  'POST /invitations/{invitationCode}/cancel': INVITATION,

  'GET /transactions': READ,
  'GET /transactions/{transactionId}': READ,
  'POST /transactions/{transactionId}/cancel': MONEY,
  'POST /transactions/{transactionId}/confirm': MONEY,
  'POST /transactions/{transactionId}/approve': MONEY,
  'POST /transactions/{transactionId}/reject': MONEY,

  'POST /sandbox/send': SANDBOX_MONEY,
  'POST /sandbox/uma/receive': SANDBOX_MONEY,
  'POST /sandbox/deposits': SANDBOX_MONEY,
  'POST /sandbox/transactions/{transactionId}/refund': SANDBOX_MONEY,
  'GET /sandbox/clock': READ,
  // Advancing the clock settles payments and expires quotes (its description): money moves.
  'POST /sandbox/clock/advance': SANDBOX_MONEY,

  // modules/sca: each answers 409 (not required), but by its permission first, as it would if it acted.
  // Contact verification, SCA factors, logins and resets: a customer's authentication, as its wallet credentials are.
  'POST /customers/{customerId}/verify-email': CUSTOMERS,
  'POST /customers/{customerId}/verify-email/confirm': CUSTOMERS,
  'POST /customers/{customerId}/verify-phone': CUSTOMERS,
  'POST /customers/{customerId}/verify-phone/confirm': CUSTOMERS,
  'GET /sca/factors': READ,
  'POST /sca/factors': CUSTOMERS,
  'POST /sca/factors/confirm': CUSTOMERS,
  'DELETE /sca/factors/{credentialId}': CUSTOMERS,
  'POST /sca/login/start': CUSTOMERS,
  'POST /sca/login/complete': CUSTOMERS,
  'POST /sca/record-event': CUSTOMERS,
  'POST /sca/factors/reset': CUSTOMERS,
  'GET /sca/factors/reset/{resetId}': READ,
  'POST /sca/factors/reset/{resetId}/complete': CUSTOMERS,
  // Trusting a beneficiary changes a customer's external account, as its ownership challenge does.
  'POST /customers/external-accounts/{externalAccountId}/trust': CUSTOMERS,
  'POST /customers/external-accounts/{externalAccountId}/trust/confirm': CUSTOMERS,
  'POST /customers/external-accounts/{externalAccountId}/untrust': CUSTOMERS,
  'POST /customers/external-accounts/{externalAccountId}/untrust/confirm': CUSTOMERS,
  // Authorizing a quote decides its payment (releases it), as executing it does.
  'POST /quotes/{quoteId}/authorize': MONEY,
  'POST /quotes/{quoteId}/authorize/resend': MONEY,
};

const ALL: Permission[] = ['VIEW', 'TRANSACT', 'MANAGE'];
/** Every non-empty set of permissions a token can hold. */
const PERMISSION_SETS: Permission[][] = [1, 2, 3, 4, 5, 6, 7].map((mask) => ALL.filter((_, bit) => mask & (1 << bit)));
/** The rule under test (tokens/README.md): VIEW is held by every token; any other permission only when granted. */
const holds = (held: Permission[], needed: Permission) => needed === 'VIEW' || held.includes(needed);

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
interface Operation {
  key: string;
  method: Method;
  path: string;
  pathParams: Array<{ name: string; schema?: { pattern?: string } }>;
}

let ctx: TestContext;
let operations: Operation[];
const tokens = new Map<string, TestPlatform>();
const setName = (set: Permission[]) => `[${set.join(',')}]`;

beforeAll(async () => {
  ctx = await createTestContext();
  const served = await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` });
  expect(served.statusCode).toBe(200);
  type DocumentOperation = { security?: unknown[]; parameters?: Array<{ in: string; name: string; schema?: { pattern?: string } }> };
  const document = served.json() as { paths: Record<string, Record<string, DocumentOperation>> };
  operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      // `security: []` would be an operation that takes no token (none today): it has no permission to sweep.
      .filter(([method, op]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method) && op.security?.length !== 0)
      .map(([method, op]) => ({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase() as Method,
        path,
        pathParams: (op.parameters ?? []).filter((p) => p.in === 'path'),
      })),
  );
  for (const set of PERMISSION_SETS) tokens.set(setName(set), await ctx.newToken(ctx.platform, set));
});
afterAll(() => ctx.close());

/** The path with each parameter set to an id of its type that names nothing (or `malformed` for every one). */
function urlOf(op: Operation, ids: 'unknown' | 'malformed'): string {
  let url = op.path;
  for (const { name, schema } of op.pathParams) {
    const type = /^\^([A-Z][A-Za-z]*):/.exec(schema?.pattern ?? '')?.[1];
    const value = ids === 'malformed' ? 'nonexistent' : type ? `${type}:${randomUUID()}` : 'nonexistent0';
    url = url.replace(`{${name}}`, encodeURIComponent(value));
  }
  return `${BASE}${url}`;
}

const hasBody = (method: Method) => method === 'POST' || method === 'PUT' || method === 'PATCH';

describe('API token permissions over every operation', () => {
  it('classifies every operation of the served OpenAPI document, and nothing else', () => {
    const served = operations.map((op) => op.key);
    expect(served.filter((key) => !(key in REQUIRED)), 'operations to classify in REQUIRED').toEqual([]);
    expect(Object.keys(REQUIRED).filter((key) => !served.includes(key)), 'REQUIRED entries no longer served').toEqual([]);
    expect(served.length).toBeGreaterThan(80);
  });

  it('answers every operation without credentials 401 UNAUTHORIZED, before validation (spec §5 rule 1)', async () => {
    const wrong: string[] = [];
    for (const op of operations) {
      const response = await ctx.app.inject({
        method: op.method,
        url: `${urlOf(op, 'malformed')}?unexpected=1`,
        ...(hasBody(op.method) ? { headers: { 'content-type': 'application/json' }, payload: '{"unexpected": ' } : {}),
      });
      const body = response.json() as { status?: number; code?: string };
      if (response.statusCode !== 401 || body.status !== 401 || body.code !== 'UNAUTHORIZED') wrong.push(`${op.key}: ${response.statusCode} ${response.body.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('refuses a token lacking the required permission with 403 FORBIDDEN before validation or lookup, changing nothing', async () => {
    const before = await databaseDigest(ctx.handle.db);
    // The digest sees the schema's tables (on PostgreSQL, the test's own schema).
    expect(Object.keys(before).length).toBeGreaterThan(40);
    expect(before.api_tokens).not.toBe('');
    const wrong: string[] = [];
    let refusals = 0;
    for (const op of operations) {
      const needed = REQUIRED[op.key]?.needs;
      if (!needed) continue;
      for (const set of PERMISSION_SETS.filter((s) => !holds(s, needed))) {
        for (const ids of ['unknown', 'malformed'] as const) {
          const response = await ctx.app.inject({
            method: op.method,
            url: `${urlOf(op, ids)}?unexpected=1`,
            headers: {
              authorization: tokens.get(setName(set))!.auth,
              'idempotency-key': randomUUID(),
              ...(hasBody(op.method) ? { 'content-type': 'application/json' } : {}),
            },
            // Not even JSON: the refusal must come before the body is read.
            ...(hasBody(op.method) ? { payload: '{"unexpected": ' } : {}),
          });
          refusals += 1;
          const body = response.json() as { status?: number; code?: string; message?: unknown; details?: { requiredPermission?: string } };
          const ok =
            response.statusCode === 403 &&
            body.status === 403 &&
            body.code === 'FORBIDDEN' &&
            typeof body.message === 'string' &&
            body.details?.requiredPermission === needed;
          if (!ok) wrong.push(`${op.key} as ${setName(set)} (${ids} id): ${response.statusCode} ${response.body.slice(0, 160)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    // Every TRANSACT and MANAGE operation was refused to the sets lacking it.
    expect(refusals).toBeGreaterThan(100);
    expect(await databaseDigest(ctx.handle.db)).toEqual(before);
  });

  it('never refuses a token holding the required permission with 403 FORBIDDEN', async () => {
    const wrong: string[] = [];
    for (const op of operations) {
      const needed = REQUIRED[op.key]?.needs;
      if (!needed) continue;
      for (const set of PERMISSION_SETS.filter((s) => holds(s, needed))) {
        const response = await ctx.app.inject({
          method: op.method,
          url: urlOf(op, 'unknown'),
          headers: { authorization: tokens.get(setName(set))!.auth },
          ...(hasBody(op.method) ? { payload: {} } : {}),
        });
        const code = response.headers['content-type']?.toString().includes('json') ? (response.json() as { code?: string }).code : undefined;
        if ((response.statusCode === 403 && code === 'FORBIDDEN') || response.statusCode === 401) {
          wrong.push(`${op.key} as ${setName(set)}: ${response.statusCode} ${response.body.slice(0, 160)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('keeps a token within its own platform: another platform’s token is unknown to it, and vice versa', async () => {
    const other = await ctx.newPlatform();
    const mine = tokens.get('[VIEW,TRANSACT,MANAGE]')!;
    for (const [caller, target] of [
      [other, mine],
      [mine, other],
    ] as const) {
      const headers = { authorization: caller.auth };
      const read = await ctx.app.inject({ method: 'GET', url: `${BASE}/tokens/${target.tokenId}`, headers });
      expect(read.statusCode, read.body).toBe(404);
      const deleted = await ctx.app.inject({ method: 'DELETE', url: `${BASE}/tokens/${target.tokenId}`, headers });
      expect(deleted.statusCode, deleted.body).toBe(404);
      const list = await ctx.app.inject({ method: 'GET', url: `${BASE}/tokens?limit=100`, headers });
      expect((list.json() as { data: Array<{ id: string }> }).data.map((t) => t.id)).not.toContain(target.tokenId);
      // The target still authenticates: nothing of it was touched.
      expect((await ctx.app.inject({ method: 'GET', url: `${BASE}/tokens/${target.tokenId}`, headers: { authorization: target.auth } })).statusCode).toBe(200);
    }
  });
});
