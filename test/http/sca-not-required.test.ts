import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { databaseDigest } from '../helpers/database-digest.js';
import { validSamples } from '../helpers/external-accounts.js';
import { call, customerUsdAccount, readySender, type Json } from '../helpers/payments.js';

/**
 * SPEC §1, §7.6: contact verification and Strong Customer Authentication answer 409 where the
 * payment provider does not require them, which none of Corridor's does (modules/sca/README.md).
 * These 20 upstream operations had no route, so an upstream SDK heard 404 "not found". Each is
 * held to the README's order: 401 without credentials, 400 for a malformed body, 404 for what it
 * names when that is unknown or another platform's, 410 for a deleted customer's, else 409
 * CONFLICT naming what is not required — and none of it changes a row.
 */
let ctx: TestContext;
let p: TestPlatform;
/** The same kinds of resource, of another platform: unknown to `p`. */
let foreign: Ids;
let mine: Ids;
let deleted: Ids;

interface Ids {
  customerId: string;
  externalAccountId: string;
  quoteId: string;
}

type Kind = 'customer' | 'sca' | 'beneficiary' | 'quote';
interface Operation {
  method: 'GET' | 'POST' | 'DELETE';
  /** The path for these ids (the /sca operations' customer goes in the query). */
  path: (ids: Ids) => string;
  kind: Kind;
  /** A body the upstream's schema allows, where the operation takes one. */
  body?: Json;
  /** One the upstream's schema refuses, and the field the 400 names. */
  malformed?: { body: Json; field: string };
}

const code = { code: '123456' };
const OPERATIONS: Operation[] = [
  { method: 'POST', path: (i) => `/customers/${i.customerId}/verify-email`, kind: 'customer' },
  { method: 'POST', path: (i) => `/customers/${i.customerId}/verify-email/confirm`, kind: 'customer', body: code, malformed: { body: {}, field: 'code' } },
  { method: 'POST', path: (i) => `/customers/${i.customerId}/verify-phone`, kind: 'customer' },
  { method: 'POST', path: (i) => `/customers/${i.customerId}/verify-phone/confirm`, kind: 'customer', body: code, malformed: { body: { code: 123456 }, field: 'code' } },
  { method: 'GET', path: (i) => `/sca/factors?customerId=${i.customerId}`, kind: 'sca' },
  { method: 'POST', path: (i) => `/sca/factors?customerId=${i.customerId}`, kind: 'sca', body: { type: 'PASSKEY' }, malformed: { body: { type: 'SMS_OTP' }, field: 'type' } },
  {
    method: 'POST',
    path: (i) => `/sca/factors/confirm?customerId=${i.customerId}`,
    kind: 'sca',
    body: { type: 'PASSKEY', origin: 'https://app.example.com', credential: { id: 'abc', response: {} } },
    malformed: { body: { type: 'TOTP', code: '123456' }, field: 'secret' },
  },
  { method: 'DELETE', path: (i) => `/sca/factors/credential-1?customerId=${i.customerId}`, kind: 'sca' },
  { method: 'POST', path: (i) => `/sca/login/start?customerId=${i.customerId}`, kind: 'sca', body: { factor: 'SMS_OTP' }, malformed: { body: { factor: 'EMAIL_OTP' }, field: 'factor' } },
  {
    method: 'POST',
    path: (i) => `/sca/login/complete?customerId=${i.customerId}`,
    kind: 'sca',
    body: { factor: 'SMS_OTP', endUserIpAddress: '203.0.113.42', challengeId: 'challenge-1', code: '123456' },
    malformed: { body: { factor: 'SMS_OTP', code: '123456' }, field: 'endUserIpAddress' },
  },
  { method: 'POST', path: (i) => `/sca/record-event?customerId=${i.customerId}`, kind: 'sca', body: { eventType: 'FAILED_LOGIN_ATTEMPT' }, malformed: { body: { eventType: 'LOGIN' }, field: 'eventType' } },
  { method: 'POST', path: (i) => `/sca/factors/reset?customerId=${i.customerId}`, kind: 'sca', body: { factor: 'TOTP' }, malformed: { body: { factor: 'TOTP', extra: 1 }, field: 'extra' } },
  { method: 'GET', path: (i) => `/sca/factors/reset/reset-1?customerId=${i.customerId}`, kind: 'sca' },
  {
    method: 'POST',
    path: (i) => `/sca/factors/reset/reset-1/complete?customerId=${i.customerId}`,
    kind: 'sca',
    body: { mobile: { countryCode: '+1', number: '4155550123' } },
    malformed: { body: { mobile: { countryCode: '+1' } }, field: 'mobile.number' },
  },
  { method: 'POST', path: (i) => `/customers/external-accounts/${i.externalAccountId}/trust`, kind: 'beneficiary' },
  {
    method: 'POST',
    path: (i) => `/customers/external-accounts/${i.externalAccountId}/trust/confirm`,
    kind: 'beneficiary',
    body: { challengeId: null, code: '123456' },
    malformed: { body: { challengeId: 'c' }, field: 'code' },
  },
  { method: 'POST', path: (i) => `/customers/external-accounts/${i.externalAccountId}/untrust`, kind: 'beneficiary' },
  {
    method: 'POST',
    path: (i) => `/customers/external-accounts/${i.externalAccountId}/untrust/confirm`,
    kind: 'beneficiary',
    body: { passkeyAssertion: { id: 'abc' }, origin: 'https://app.example.com' },
    malformed: { body: { passkeyAssertion: 'not an object', origin: 'https://app.example.com' }, field: 'passkeyAssertion' },
  },
  { method: 'POST', path: (i) => `/quotes/${i.quoteId}/authorize`, kind: 'quote', body: { code: '123456', endUserIpAddress: null }, malformed: { body: { code: ['123456'] }, field: 'code' } },
  { method: 'POST', path: (i) => `/quotes/${i.quoteId}/authorize/resend`, kind: 'quote' },
];

