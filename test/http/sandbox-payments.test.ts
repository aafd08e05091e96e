import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, drainJobs, eventTypes, fundedCustomer, paymentInput, platformFundedSender, platformUsdBalances, startPayment, type Json } from '../helpers/payments.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const status = async (c: TestContext, p: Parameters<typeof call>[1], id: string) => ((await call(c, p, 'GET', `/transactions/${id}`)).json() as Json).status as string;

describe('sandbox test clock', () => {
  it('moves one platform’s time: its settlements come due, another platform’s do not, and production is refused', async () => {
    const p = await ctx.newPlatform();
    const other = await ctx.newPlatform();
    const mine = paymentInput(p, await fundedCustomer(ctx, p, 50_000), {
      destination: { destinationType: 'ACCOUNT', accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000002', paymentRail: 'ACH' },
    });
    const theirs = paymentInput(other, await fundedCustomer(ctx, other, 50_000), {
      destination: { destinationType: 'ACCOUNT', accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000003', paymentRail: 'ACH' },
    });
    await startPayment(ctx, mine);
    await startPayment(ctx, theirs);
    await drainJobs(ctx);
    expect(await status(ctx, p, mine.transactionId)).toBe('PROCESSING');

    const before = (await call(ctx, p, 'GET', '/sandbox/clock')).json() as Json;
    expect(before).toEqual({ now: ctx.clock.now().toISOString(), offsetSeconds: 0 });
    const advanced = await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 86_400 });
    expect(advanced.statusCode, advanced.body).toBe(200);
    expect(advanced.json()).toEqual({ now: new Date(ctx.clock.now().getTime() + 86_400_000).toISOString(), offsetSeconds: 86_400 });
    await drainJobs(ctx);
    const settled = (await call(ctx, p, 'GET', `/transactions/${mine.transactionId}`)).json() as Json;
    expect(settled).toMatchObject({ status: 'COMPLETED', settledAt: new Date(ctx.clock.now().getTime() + 86_400_000).toISOString() });
    expect(await status(ctx, other, theirs.transactionId)).toBe('PROCESSING');
    expect(((await call(ctx, other, 'GET', '/sandbox/clock')).json() as Json).offsetSeconds).toBe(0);

    // Offsets add up; the other platform's ACH settles only when the real day has passed.
    expect(((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 60 })).json() as Json).offsetSeconds).toBe(86_460);
    ctx.clock.advance(86_400_000);
    await drainJobs(ctx);
    expect(await status(ctx, other, theirs.transactionId)).toBe('COMPLETED');
    await expectLedgerConsistent(ctx.handle.db);

    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 0 }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: -5 }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/clock/advance', {}), 400, 'INVALID_INPUT');
    const production = await ctx.newPlatform('production');
    expectEnvelope(await call(ctx, production, 'POST', '/sandbox/clock/advance', { seconds: 10 }), 403, 'FORBIDDEN');
    expectEnvelope(await call(ctx, production, 'GET', '/sandbox/clock'), 403, 'FORBIDDEN');
  });

  it('goes at most a hundred years-long moves ahead, so the platform’s dates stay writable', async () => {
    // Repeated moves once reached year 10000, where quotes, payments and their reads were 500.
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const year = 366 * 86_400;
    for (let i = 0; i < 100; i++) expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: year })).statusCode).toBe(200);
    const refused = expectEnvelope(await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds: 1 }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'seconds', message: expect.stringContaining('must be at most 0') }] });
    expect(((await call(ctx, p, 'GET', '/sandbox/clock')).json() as Json).offsetSeconds).toBe(100 * year);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    expect(await status(ctx, p, input.transactionId)).toBe('PENDING');
    expect((await call(ctx, p, 'GET', '/transactions')).statusCode).toBe(200);
  });
});

