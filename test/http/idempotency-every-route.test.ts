import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { multipartBody } from '../helpers/multipart.js';

/**
 * What the request's fingerprint is made of, on every operation that declares `Idempotency-Key`
 * (docs/conventions.md § Idempotency): the operation is part of it, so a key that answered one
 * operation is 409 CONFLICT on every other and changes nothing; the path is the one routed, so an
 * id percent-encoded (as SDKs encode path parameters) or not is the same request and replays.
 * A refusal that committed a change (an expired quote's execution) is an answer like any other:
 * stored, and replayed. test/http/idempotency-sweep.test.ts holds each operation to replays,
 * another body, per-platform keys, malformed keys and concurrency.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Json = Record<string, any>;
type Response = Awaited<ReturnType<TestContext['app']['inject']>>;
interface Request {
  method: 'POST';
  path: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

const send = (p: TestPlatform, { method, path, payload, headers = {} }: Request, key: string) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, 'idempotency-key': key, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });
const call = (p: TestPlatform, method: 'GET' | 'POST', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const ok = async (response: Promise<Response>, status: number) => {
  const answered = await response;
  expect(answered.statusCode, answered.body).toBe(status);
  return answered.json() as Json;
};

const ABSENT = '019542f5-b3e7-1d02-0000-000000000001';
const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
const csvUpload = (): Pick<Request, 'payload' | 'headers'> =>
  multipartBody([
    { name: 'file', filename: 'customers.csv', contentType: 'text/csv', data: Buffer.from('customerType,fullName,birthDate,addressLine1,city,state,postalCode,country\nINDIVIDUAL,Ann Key,1990-01-01,1 Main St,Austin,TX,78701,US') },
  ]);
const accountTransfer = (source: string, destination: string) => ({ source: { sourceType: 'ACCOUNT', accountId: source }, destination: { destinationType: 'ACCOUNT', accountId: destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 });

/**
 * A request to each operation that declares the key, which its route accepts as far as the key
 * (the schema and what is checked before `sendWrite`); its ids need not exist, since a key used
 * for another request is refused before the write runs.
 */
const KEYED: Record<string, () => Request> = {
  createCustomer: () => ({ method: 'POST', path: '/customers', payload: { customerType: 'INDIVIDUAL', fullName: 'Ann Lee' } }),
  uploadCustomersCsv: () => ({ method: 'POST', path: '/customers/bulk/csv', ...csvUpload() }),
  fundSandboxInternalAccount: () => ({ method: 'POST', path: `/sandbox/internal-accounts/InternalAccount:${ABSENT}/fund`, payload: { amount: 500 } }),
  createCustomerKycLink: () => ({ method: 'POST', path: `/customers/Customer:${ABSENT}/kyc-link`, payload: {} }),
  createQuote: () => ({ method: 'POST', path: '/quotes', payload: accountTransfer(`InternalAccount:${ABSENT}`, `ExternalAccount:${ABSENT}`) }),
  executeQuote: () => ({ method: 'POST', path: `/quotes/Quote:${ABSENT}/execute` }),
  createTransferIn: () => ({ method: 'POST', path: '/transfer-in', payload: { source: { accountId: `ExternalAccount:${ABSENT}` }, destination: { accountId: `InternalAccount:${ABSENT}` }, amount: 500 } }),
  createTransferOut: () => ({ method: 'POST', path: '/transfer-out', payload: { source: { accountId: `InternalAccount:${ABSENT}` }, destination: { accountId: `ExternalAccount:${ABSENT}` }, amount: 500 } }),
  createCustomerExternalAccount: () => ({ method: 'POST', path: '/customers/external-accounts', payload: { ...validSamples(ctx.clock.now()).USD_ACCOUNT!, customerId: `Customer:${ABSENT}` } }),
  createPlatformExternalAccount: () => ({ method: 'POST', path: '/platform/external-accounts', payload: validSamples(ctx.clock.now()).USD_ACCOUNT! }),
  cancelTransaction: () => ({ method: 'POST', path: `/transactions/Transaction:${ABSENT}/cancel`, payload: {} }),
  sandboxSend: () => ({ method: 'POST', path: '/sandbox/send', payload: { quoteId: `Quote:${ABSENT}`, currencyCode: 'USD' } }),
  sandboxReceive: () => ({ method: 'POST', path: '/sandbox/uma/receive', payload: { senderUmaAddress: '$alice@sender-vasp.example', customerId: `Customer:${ABSENT}`, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 500 } }),
  sandboxDeposit: () => ({ method: 'POST', path: '/sandbox/deposits', payload: { reference: 'NO-SUCH-REFERENCE', amount: 500 } }),
  createInvitation: () => ({ method: 'POST', path: '/invitations', payload: { inviterUma: '$ann@a.example.com' } }),
};