const NOT_FOUND: Record<Kind, string> = { customer: 'USER_NOT_FOUND', sca: 'USER_NOT_FOUND', beneficiary: 'REFERENCE_NOT_FOUND', quote: 'QUOTE_NOT_FOUND' };
const label = (op: Operation) => `${op.method} ${op.path({ customerId: '{customerId}', externalAccountId: '{externalAccountId}', quoteId: '{quoteId}' })}`;

const send = (op: Operation, ids: Ids, options: { auth?: string; body?: Json } = {}) =>
  ctx.app.inject({
    method: op.method,
    url: `${BASE}${op.path(ids)}`,
    headers: options.auth === undefined ? {} : { authorization: options.auth },
    ...(options.body === undefined ? {} : { payload: options.body }),
  });

/** A customer with a bank account and a quote from its internal account to it. */
async function resources(platform: TestPlatform): Promise<Ids> {
  const sender = await readySender(ctx, platform, 10_000);
  const externalAccountId = await customerUsdAccount(ctx, platform, sender.customerId, `1234${randomUUID().replace(/\D/g, '').slice(0, 6)}01`);
  const quote = await call(ctx, platform, 'POST', '/quotes', {
    source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
    destination: { destinationType: 'ACCOUNT', accountId: externalAccountId },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: 5_000,
  });
  expect(quote.statusCode, quote.body).toBe(201);
  return { customerId: sender.customerId, externalAccountId, quoteId: (quote.json() as Json).id as string };
}

beforeAll(async () => {
  ctx = await createTestContext();
  p = ctx.platform;
  mine = await resources(p);
  foreign = await resources(await ctx.newPlatform());
  // A customer with an account, then deleted (no money of its own, so it may be).
  const gone = await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `gone-${randomUUID()}`, fullName: 'Gus Gone' });
  expect(gone.statusCode, gone.body).toBe(201);
  const goneId = (gone.json() as Json).id as string;
  const goneAccount = await customerUsdAccount(ctx, p, goneId, '55500011101');
  const removed = await call(ctx, p, 'DELETE', `/customers/${goneId}`);
  expect(removed.statusCode, removed.body).toBe(200);
  deleted = { customerId: goneId, externalAccountId: goneAccount, quoteId: mine.quoteId };
});
afterAll(() => ctx.close());

