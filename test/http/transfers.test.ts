import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { eventCatalogue } from '../../src/app.js';
import { parseId } from '../../src/platform/ids.js';
import { drainJobs, eventTypes } from '../helpers/payments.js';

type Body = Record<string, unknown>;
type Account = { id: string; balance: { amount: number }; totalBalance: { amount: number } };

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });

let seq = 0;
/** A sandbox platform with a customer (terms accepted, approved), its USD account funded with `funding`, and a USD payout account. */
async function world(funding: number) {
  const p = await ctx.newPlatform();
  const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `t-${++seq}`, fullName: 'Ann Lee', endUserTermsConsent: consent() });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as { id: string }).id;
  const accounts = (await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as { data: Account[] };
  const usd = accounts.data[0]!.id;
  if (funding > 0) expect((await call(p, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: funding })).statusCode).toBe(200);
  return { p, customerId, usd, usdOut: await externalAccount(p, 'USD_ACCOUNT'), eurOut: await externalAccount(p, 'EUR_ACCOUNT') };
}

async function externalAccount(p: TestPlatform, type: string, extra: Body = {}, info: Body = {}): Promise<string> {
  const sample = validSamples(ctx.clock.now())[type]!;
  const created = await call(p, 'POST', '/platform/external-accounts', { ...sample, ...extra, accountInfo: { ...sample.accountInfo, ...info } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as { id: string }).id;
}

async function balance(p: TestPlatform, customerId: string): Promise<{ available: number; total: number }> {
  const account = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as { data: Account[] }).data[0]!;
  return { available: account.balance.amount, total: account.totalBalance.amount };
}

function expectDeprecated(response: { headers: Record<string, unknown> }) {
  // RFC 9745: a structured-field date, 2025-10-13T00:00:00Z; the successor is POST /quotes.
  expect(response.headers.deprecation).toBe('@1760313600');
  expect(response.headers.link).toMatch(/^<https?:\/\/[^>]+\/2025-10-13\/quotes>; rel="successor-version"$/);
}