describe('POST /sandbox/send (REALTIME_FUNDING)', () => {
  const realtime = { sourceType: 'REALTIME_FUNDING', currency: 'USD' } as const;

  it('waits for the platform’s money, then settles the payment from it', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 0);
    const input = paymentInput(p, customer, { source: realtime });
    const started = await startPayment(ctx, input);
    expect(started).toMatchObject({ status: 'PENDING', source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: customer.customerId } });
    await drainJobs(ctx);
    expect(await status(ctx, p, input.transactionId)).toBe('PENDING');

    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ id: input.transactionId, status: 'PENDING' });
    await drainJobs(ctx);
    ctx.clock.advance(5_000);
    await drainJobs(ctx);
    expect(await status(ctx, p, input.transactionId)).toBe('COMPLETED');
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'RTP', currency: 'USD' })).total).toBe(10_000n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total).toBe(-10_075n);
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 0, total: 0 });
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' }), 409, 'CONFLICT');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('fails a payment paid with another amount (FUNDING_AMOUNT_MISMATCH) and returns the money', async () => {
    const p = await ctx.newPlatform();
    const input = paymentInput(p, await fundedCustomer(ctx, p, 0), { source: realtime });
    await startPayment(ctx, input);
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD', currencyAmount: 10_000 });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total).toBe(0n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'REALTIME_FUNDING', currency: 'USD' })).total).toBe(0n);
    expect(await eventTypes(ctx, input.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('returns money paid in when a funded payment fails at the rail, and when it is cancelled', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 0);
    const failing = paymentInput(p, customer, { source: realtime, sentAmount: 10_905n, receivedAmount: 10_905n });
    await startPayment(ctx, failing);
    expect((await call(ctx, p, 'POST', '/sandbox/send', { quoteId: failing.quoteId, currencyCode: 'USD' })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect((await call(ctx, p, 'GET', `/transactions/${failing.transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_INVALID' });
    const cancelled = paymentInput(p, customer, { source: realtime });
    await startPayment(ctx, cancelled);
    expect((await call(ctx, p, 'POST', '/sandbox/send', { quoteId: cancelled.quoteId, currencyCode: 'USD' })).statusCode).toBe(200);
    expect((await call(ctx, p, 'POST', `/transactions/${cancelled.transactionId}/cancel`)).json()).toMatchObject({ status: 'FAILED', refund: { reason: 'USER_CANCELLATION' } });
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total).toBe(0n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'REALTIME_FUNDING', currency: 'USD' })).total).toBe(0n);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses what cannot be paid in', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer, { source: realtime });
    await startPayment(ctx, input);
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'EUR' }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'XXY' }), 400, 'INVALID_CURRENCY');
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD', currencyAmount: 0 }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: 'Quote:019542f5-b3e7-7d02-8000-000000000004', currencyCode: 'USD' }), 404, 'QUOTE_NOT_FOUND');
    const fromAccount = paymentInput(p, customer);
    await startPayment(ctx, fromAccount);
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: fromAccount.quoteId, currencyCode: 'USD' }), 409, 'CONFLICT');
    const production = await ctx.newPlatform('production');
    expectEnvelope(await call(ctx, production, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' }), 403, 'FORBIDDEN');
    expect(await status(ctx, p, input.transactionId)).toBe('PENDING');
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('webhook payloads', () => {
  it('every event a payment records matches its catalogue schema', async () => {
    const catalogue = eventCatalogue();
    const rows = await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('type', 'like', 'OUTGOING_PAYMENT.%').execute();
    expect(new Set(rows.map((r) => r.type))).toEqual(
      new Set(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_COMPLETED']),
    );
    for (const row of rows) expect(catalogue.validate(row.type, row.data), row.type).toMatchObject({ valid: true });
  });
});

describe('production rails', () => {
  it('refuses a production payment when no rail provider is configured, and moves nothing', async () => {
    const p = await ctx.newPlatform('production');
    const customer = await platformFundedSender(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await expect(startPayment(ctx, input)).rejects.toMatchObject({ code: 'NOT_IMPLEMENTED' });
    expectEnvelope(await call(ctx, p, 'GET', `/transactions/${input.transactionId}`), 404, 'TRANSACTION_NOT_FOUND');
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000, total: 50_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('sends production payouts through the HTTP rail provider and follows its answers', async () => {
    const seen: Array<{ path: string; body: Json; auth: string | undefined }> = [];
    const answers: Record<string, Json> = { '/rails/payouts': { status: 'ACCEPTED' }, '/rails/payouts/status': { status: 'PENDING' } };
    const server: Server = createServer(async (request: IncomingMessage, response) => {
      let text = '';
      for await (const chunk of request) text += chunk;
      seen.push({ path: request.url!, body: JSON.parse(text) as Json, auth: request.headers.authorization });
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(answers[request.url!]));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rails`;
    const prod = await createTestContext({ env: { CORRIDOR_RAILS_URL: url, CORRIDOR_RAILS_TOKEN: 'rail-secret' } });
    try {
      const p = await prod.newPlatform('production');
      const customer = await platformFundedSender(prod, p, 50_000);
      // A production amount is never a sandbox trigger: …905 settles like any other.
      const input = paymentInput(p, customer, { sentAmount: 10_905n, receivedAmount: 10_905n });
      await startPayment(prod, input);
      await drainJobs(prod);
      prod.clock.advance(5_000);
      await drainJobs(prod);
      expect(await status(prod, p, input.transactionId)).toBe('PROCESSING');
      // The deposit feed polls the same provider: look at the payouts alone.
      expect(seen.find((s) => s.path.startsWith('/rails/payouts'))).toMatchObject({ path: '/rails/payouts', auth: 'Bearer rail-secret', body: { transactionId: input.transactionId, rail: 'RTP', currency: 'USD', amount: '10905' } });
      answers['/rails/payouts/status'] = { status: 'COMPLETED' };
      prod.clock.advance(60_000);
      await drainJobs(prod);
      expect(await status(prod, p, input.transactionId)).toBe('COMPLETED');

      const returned = paymentInput(p, customer);
      answers['/rails/payouts/status'] = { status: 'FAILED', failureReason: 'PAYOUT_RETURNED' };
      await startPayment(prod, returned);
      await drainJobs(prod);
      prod.clock.advance(5_000);
      await drainJobs(prod);
      expect((await call(prod, p, 'GET', `/transactions/${returned.transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'PAYOUT_RETURNED', refund: { status: 'COMPLETED' } });
      expect(await platformUsdBalances(prod, p)).toEqual({ available: 50_000 - 10_980, total: 50_000 - 10_980 });
      await expectLedgerConsistent(prod.handle.db);
    } finally {
      await prod.close();
      server.close();
    }
    // A second application (and database) of its own: slow to start on the embedded engine.
  }, 120_000);
});