describe('contact verification and SCA, which no provider of Corridor requires', () => {
  it('serves all 20 upstream operations', () => {
    expect(new Set(OPERATIONS.map(label)).size).toBe(20);
  });

  it('answers each 409 CONFLICT naming what is not required, after 401, 400 and 404, and changes nothing', async () => {
    const before = await databaseDigest(ctx.handle.db);
    const unknown: Ids = { customerId: `Customer:${randomUUID()}`, externalAccountId: `ExternalAccount:${randomUUID()}`, quoteId: `Quote:${randomUUID()}` };
    for (const op of OPERATIONS) {
      const name = label(op);
      const unauthenticated = await send(op, mine, op.body ? { body: op.body } : {});
      expect(expectEnvelope(unauthenticated, 401, 'UNAUTHORIZED').message, name).toBeTypeOf('string');

      if (op.malformed) {
        const refused = expectEnvelope(await send(op, mine, { auth: p.auth, body: op.malformed.body }), 400, 'INVALID_INPUT');
        expect((refused.details!.errors as Array<{ field: string }>).map((e) => e.field), name).toContain(op.malformed.field);
      }

      for (const ids of [unknown, foreign]) {
        const missing = await send(op, ids, { auth: p.auth, ...(op.body ? { body: op.body } : {}) });
        expect(missing.statusCode, `${name}: ${missing.body}`).toBe(404);
        expectEnvelope(missing, 404, NOT_FOUND[op.kind]);
      }

      const answered = await send(op, mine, { auth: p.auth, ...(op.body ? { body: op.body } : {}) });
      expect(answered.statusCode, `${name}: ${answered.body}`).toBe(409);
      expect(answered.headers['x-should-retry'], name).toBe('false');
      const conflict = expectEnvelope(answered, 409, 'CONFLICT');
      if (op.kind === 'customer') {
        expect(conflict.message, name).toMatch(/^Corridor's payment providers do not require contact verification/);
        expect(conflict.details, name).toEqual({ reason: 'CONTACT_VERIFICATION_NOT_REQUIRED', contact: name.includes('email') ? 'EMAIL' : 'PHONE', customerId: mine.customerId });
        // The message names the contact asked about, not the other one.
        expect(conflict.message, name).toContain(name.includes('email') ? "the customer's e-mail address" : "the customer's phone number");
      } else {
        expect(conflict.message, name).toMatch(/^Corridor's payment providers do not require strong customer authentication: .*quotes never wait for authorization/);
        const named =
          op.kind === 'sca'
            ? { customerId: mine.customerId }
            : op.kind === 'beneficiary'
              ? { externalAccountId: mine.externalAccountId, customerId: mine.customerId }
              : { quoteId: mine.quoteId };
        expect(conflict.details, name).toEqual({ reason: 'SCA_NOT_REQUIRED', ...named });
      }
    }
    expect(await databaseDigest(ctx.handle.db)).toEqual(before);
  });

  it('answers a deleted customer, and its account, 410 CUSTOMER_DELETED', async () => {
    const before = await databaseDigest(ctx.handle.db);
    for (const op of OPERATIONS.filter((o) => o.kind !== 'quote')) {
      const response = await send(op, deleted, { auth: p.auth, ...(op.body ? { body: op.body } : {}) });
      expect(response.statusCode, `${label(op)}: ${response.body}`).toBe(410);
      expectEnvelope(response, 410, 'CUSTOMER_DELETED');
    }
    expect(await databaseDigest(ctx.handle.db)).toEqual(before);
  });

  it('checks the id before anything else is looked up: a malformed one is the resource’s 404, a missing customerId 400', async () => {
    const malformed: Ids = { customerId: 'nonexistent', externalAccountId: 'nonexistent', quoteId: 'nonexistent' };
    for (const op of OPERATIONS) {
      const response = await send(op, malformed, { auth: p.auth, ...(op.body ? { body: op.body } : {}) });
      if (op.kind === 'sca') {
        // A query parameter is an ordinary field (docs/conventions.md): malformed is 400.
        expect(expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors, label(op)).toEqual([expect.objectContaining({ field: 'customerId' })]);
      } else {
        expectEnvelope(response, 404, NOT_FOUND[op.kind]);
      }
    }
    // An unknown query parameter is refused, as everywhere.
    const extra = await call(ctx, p, 'GET', `/sca/factors?customerId=${mine.customerId}&factor=TOTP`);
    expect(expectEnvelope(extra, 400, 'INVALID_INPUT').details!.errors).toEqual([expect.objectContaining({ field: 'factor' })]);
    const withoutCustomer = await call(ctx, p, 'GET', '/sca/factors');
    expect(expectEnvelope(withoutCustomer, 400, 'INVALID_INPUT').details!.errors).toEqual([expect.objectContaining({ field: 'customerId', message: 'is required' })]);
  });

  it('takes the 2FA reset completion with no body, or an empty one, as the upstream leaves the body out', async () => {
    const url = `${BASE}/sca/factors/reset/reset-1/complete?customerId=${mine.customerId}`;
    for (const extra of [{}, { headers: { authorization: p.auth, 'content-type': 'application/json' }, payload: '' }]) {
      const response = await ctx.app.inject({ method: 'POST', url, headers: { authorization: p.auth }, ...extra });
      expectEnvelope(response, 409, 'CONFLICT');
    }
  });

  it('refuses a platform’s own external account on the customers’ path, as GET /customers/external-accounts/{id} does', async () => {
    const platformAccount = await call(ctx, p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).USD_ACCOUNT!);
    expect(platformAccount.statusCode, platformAccount.body).toBe(201);
    const id = (platformAccount.json() as Json).id as string;
    expectEnvelope(await call(ctx, p, 'GET', `/customers/external-accounts/${id}`), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(ctx, p, 'POST', `/customers/external-accounts/${id}/trust`), 404, 'REFERENCE_NOT_FOUND');
  });
});
