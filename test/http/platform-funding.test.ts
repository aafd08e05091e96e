import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, expectPaymentEventsMatchCatalogue, fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';

// Issue 15: transfers of the platform's own money (no sending customer), and REALTIME_FUNDING
// money arriving (sandbox send, a production provider's deposit) or not arriving (expiry).

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const THREE_DAYS = 3 * 86_400;

async function platformUsdAccount(c: TestContext, p: TestPlatform): Promise<Json> {
  return ((await call(c, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
}

async function payee(c: TestContext, p: TestPlatform, type: 'USD_ACCOUNT' | 'EUR_ACCOUNT'): Promise<string> {
  const created = await call(c, p, 'POST', '/platform/external-accounts', validSamples(c.clock.now())[type]);
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Json).id as string;
}

const transaction = async (c: TestContext, p: TestPlatform, id: string) => (await call(c, p, 'GET', `/transactions/${id}`)).json() as Json;

describe('the platform’s own transfers (no sending customer)', () => {
  it('executes a quote from the platform’s account end to end: held at once, settled by the rail, no customer on the transaction', async () => {
    const p = await ctx.newPlatform();
    const own = await platformUsdAccount(ctx, p);
    expect((await call(ctx, p, 'POST', `/sandbox/internal-accounts/${own.id}/fund`, { amount: 100_000 })).statusCode).toBe(200);
    const eur = await payee(ctx, p, 'EUR_ACCOUNT');
    const created = await call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: own.id }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    const executed = await call(ctx, p, 'POST', `/quotes/${q.id}/execute`);
    expect(executed.statusCode, executed.body).toBe(200);
    expect((executed.json() as Json).status).toBe('PROCESSING');
    const held = await platformUsdAccount(ctx, p);
    expect({ available: held.balance.amount, total: held.totalBalance.amount }).toEqual({ available: 80_000, total: 100_000 });

    const pending = await transaction(ctx, p, q.transactionId as string);
    expect(pending).toMatchObject({ status: 'PENDING', type: 'OUTGOING', source: { sourceType: 'ACCOUNT', accountId: own.id }, quoteId: q.id });
    expect(pending).not.toHaveProperty('customerId');
    expect(pending).not.toHaveProperty('platformCustomerId');

    await drainJobs(ctx);
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: THREE_DAYS })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'COMPLETED' });
    const settled = await platformUsdAccount(ctx, p);
    expect({ available: settled.balance.amount, total: settled.totalBalance.amount }).toEqual({ available: 80_000, total: 80_000 });
    expect(((await call(ctx, p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('COMPLETED');
    expect(await eventTypes(ctx, q.transactionId as string)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    const listed = (await call(ctx, p, 'GET', `/transactions?senderAccountIdentifier=${own.id}`)).json() as { data: Json[] };
    expect(listed.data.map((t) => t.id)).toEqual([q.transactionId]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refunds the platform’s account when the rail fails the payout; refuses more than its available balance', async () => {
    const p = await ctx.newPlatform();
    const own = await platformUsdAccount(ctx, p);
    expect((await call(ctx, p, 'POST', `/sandbox/internal-accounts/${own.id}/fund`, { amount: 50_000 })).statusCode).toBe(200);
    const usd = await payee(ctx, p, 'USD_ACCOUNT');
    // RECEIVING locked in one currency: exactly 10,902 is sent, a sandbox PAYOUT_RETURNED trigger.
    const body = { source: { sourceType: 'ACCOUNT', accountId: own.id }, destination: { destinationType: 'ACCOUNT', accountId: usd }, lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 10_902, immediatelyExecute: true };
    const created = await call(ctx, p, 'POST', '/quotes', body);
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    await drainJobs(ctx);
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: THREE_DAYS })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'FAILED', failureReason: 'PAYOUT_RETURNED', refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
    const after = await platformUsdAccount(ctx, p);
    expect({ available: after.balance.amount, total: after.totalBalance.amount }).toEqual({ available: 50_000, total: 50_000 });
    expect(await eventTypes(ctx, q.transactionId as string)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);

    const tooMuch = await call(ctx, p, 'POST', '/quotes', { ...body, lockedCurrencyAmount: 60_000 });
    expect(expectEnvelope(tooMuch, 400, 'AMOUNT_OUT_OF_RANGE').details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE' });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('REALTIME_FUNDING without a customer: the platform pays in and the payment settles from that money', async () => {
    const p = await ctx.newPlatform();
    const eur = await payee(ctx, p, 'EUR_ACCOUNT');
    // An account-funded quote never executed has no payment waiting for money.
    const own = await platformUsdAccount(ctx, p);
    const fromAccount = (await call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: own.id }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 30_000 })).json() as Json;
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: fromAccount.id, currencyCode: 'USD' }), 409, 'CONFLICT');
    // A REALTIME_FUNDING quote's payment opens when it is created: no execution, no immediatelyExecute needed.
    const created = await call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 30_000 });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    expect(q.status).toBe('PENDING');
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'PENDING', source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' } });
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).not.toHaveProperty('customerId');
    await drainJobs(ctx);
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: THREE_DAYS })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'COMPLETED' });
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total).toBe(-30_000n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'REALTIME_FUNDING', currency: 'USD' })).total).toBe(0n);
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('REALTIME_FUNDING expiry (the platform’s clock)', () => {
  it('a quote nobody pays ends EXPIRED (QUOTE_EXPIRED) when the window passes; another platform’s is untouched', async () => {
    const p = await ctx.newPlatform();
    const other = await ctx.newPlatform();
    const start = async (platform: TestPlatform) => {
      const sender = await call(ctx, platform, 'POST', '/customers', {
        customerType: 'INDIVIDUAL',
        platformCustomerId: `rt-${platform.uuid.slice(0, 8)}`,
        fullName: 'Ann Lee',
        endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
      });
      expect(sender.statusCode, sender.body).toBe(201);
      const eur = await payee(ctx, platform, 'EUR_ACCOUNT');
      const created = await call(ctx, platform, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: (sender.json() as Json).id }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 });
      expect(created.statusCode, created.body).toBe(201);
      return created.json() as Json;
    };
    const mine = await start(p);
    const theirs = await start(other);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, mine.transactionId as string)).toMatchObject({ status: 'PENDING' });

    const lifetime = (Date.parse(mine.expiresAt as string) - ctx.clock.now().getTime()) / 1000;
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: lifetime - 1 })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, mine.transactionId as string)).toMatchObject({ status: 'PENDING' });
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 1 })).statusCode).toBe(200);
    await drainJobs(ctx);
    const expired = await transaction(ctx, p, mine.transactionId as string);
    expect(expired).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED' });
    expect(expired).not.toHaveProperty('refund');
    expect(((await call(ctx, p, 'GET', `/quotes/${mine.id}`)).json() as Json).status).toBe('EXPIRED');
    expect(await eventTypes(ctx, mine.transactionId as string)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED']);
    const catalogue = eventCatalogue();
    const event = await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('resource_id', '=', mine.transactionId as string).where('type', '=', 'OUTGOING_PAYMENT.EXPIRED').executeTakeFirstOrThrow();
    expect(catalogue.validate(event.type, event.data)).toMatchObject({ valid: true });
    // Money that comes too late is not taken: the same answer as before the expiry was recorded.
    const late = expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: mine.id, currencyCode: 'USD' }), 409, 'CONFLICT');
    expect(late.details).toEqual({ reason: 'QUOTE_EXPIRED', quoteId: mine.id, transactionId: mine.transactionId });
    expect(await transaction(ctx, other, theirs.transactionId as string)).toMatchObject({ status: 'PENDING' });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('money sent after expiresAt is refused even before the expiry job has run (the platform’s clock), and the payment still expires', async () => {
    const p = await ctx.newPlatform();
    const eur = await payee(ctx, p, 'EUR_ACCOUNT');
    const q = (await call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 })).json() as Json;
    const lifetime = (Date.parse(q.expiresAt as string) - ctx.clock.now().getTime()) / 1000;
    // The clock moves, but no job runs in between: the transaction is still PENDING when the money comes.
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: lifetime })).statusCode).toBe(200);
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'PENDING' });
    const late = expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USD' }), 409, 'CONFLICT');
    expect(late.details).toEqual({ reason: 'QUOTE_EXPIRED', quoteId: q.id, transactionId: q.transactionId });
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total).toBe(0n);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED' });
    expect(((await call(ctx, p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('EXPIRED');
    expect(await eventTypes(ctx, q.transactionId as string)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED']);
    // Executing it is no way around: a REALTIME_FUNDING quote is never executed.
    expectEnvelope(await call(ctx, p, 'POST', `/quotes/${q.id}/execute`), 400, 'INVALID_INPUT');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a funded payment does not expire', async () => {
    const p = await ctx.newPlatform();
    const eur = await payee(ctx, p, 'EUR_ACCOUNT');
    const q = (await call(ctx, p, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 })).json() as Json;
    expect((await call(ctx, p, 'POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USD' })).statusCode).toBe(200);
    expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 600 })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect(await transaction(ctx, p, q.transactionId as string)).toMatchObject({ status: 'PROCESSING' });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('REALTIME_FUNDING on production: deposits reported by the rail provider', () => {
  it('funds the payment with the deposit the provider reports, fails and returns a wrong amount, expires an unpaid one', async () => {
    const seen: Array<{ path: string; body: Json; auth: string | undefined }> = [];
    const deposits: Record<string, Json> = {};
    const server: Server = createServer(async (request: IncomingMessage, response) => {
      let text = '';
      for await (const chunk of request) text += chunk;
      const body = JSON.parse(text) as Json;
      seen.push({ path: request.url!, body, auth: request.headers.authorization });
      if (request.url === '/rails/deposits/return' && body.reference === 'CDRBOUNCE00000E') {
        response.statusCode = 500;
        response.end();
        return;
      }
      const answers: Record<string, Json> = {
        '/rails/payouts': { status: 'ACCEPTED' },
        '/rails/payouts/status': { status: 'COMPLETED' },
        '/rails/deposits/status': deposits[body.reference as string] ?? { status: 'PENDING' },
        '/rails/deposits/return': { status: 'RETURNED' },
        // Any rate will do (USD, the base, at 1): the quote below only needs production rates to exist.
        '/rates': { asOf: new Date().toISOString(), rates: Object.fromEntries(((body.currencies as string[] | undefined) ?? []).map((c) => [c, c === 'USD' ? '1' : '0.92'])) },
      };
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(answers[request.url!]));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const url = `${base}/rails`;
    const prod = await createTestContext({ env: { CORRIDOR_RAILS_URL: url, CORRIDOR_RAILS_TOKEN: 'rail-secret', CORRIDOR_RATES_URL: `${base}/rates` } });
    try {
      const p = await prod.newPlatform('production');
      const customer = await fundedCustomer(prod, p, 0);
      const deadline = new Date(prod.clock.now().getTime() + 60_000);
      const realtime = (reference: string, extra: Parameters<typeof paymentInput>[2] = {}) =>
        paymentInput(p, customer, {
          source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' },
          paymentInstructions: [
            {
              isPlatformAccount: true,
              accountOrWalletInfo: { accountType: 'USD_ACCOUNT', accountNumber: '1234567890', routingNumber: '260073990', paymentRails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'], reference },
            },
          ],
          fundingDeadline: deadline,
          ...extra,
        });
      const paid = realtime('CDRPAID0000000A');
      const short = realtime('CDRSHORT000000B');
      const unpaid = realtime('CDRUNPAID00000C');
      // A provider that answers outside the contract cannot say whether the money came: the payment waits, even past its deadline.
      const unknown = realtime('CDRUNKNOWN0000D');
      deposits.CDRUNKNOWN0000D = { status: 'MAYBE' };
      for (const input of [paid, short, unpaid, unknown]) await startPayment(prod, input);
      await drainJobs(prod);
      expect(seen.filter((s) => s.path === '/rails/deposits/status').map((s) => s.body.reference).sort()).toEqual(['CDRPAID0000000A', 'CDRSHORT000000B', 'CDRUNKNOWN0000D', 'CDRUNPAID00000C']);
      expect(seen.find((s) => s.body.transactionId === paid.transactionId)).toMatchObject({ auth: 'Bearer rail-secret', body: { quoteId: paid.quoteId, currency: 'USD', amount: '10075' } });
      for (const input of [paid, short, unpaid]) expect(await transaction(prod, p, input.transactionId)).toMatchObject({ status: 'PENDING' });

      deposits.CDRPAID0000000A = { status: 'RECEIVED', amount: '10075', receivedAt: prod.clock.now().toISOString() };
      deposits.CDRSHORT000000B = { status: 'RECEIVED', amount: '10000', receivedAt: prod.clock.now().toISOString() };
      prod.clock.advance(10_000);
      await drainJobs(prod);
      // Funded, held and handed to the rail; RTP settles 5 s after the money arrived.
      const funded = await transaction(prod, p, paid.transactionId);
      expect(funded).toMatchObject({ status: 'PROCESSING', expectedSettlementAt: new Date(prod.clock.now().getTime() + 5_000).toISOString() });
      expect(await transaction(prod, p, short.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
      expect(seen.filter((s) => s.path === '/rails/deposits/return').map((s) => s.body)).toEqual([expect.objectContaining({ transactionId: short.transactionId, reference: 'CDRSHORT000000B', amount: '10000' })]);
      // The money is back with the payer once the provider has sent it: REFUND_PENDING, then REFUND_COMPLETED.
      expect(await eventTypes(prod, short.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
      expect(await transaction(prod, p, unpaid.transactionId)).toMatchObject({ status: 'PENDING' });

      prod.clock.advance(60_000);
      await drainJobs(prod);
      expect(await transaction(prod, p, paid.transactionId)).toMatchObject({ status: 'COMPLETED' });
      expect(await transaction(prod, p, unpaid.transactionId)).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED' });
      expect(await eventTypes(prod, unpaid.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED']);
      expect(await transaction(prod, p, unknown.transactionId)).toMatchObject({ status: 'PENDING' });
      deposits.CDRUNKNOWN0000D = { status: 'PENDING' };
      prod.clock.advance(3_600_000);
      await drainJobs(prod);
      expect(await transaction(prod, p, unknown.transactionId)).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED' });
      // The deposits came from Corridor's collection account and left on the payout rail, or went back.
      expect((await accountBalance(prod.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'COLLECTION', currency: 'USD' })).total).toBe(-10_075n);
      expect((await accountBalance(prod.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'REALTIME_FUNDING', currency: 'USD' })).total).toBe(0n);
      await expectLedgerConsistent(prod.handle.db);

      // Through POST /quotes: creating the quote starts the deposit polling (no execution), and the reported deposit pays it.
      const eur = await payee(prod, p, 'EUR_ACCOUNT');
      const created = await call(prod, p, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 });
      expect(created.statusCode, created.body).toBe(201);
      const q = created.json() as Json;
      expect(q.status).toBe('PENDING');
      const reference = (q.paymentInstructions as Array<{ accountOrWalletInfo: Json }>)[0]!.accountOrWalletInfo.reference as string;
      await drainJobs(prod);
      expect(seen.filter((s) => s.path === '/rails/deposits/status' && s.body.quoteId === q.id).map((s) => s.body)).toEqual([expect.objectContaining({ reference, amount: '20000' })]);
      expectEnvelope(await call(prod, p, 'POST', `/quotes/${q.id}/execute`), 400, 'INVALID_INPUT');
      deposits[reference] = { status: 'RECEIVED', amount: '20000', receivedAt: prod.clock.now().toISOString() };
      prod.clock.advance(10_000);
      await drainJobs(prod);
      expect(await transaction(prod, p, q.transactionId as string)).toMatchObject({ status: 'PROCESSING' });
      expect(((await call(prod, p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('PROCESSING');
      await expectLedgerConsistent(prod.handle.db);

      // A deposit the provider cannot send back: retried for about two days, then the refund is FAILED.
      const bounced = realtime('CDRBOUNCE00000E', { fundingDeadline: new Date(prod.clock.now().getTime() + 60_000) });
      await startPayment(prod, bounced);
      deposits.CDRBOUNCE00000E = { status: 'RECEIVED', amount: '1', receivedAt: prod.clock.now().toISOString() };
      prod.clock.advance(10_000);
      await drainJobs(prod);
      expect(await transaction(prod, p, bounced.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'PENDING' } });
      for (let hour = 0; hour < 100; hour++) {
        prod.clock.advance(3_600_000);
        await drainJobs(prod);
      }
      expect(seen.filter((s) => s.path === '/rails/deposits/return' && s.body.reference === 'CDRBOUNCE00000E')).toHaveLength(48);
      expect(await transaction(prod, p, bounced.transactionId)).toMatchObject({ status: 'FAILED', refund: { status: 'FAILED' } });
      expect((await eventTypes(prod, bounced.transactionId)).slice(-2)).toEqual(['OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_FAILED']);
      // Their payloads, like every payment event of this platform, match the catalogue.
      expect([...(await expectPaymentEventsMatchCatalogue(prod))]).toEqual(expect.arrayContaining(['OUTGOING_PAYMENT.REFUND_PENDING', 'OUTGOING_PAYMENT.REFUND_COMPLETED', 'OUTGOING_PAYMENT.REFUND_FAILED']));
      await expectLedgerConsistent(prod.handle.db);
    } finally {
      await prod.close();
      server.close();
    }
  }, 120_000);
});