type Operations = Record<string, { operationId: string; parameters?: Array<{ in: string; name: string }> }>;
/** The operations the served OpenAPI document declares the header on, and whether each has a path parameter. */
async function keyedOperations(): Promise<Array<{ operationId: string; pathParameter: boolean }>> {
  const document = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as { paths: Record<string, Operations> };
  return Object.values(document.paths)
    .flatMap((ops) => Object.values(ops))
    .filter((op) => op.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'))
    .map((op) => ({ operationId: op.operationId, pathParameter: op.parameters!.some((p) => p.in === 'path') }));
}

/** What a request could have changed on the platform: its events, and its stored keys as they stand. */
async function platformState(p: TestPlatform) {
  const events = (await ctx.handle.db.selectFrom('events').select('id').where('platform_id', '=', p.uuid).execute()).length;
  const keys = await ctx.handle.db.selectFrom('idempotency_keys').select(['key', 'request_hash', 'status_code', 'created_at']).where('platform_id', '=', p.uuid).orderBy('key').execute();
  return { events, keys };
}

/** Headers that must be the same on a replay: all but those of the exchange itself and the replay marker. */
const replayedHeaders = (response: Response) => {
  const { date: _date, 'x-request-id': _requestId, 'idempotent-replayed': _replayed, ...rest } = response.headers;
  return rest;
};
function expectReplayOf(replay: Response, first: Response) {
  expect(replay.headers['idempotent-replayed']).toBe('true');
  expect(replay.statusCode).toBe(first.statusCode);
  expect(replay.body).toBe(first.body);
  expect(replayedHeaders(replay)).toEqual(replayedHeaders(first));
}

describe('the operation is part of the key’s request', () => {
  it('the table holds exactly the operations the OpenAPI document declares the header on', async () => {
    expect(Object.keys(KEYED).sort()).toEqual((await keyedOperations()).map((o) => o.operationId).sort());
  });

  it.each(Object.keys(KEYED).filter((operationId) => operationId !== 'createCustomer'))('%s under a key that answered POST /customers is 409 CONFLICT and changes nothing', async (operationId) => {
    const p = await ctx.newPlatform();
    const key = `every-route-${operationId}`;
    await ok(send(p, KEYED.createCustomer!(), key), 201);
    const before = await platformState(p);
    const refused = await send(p, KEYED[operationId]!(), key);
    expect(expectEnvelope(refused, 409, 'CONFLICT').details).toEqual({ idempotencyKey: key });
    expect(refused.headers['x-should-retry']).toBe('false');
    expect(await platformState(p)).toEqual(before);
  });

  it('POST /customers under a key that answered another operation is 409 CONFLICT', async () => {
    const p = await ctx.newPlatform();
    await ok(send(p, KEYED.uploadCustomersCsv!(), 'every-route-csv'), 202);
    const before = await platformState(p);
    expectEnvelope(await send(p, KEYED.createCustomer!(), 'every-route-csv'), 409, 'CONFLICT');
    expect(await platformState(p)).toEqual(before);
  });
});

/** Requests that succeed, to each keyed operation with a path parameter; `path` holds one id, written `Type:uuid`. */
async function pathOperations(p: TestPlatform): Promise<Record<string, Request & { status: number }>> {
  const customer = await ok(call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'every-route', fullName: 'Ann Lee', endUserTermsConsent: consent() }), 201);
  const usd = (await ok(call(p, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`), 200)).data[0].id as string;
  await ok(call(p, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 100_000 }), 200);
  const samples = validSamples(ctx.clock.now());
  const eur = (await ok(call(p, 'POST', '/platform/external-accounts', samples.EUR_ACCOUNT), 201)).id as string;
  const ach = (await ok(call(p, 'POST', '/platform/external-accounts', samples.USD_ACCOUNT), 201)).id as string;
  const quote = await ok(call(p, 'POST', '/quotes', accountTransfer(usd, eur)), 201);
  const payment = await ok(call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: ach, paymentRail: 'ACH' }, amount: 12_550 }), 201);
  return {
    fundSandboxInternalAccount: { method: 'POST', path: `/sandbox/internal-accounts/${usd}/fund`, payload: { amount: 500 }, status: 200 },
    createCustomerKycLink: { method: 'POST', path: `/customers/${customer.id}/kyc-link`, payload: { redirectUri: 'https://app.example.com/done' }, status: 201 },
    executeQuote: { method: 'POST', path: `/quotes/${quote.id}/execute`, status: 200 },
    cancelTransaction: { method: 'POST', path: `/transactions/${payment.id}/cancel`, payload: { reason: 'REQUESTED' }, status: 200 },
  };
}

describe('a malformed key', () => {
  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'has space'],
    ['a character outside ASCII', 'clé'],
  ])('%s is 400 INVALID_INPUT naming the header and the constraints the OpenAPI document gives it; nothing is stored', async (_case, key) => {
    const p = await ctx.newPlatform();
    const before = await platformState(p);
    const refused = expectEnvelope(await send(p, KEYED.createCustomer!(), key), 400, 'INVALID_INPUT');
    const header = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json().paths['/customers'].post.parameters.find((h: Json) => h.name.toLowerCase() === 'idempotency-key').schema;
    expect(refused.details!.errors).toEqual([{ field: 'Idempotency-Key', constraint: { pattern: header.pattern, minLength: header.minLength, maxLength: header.maxLength }, message: 'must be 1–255 visible ASCII characters' }]);
    expect(await platformState(p)).toEqual(before);
  });
});

describe('the path is the one routed', () => {
  it('on every keyed operation with a path parameter, the id percent-encoded is the same request: the first answer is replayed and nothing more changes', async () => {
    const p = await ctx.newPlatform();
    const operations = await pathOperations(p);
    expect(Object.keys(operations).sort()).toEqual((await keyedOperations()).filter((o) => o.pathParameter).map((o) => o.operationId).sort());
    for (const [operationId, request] of Object.entries(operations)) {
      const key = `every-route-path-${operationId}`;
      const first = await send(p, request, key);
      expect(first.statusCode, `${operationId}: ${first.body}`).toBe(request.status);
      const done = await platformState(p);
      const encoded = { ...request, path: request.path.replace(/\/([A-Za-z]+):([0-9a-f-]{36})/, '/$1%3A$2') };
      expect(encoded.path, operationId).not.toBe(request.path);
      expectReplayOf(await send(p, encoded, key), first);
      expect(await platformState(p), operationId).toEqual(done);
    }
  });
});

describe('a refusal that committed a change', () => {
  it('an expired quote’s execution (409 QUOTE_EXPIRED, its transaction recorded EXPIRED) is stored and replayed: one transaction', async () => {
    const p = await ctx.newPlatform();
    const operations = await pathOperations(p);
    ctx.clock.advance(3_600_000);
    const expired = await send(p, operations.executeQuote!, 'every-route-expired');
    expect(expectEnvelope(expired, 409, 'CONFLICT').details).toMatchObject({ reason: 'QUOTE_EXPIRED' });
    const done = await platformState(p);
    expectReplayOf(await send(p, operations.executeQuote!, 'every-route-expired'), expired);
    expect(await platformState(p)).toEqual(done);
    const transactionId = (expired.json() as Json).details.transactionId as string;
    expect(await ok(call(p, 'GET', `/transactions/${transactionId}`), 200)).toMatchObject({ status: 'EXPIRED' });
  });
});