describe('POST /transfer-out (deprecated)', () => {
  it('pays an external account on the quote path: 201 Transaction, held at once, settled by the rail; replays with Idempotency-Key', async () => {
    const { p, customerId, usd, usdOut } = await world(100_000);
    const body = { source: { accountId: usd }, destination: { accountId: usdOut, paymentRail: 'ACH' }, amount: 12_550, remittanceInformation: 'INV-12', purposeOfPayment: 'GOODS_OR_SERVICES' };
    const created = await call(p, 'POST', '/transfer-out', body, { 'idempotency-key': 'out-1' });
    expect(created.statusCode, created.body).toBe(201);
    expectDeprecated(created);
    const transaction = created.json() as Body & { id: string; quoteId: string; fees: number };
    // Same-currency ACH: rate 1, the rail's fee (25 on 12,550) comes out of the amount (SENDING locked).
    expect(transaction).toMatchObject({
      type: 'OUTGOING',
      status: 'PENDING',
      customerId,
      source: { sourceType: 'ACCOUNT', accountId: usd, currency: 'USD' },
      destination: { destinationType: 'ACCOUNT', accountId: usdOut, currency: 'USD' },
      sentAmount: { amount: 12_550 - transaction.fees, currency: { code: 'USD' } },
      receivedAmount: { amount: 12_550 - transaction.fees },
      exchangeRate: 1,
      paymentRail: 'ACH',
    });
    expect(transaction.fees).toBeGreaterThan(0);
    expect(transaction.quoteId).toMatch(/^Quote:/);
    const quote = (await call(p, 'GET', `/quotes/${transaction.quoteId}`)).json() as Body;
    expect(quote).toMatchObject({ transactionId: transaction.id, totalSendingAmount: 12_550, status: 'PROCESSING' });
    // The payment carries what the request said of it, as POST /quotes keeps it: the rail is sent the remittance information.
    const stored = await ctx.handle.db
      .selectFrom('transactions')
      .select(['remittance_information', 'purpose_of_payment'])
      .where('platform_id', '=', p.uuid)
      .where('id', '=', parseId('Transaction', transaction.id)!)
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ remittance_information: 'INV-12', purpose_of_payment: 'GOODS_OR_SERVICES' });
    expect(await balance(p, customerId)).toEqual({ available: 100_000 - 12_550, total: 100_000 });

    const replay = await call(p, 'POST', '/transfer-out', body, { 'idempotency-key': 'out-1' });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expectDeprecated(replay);
    expect(replay.json()).toEqual(transaction);
    expect(await balance(p, customerId)).toEqual({ available: 100_000 - 12_550, total: 100_000 });
    await expectLedgerConsistent(ctx.handle.db);

    await drainJobs(ctx);
    ctx.clock.advance(3 * 86_400_000);
    await drainJobs(ctx);
    expect((await call(p, 'GET', `/transactions/${transaction.id}`)).json()).toMatchObject({ status: 'COMPLETED' });
    expect(await balance(p, customerId)).toEqual({ available: 100_000 - 12_550, total: 100_000 - 12_550 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses as POST /quotes does, with the deprecation headers and nothing moved', async () => {
    const { p, customerId, usd, usdOut, eurOut } = await world(10_000);
    const refused = await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut }, amount: 10_001 });
    expect(expectEnvelope(refused, 400, 'AMOUNT_OUT_OF_RANGE').details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE' });
    expectDeprecated(refused);
    const unknown = await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: 'ExternalAccount:019542f5-b3e7-1d02-0000-000000000001' }, amount: 100 });
    expectEnvelope(unknown, 404, 'REFERENCE_NOT_FOUND');
    expectDeprecated(unknown);
    // Upstream's shape leaves `amount` optional without saying what its absence means: Corridor requires it.
    const missing = expectEnvelope(await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut } }), 400, 'INVALID_INPUT');
    expect(JSON.stringify(missing.details)).toContain('amount');
    // Asked before anything is read, rates included: a production deployment that cannot price
    // (no rate provider here, 503 for a priced request) still answers the missing amount 400.
    const production = await ctx.newPlatform('production');
    for (const [path, source, destination] of [['/transfer-out', usd, usdOut], ['/transfer-in', usdOut, usd]] as const) {
      const unpriced = expectEnvelope(await call(production, 'POST', path, { source: { accountId: source }, destination: { accountId: destination } }), 400, 'INVALID_INPUT');
      expect(JSON.stringify(unpriced.details)).toContain('amount');
    }
    // The source must be internal and the destination external (the ids say which).
    const swapped = await call(p, 'POST', '/transfer-out', { source: { accountId: usdOut }, destination: { accountId: usd }, amount: 100 });
    expectEnvelope(swapped, 400, 'INVALID_INPUT');
    expectDeprecated(swapped);
    // One currency: a cross-currency payment belongs to POST /quotes.
    const crossCurrency = expectEnvelope(await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: eurOut }, amount: 5_000 }), 400, 'INVALID_CURRENCY');
    expect(crossCurrency.details).toMatchObject({ sendingCurrency: 'USD', receivingCurrency: 'EUR' });
    expect(await balance(p, customerId)).toEqual({ available: 10_000, total: 10_000 });
    const quotes = await ctx.handle.db.selectFrom('quotes').select('id').where('customer_id', 'is not', null).where('sending_currency', '=', 'USD').where('receiving_currency', '=', 'EUR').execute();
    expect(quotes).toEqual([]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('at the edges of the fee: an amount the fee takes whole is INVALID_AMOUNT naming `amount`; one minor unit more sends one', async () => {
    const { p, customerId, usd, usdOut } = await world(10_000);
    // Nothing is no amount: 0 is the request's own 400, before the quote path is asked.
    const zero = expectEnvelope(await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut }, amount: 0 }), 400, 'INVALID_INPUT');
    expect((zero.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field)).toEqual(['amount']);
    // USD on ACH (the account's first rail) costs 25.
    for (const amount of [1, 25]) {
      const refused = await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut }, amount });
      expect(expectEnvelope(refused, 400, 'INVALID_AMOUNT').details).toEqual({ amount });
      expectDeprecated(refused);
    }
    expect(await balance(p, customerId)).toEqual({ available: 10_000, total: 10_000 });
    const sent = await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut }, amount: 26 });
    expect(sent.statusCode, sent.body).toBe(201);
    expect(sent.json()).toMatchObject({ sentAmount: { amount: 1 }, receivedAmount: { amount: 1 }, fees: 25 });
    expect(await balance(p, customerId)).toEqual({ available: 10_000 - 26, total: 10_000 });
    // The whole balance, to the last unit: held at once; one more is the balance's refusal.
    expectEnvelope(await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut }, amount: 10_000 - 26 + 1 }), 400, 'AMOUNT_OUT_OF_RANGE');
    expect((await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: usdOut }, amount: 10_000 - 26 })).statusCode).toBe(201);
    expect(await balance(p, customerId)).toEqual({ available: 0, total: 10_000 });
    await drainJobs(ctx);
    expect(await balance(p, customerId)).toEqual({ available: 0, total: 0 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('ends a payment in flight to an account deleted meanwhile as the account’s sandbox suffix says', async () => {
    const { p, customerId, usd } = await world(10_000);
    // Suffix 004 on a transfer: FAILED ACCOUNT_CANNOT_RECEIVE at the settlement time.
    const rejecting = await externalAccount(p, 'USD_ACCOUNT', {}, { accountNumber: '55512345004' });
    const created = await call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: rejecting, paymentRail: 'RTP' }, amount: 1_000 });
    expect(created.statusCode, created.body).toBe(201);
    expect((await call(p, 'DELETE', `/platform/external-accounts/${rejecting}`)).statusCode).toBe(204);
    await drainJobs(ctx);
    ctx.clock.advance(60_000);
    await drainJobs(ctx);
    const transaction = (await call(p, 'GET', `/transactions/${(created.json() as { id: string }).id}`)).json() as Body;
    expect(transaction).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE' });
    expect(await balance(p, customerId)).toEqual({ available: 10_000, total: 10_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('POST /transfer-in (deprecated)', () => {
  it('pulls from a first-party external account into the customer’s internal account', async () => {
    const { p, customerId, usd } = await world(0);
    const pullable = await externalAccount(p, 'USD_ACCOUNT', { ownershipType: 'FIRST_PARTY' }, { accountNumber: '98765432101' });
    const created = await call(p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId: usd }, amount: 7_500 }, { 'idempotency-key': 'in-1' });
    expect(created.statusCode, created.body).toBe(201);
    expectDeprecated(created);
    const transaction = created.json() as Body & { id: string };
    // Money entering the customer's internal account: an INCOMING credit (upstream's IncomingTransaction). A book transfer: no rail, no fee.
    expect(transaction).toMatchObject({
      type: 'INCOMING',
      direction: 'CREDIT',
      status: 'PENDING',
      customerId,
      source: { sourceType: 'ACCOUNT', accountId: pullable },
      destination: { destinationType: 'ACCOUNT', accountId: usd },
      sentAmount: { amount: 7_500 },
      receivedAmount: { amount: 7_500 },
      fees: 0,
    });
    await drainJobs(ctx);
    expect((await call(p, 'GET', `/transactions/${transaction.id}`)).json()).toMatchObject({ type: 'INCOMING', status: 'COMPLETED' });
    expect(((await call(p, 'GET', `/transactions?type=INCOMING&customerId=${customerId}`)).json() as { data: Body[] }).data.map((t) => t.id)).toEqual([transaction.id]);
    expect(await balance(p, customerId)).toEqual({ available: 7_500, total: 7_500 });
    // Announced as an incoming payment (upstream has no INCOMING_PAYMENT.PROCESSING), each payload valid.
    expect(await eventTypes(ctx, transaction.id)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.COMPLETED']);
    const catalogue = eventCatalogue();
    for (const event of await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('resource_id', '=', transaction.id).execute()) {
      expect(catalogue.validate(event.type, event.data), event.type).toMatchObject({ valid: true });
    }
    await expectLedgerConsistent(ctx.handle.db);

    const replay = await call(p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId: usd }, amount: 7_500 }, { 'idempotency-key': 'in-1' });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect((replay.json() as Body).id).toBe(transaction.id);
    expect(await balance(p, customerId)).toEqual({ available: 7_500, total: 7_500 });

    // An external account nothing can be pulled from (third-party) is refused by the quote path.
    const thirdParty = await externalAccount(p, 'USD_ACCOUNT', {}, { accountNumber: '98765432102' });
    const refused = await call(p, 'POST', '/transfer-in', { source: { accountId: thirdParty }, destination: { accountId: usd }, amount: 100 });
    expectEnvelope(refused, 400, 'INVALID_INPUT');
    expectDeprecated(refused);
    expectEnvelope(await call(p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId: 'InternalAccount:019542f5-b3e7-1d02-0000-000000000001' }, amount: 100 }), 404, 'REFERENCE_NOT_FOUND');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it("answers 404 for another customer's external account, as the external-account paths do, and moves nothing", async () => {
    const { p, customerId, usd } = await world(0);
    const otherPlatform = await ctx.newPlatform();
    const othersOwn = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `t-${++seq}`, fullName: 'Bob Ray', endUserTermsConsent: consent() });
    const otherCustomerId = (othersOwn.json() as { id: string }).id;
    const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
    const theirs = await call(p, 'POST', '/customers/external-accounts', { ...sample, customerId: otherCustomerId, ownershipType: 'FIRST_PARTY', accountInfo: { ...sample.accountInfo, accountNumber: '98765432111' } });
    expect(theirs.statusCode, theirs.body).toBe(201);
    const refused = await call(p, 'POST', '/transfer-in', { source: { accountId: (theirs.json() as { id: string }).id }, destination: { accountId: usd }, amount: 100 });
    expectEnvelope(refused, 404, 'REFERENCE_NOT_FOUND');
    expectDeprecated(refused);
    // Another platform's account is not found either.
    const foreign = await externalAccount(otherPlatform, 'USD_ACCOUNT', { ownershipType: 'FIRST_PARTY' }, { accountNumber: '98765432112' });
    expectEnvelope(await call(p, 'POST', '/transfer-in', { source: { accountId: foreign }, destination: { accountId: usd }, amount: 100 }), 404, 'REFERENCE_NOT_FOUND');
    await drainJobs(ctx);
    expect(await balance(p, customerId)).toEqual({ available: 0, total: 0 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('the OpenAPI document', () => {
  it('marks both operations deprecated and declares Idempotency-Key', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as {
      paths: Record<string, { post: { deprecated?: boolean; parameters?: Array<{ in: string; name: string }> } }>;
    };
    for (const path of ['/transfer-in', '/transfer-out']) {
      expect(document.paths[path]!.post.deprecated, path).toBe(true);
      expect(document.paths[path]!.post.parameters!.map((p) => `${p.in}:${p.name}`), path).toContain('header:idempotency-key');
    }
    expect(document.paths['/quotes']!.post.parameters!.map((p) => `${p.in}:${p.name}`)).toContain('header:idempotency-key');
  });
});
