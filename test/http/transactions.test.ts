import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { IllegalTransition, SANDBOX_TRIGGERS } from '../../src/modules/transactions/index.js';
import { assertTransition } from '../../src/modules/transactions/status.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, drainJobs, eventTypes, fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('an outgoing payment from an internal account', () => {
  it('holds the total at once, debits it when handed to the rail, and completes at the rail’s settlement time', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    const started = await startPayment(ctx, input);
    expect(started).toMatchObject({
      id: input.transactionId,
      type: 'OUTGOING',
      direction: 'DEBIT',
      status: 'PENDING',
      quoteId: input.quoteId,
      customerId: customer.customerId,
      platformCustomerId: customer.platformCustomerId,
      source: { sourceType: 'ACCOUNT', accountId: customer.accountId, currency: 'USD' },
      sentAmount: { amount: 10_000, currency: { code: 'USD', decimals: 2 } },
      receivedAmount: { amount: 10_000, currency: { code: 'USD' } },
      fees: 75,
      platformFees: 25,
      exchangeRate: 1,
      paymentRail: 'RTP',
      settlementTimelineSeconds: 5,
      description: 'Invoice 42',
    });
    // Held: available drops by the total, total balance does not.
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 50_000 - 10_075, total: 50_000 });
    await expectLedgerConsistent(ctx.handle.db);

    const got = await call(ctx, p, 'GET', `/transactions/${input.transactionId}`);
    expect(got.statusCode, got.body).toBe(200);
    expect(got.json()).toEqual(started);

    await drainJobs(ctx);
    const processing = (await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json;
    expect(processing.status).toBe('PROCESSING');
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 39_925, total: 39_925 });
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'RTP', currency: 'USD' })).total).toBe(10_000n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'PLATFORM_FEES', currency: 'USD' })).total).toBe(25n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SERVICE_FEES', currency: 'USD' })).total).toBe(50n);
    await expectLedgerConsistent(ctx.handle.db);

    // Not yet due by the platform's clock: nothing changes.
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('PROCESSING');
    ctx.clock.advance(5_000);
    await drainJobs(ctx);
    const completed = (await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json;
    expect(completed).toMatchObject({ status: 'COMPLETED', settledAt: ctx.clock.now().toISOString() });
    expect(completed.failureReason).toBeUndefined();
    expect(completed.refund).toBeUndefined();
    expect(await eventTypes(ctx, input.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    const lastEvent = await ctx.handle.db.selectFrom('events').select('data').where('resource_id', '=', input.transactionId).orderBy('id', 'desc').executeTakeFirstOrThrow();
    expect(lastEvent.data).toEqual(completed);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('converts across currencies through per-currency FX accounts, so each currency balances', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 20_000);
    const input = paymentInput(p, customer, {
      receivingCurrency: 'EUR',
      receivedAmount: 9_200n,
      exchangeRate: '0.92',
      destination: { destinationType: 'ACCOUNT', accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000001', paymentRail: 'SEPA_INSTANT' },
    });
    const started = await startPayment(ctx, input);
    expect(started).toMatchObject({ receivedAmount: { amount: 9_200, currency: { code: 'EUR' } }, exchangeRate: 0.92, paymentRail: 'SEPA_INSTANT' });
    await drainJobs(ctx);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'FX', currency: 'USD' })).total).toBe(10_000n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'FX', currency: 'EUR' })).total).toBe(-9_200n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'SEPA_INSTANT', currency: 'EUR' })).total).toBe(9_200n);
    ctx.clock.advance(10_000);
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('COMPLETED');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('pays a crypto wallet on its network, and another internal account by book transfer', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const payee = await fundedCustomer(ctx, p, 0);
    const toWallet = paymentInput(p, customer, {
      receivingCurrency: 'USDC',
      receivedAmount: 9_990_000n,
      exchangeRate: '999',
      destination: { destinationType: 'ACCOUNT', accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000006', paymentRail: 'SOLANA' },
    });
    expect(await startPayment(ctx, toWallet)).toMatchObject({ paymentRail: null, settlementTimelineSeconds: 30 });
    const book = paymentInput(p, customer, { fees: 0n, platformFees: 0n, destination: { destinationType: 'ACCOUNT', accountId: payee.accountId, paymentRail: 'BOOK' } });
    expect(await startPayment(ctx, book)).toMatchObject({ paymentRail: null, settlementTimelineSeconds: 0 });
    await drainJobs(ctx);
    const bookView = await call(ctx, p, 'GET', `/transactions/${book.transactionId}`);
    expect((bookView.json() as Json).status, bookView.body).toBe('COMPLETED');
    expect(await balances(ctx, p, payee.customerId)).toEqual({ available: 10_000, total: 10_000 });
    expect(((await call(ctx, p, 'GET', `/transactions/${toWallet.transactionId}`)).json() as Json).status).toBe('PROCESSING');
    ctx.clock.advance(30_000);
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${toWallet.transactionId}`)).json() as Json).status).toBe('COMPLETED');
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'SOLANA', currency: 'USDC' })).total).toBe(9_990_000n);
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 50_000 - 10_075 - 10_000, total: 50_000 - 10_075 - 10_000 });
    await expect(startPayment(ctx, paymentInput(p, customer, { destination: { destinationType: 'ACCOUNT', accountId: payee.accountId, paymentRail: 'SEPA' } }))).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses a payment above the available balance and writes nothing', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 10_000);
    const input = paymentInput(p, customer);
    await expect(startPayment(ctx, input)).rejects.toMatchObject({ code: 'AMOUNT_OUT_OF_RANGE', details: { reason: 'INSUFFICIENT_BALANCE' } });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 10_000, total: 10_000 });
    expectEnvelope(await call(ctx, p, 'GET', `/transactions/${input.transactionId}`), 404, 'TRANSACTION_NOT_FOUND');
    expect(await eventTypes(ctx, input.transactionId)).toEqual([]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('executes a quote once: a second transaction for the same quote is refused', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    await expect(startPayment(ctx, { ...input, transactionId: paymentInput(p, customer).transactionId })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 39_925, total: 50_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('records an expired quote’s execution as EXPIRED (QUOTE_EXPIRED) and moves nothing', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    const expired = await withTx(ctx.handle.db, (trx) => ctx.app.payments.recordExpiredPayment(trx, input));
    expect(expired).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED' });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 50_000, total: 50_000 });
    expect(await eventTypes(ctx, input.transactionId)).toEqual(['OUTGOING_PAYMENT.EXPIRED']);
    // Its webhook payload matches the catalogue's schema.
    const event = await ctx.handle.db.selectFrom('events').select('data').where('resource_id', '=', input.transactionId).executeTakeFirstOrThrow();
    expect(eventCatalogue().validate('OUTGOING_PAYMENT.EXPIRED', event.data)).toMatchObject({ valid: true });
    const statuses = await ctx.app.payments.transactionStatusesByQuote(ctx.handle.db, p.uuid, [input.quoteId, paymentInput(p, customer).quoteId]);
    expect([...statuses]).toEqual([[input.quoteId, 'EXPIRED']]);
  });
});

describe('sandbox outcomes (the last three digits of the sent amount)', () => {
  for (const [digits, trigger] of Object.entries(SANDBOX_TRIGGERS)) {
    it(`…${digits} fails ${trigger.failureReason} at ${trigger.at.toLowerCase()} and refunds the debit`, async () => {
      const p = await ctx.newPlatform();
      const customer = await fundedCustomer(ctx, p, 100_000);
      const input = paymentInput(p, customer, { sentAmount: BigInt(`12${digits}`), receivedAmount: BigInt(`12${digits}`) });
      await startPayment(ctx, input);
      await drainJobs(ctx);
      if (trigger.at === 'SETTLEMENT') {
        expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('PROCESSING');
        ctx.clock.advance(5_000);
        await drainJobs(ctx);
      }
      const failed = (await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json;
      expect(failed).toMatchObject({
        status: 'FAILED',
        failureReason: trigger.failureReason,
        refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED', reference: expect.any(String), initiatedAt: expect.any(String), settledAt: expect.any(String) },
      });
      expect(failed.settledAt).toBeUndefined();
      expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 100_000, total: 100_000 });
      expect(await eventTypes(ctx, input.transactionId)).toEqual([
        'OUTGOING_PAYMENT.PENDING',
        'OUTGOING_PAYMENT.PROCESSING',
        'OUTGOING_PAYMENT.FAILED',
        'OUTGOING_PAYMENT.REFUND_COMPLETED',
      ]);
      await expectLedgerConsistent(ctx.handle.db);
    });
  }
});

describe('cancel and confirm', () => {
  it('cancels a PENDING payment (hold released), and refuses once it was handed to the rail (409 TRANSACTION_NOT_CANCELLABLE)', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    const cancelled = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`, { reason: 'customer changed their mind' });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'COMPLETED', reason: 'USER_CANCELLATION' } });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 50_000, total: 50_000 });
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('FAILED');
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`, {}), 409, 'TRANSACTION_NOT_CANCELLABLE');

    const second = paymentInput(p, customer);
    await startPayment(ctx, second);
    await drainJobs(ctx);
    const refused = expectEnvelope(await call(ctx, p, 'POST', `/transactions/${second.transactionId}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    expect(refused.details).toEqual({ status: 'PROCESSING' });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 39_925, total: 39_925 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('two cancels racing the hand-over to the rail: at most one wins, and the money moves once', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 100_000);
    for (let i = 0; i < 4; i++) {
      const input = paymentInput(p, customer);
      await startPayment(ctx, input);
      const [a, b] = await Promise.all([
        call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`),
        call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`),
        ctx.jobs.runDue(50),
      ]);
      const status = ((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status as string;
      // Cancelled (one 200, one 409) or handed over first (both 409, PROCESSING).
      expect([a.statusCode, b.statusCode].sort()).toEqual(status === 'FAILED' ? [200, 409] : [409, 409]);
      await drainJobs(ctx);
    }
    // Every payment not cancelled was debited (PROCESSING or COMPLETED by now).
    const cancelled = ((await call(ctx, p, 'GET', `/transactions?customerId=${customer.customerId}&status=FAILED`)).json() as { data: Json[] }).data.length;
    const paid = 4 - cancelled;
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 100_000 - paid * 10_075, total: 100_000 - paid * 10_075 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('records the receipt delivery, and a repeat’s time in place of the earlier one', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    const confirmed = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`);
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect((confirmed.json() as Json).receiptDeliveryConfirmedAt).toBe(ctx.clock.now().toISOString());
    ctx.clock.advance(1_000);
    // An earlier instant, written with another offset: recorded as that instant.
    const earlier = new Date(ctx.clock.now().getTime() - 500);
    const writtenAtPlusTwo = new Date(earlier.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    const given = (await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`, { receiptDeliveryConfirmedAt: writtenAtPlusTwo })).json() as Json;
    expect(given.receiptDeliveryConfirmedAt).toBe(earlier.toISOString());
    const again = (await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`)).json() as Json;
    expect(again.receiptDeliveryConfirmedAt).toBe(ctx.clock.now().toISOString());
    expect((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json()).toMatchObject({ receiptDeliveryConfirmedAt: ctx.clock.now().toISOString() });
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`, { deliveredAt: '2026-01-01T08:00:00Z' }), 400, 'INVALID_INPUT');
  });

  it('refuses a receipt time before the transaction existed or ahead of the clock, and keeps the recorded one', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    const recorded = ((await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`)).json() as Json).receiptDeliveryConfirmedAt;
    const created = new Date(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).createdAt as string).getTime();
    const now = ctx.clock.now().getTime();
    for (const at of ['1970-01-01T00:00:00Z', new Date(created - 1).toISOString(), new Date(now + 5 * 60_000 + 1_000).toISOString(), '9999-12-31T23:59:59Z']) {
      const refused = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`, { receiptDeliveryConfirmedAt: at });
      expectEnvelope(refused, 400, 'INVALID_INPUT');
      expect((refused.json() as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field)).toEqual(['receiptDeliveryConfirmedAt']);
    }
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).receiptDeliveryConfirmedAt).toBe(recorded);
    const within = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/confirm`, { receiptDeliveryConfirmedAt: new Date(now + 60_000).toISOString() });
    expect(within.statusCode, within.body).toBe(200);
  });

  it('answers 404 TRANSACTION_NOT_FOUND for unknown, malformed and other platforms’ ids', async () => {
    const p = await ctx.newPlatform();
    const other = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    expectEnvelope(await call(ctx, other, 'GET', `/transactions/${input.transactionId}`), 404, 'TRANSACTION_NOT_FOUND');
    expectEnvelope(await call(ctx, other, 'POST', `/transactions/${input.transactionId}/cancel`), 404, 'TRANSACTION_NOT_FOUND');
    expectEnvelope(await call(ctx, p, 'GET', '/transactions/Transaction:019542f5-b3e7-7d02-8000-000000000009'), 404, 'TRANSACTION_NOT_FOUND');
    expectEnvelope(await call(ctx, p, 'GET', '/transactions/nonsense'), 404, 'TRANSACTION_NOT_FOUND');
  });
});

describe('approve and reject', () => {
  it('decide only an open incoming-payment question: an outgoing payment has none (409), an unknown id is 404', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${input.transactionId}/approve`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${input.transactionId}/reject`, { reason: 'no' }), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expectEnvelope(await call(ctx, p, 'POST', `/transactions/${input.transactionId}/reject`, { reason: '' }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'POST', '/transactions/Transaction:019542f5-b3e7-7d02-8000-000000000005/approve', {}), 404, 'TRANSACTION_NOT_FOUND');
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('PENDING');
  });

  it('answer an IncomingTransaction, as upstream declares, not the union of both types', () => {
    const { paths } = ctx.app.swagger() as unknown as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>> };
    for (const action of ['approve', 'reject']) {
      expect(paths[`/transactions/{transactionId}/${action}`]!.post!.responses['200']!.content['application/json']!.schema).toEqual({ $ref: '#/components/schemas/IncomingTransaction' });
    }
  });
});

describe('GET /transactions', () => {
  it('filters by every upstream filter and pages with a cursor in either order', async () => {
    const p = await ctx.newPlatform();
    const a = await fundedCustomer(ctx, p, 100_000);
    const b = await fundedCustomer(ctx, p, 100_000);
    const inputs = [paymentInput(p, a), paymentInput(p, a), paymentInput(p, b)];
    for (const input of inputs) {
      await startPayment(ctx, input);
      ctx.clock.advance(1_000);
    }
    await withTx(ctx.handle.db, (trx) => ctx.app.payments.recordExpiredPayment(trx, paymentInput(p, b)));
    const list = async (query: string) => {
      const response = await call(ctx, p, 'GET', `/transactions${query}`);
      expect(response.statusCode, response.body).toBe(200);
      return response.json() as { data: Json[]; hasMore: boolean; nextCursor?: string; totalCount?: number };
    };
    const all = await list('');
    expect(all.totalCount).toBe(4);
    // A filtered list has no totalCount: counting its matches would read every one of them.
    expect(await list('?status=EXPIRED')).not.toHaveProperty('totalCount');
    expect(all.data.map((t) => t.id).slice(1)).toEqual(inputs.map((i) => i.transactionId).reverse());
    expect((await list(`?customerId=${a.customerId}`)).data.map((t) => t.id)).toEqual([inputs[1]!.transactionId, inputs[0]!.transactionId]);
    expect((await list(`?platformCustomerId=${b.platformCustomerId}`)).data).toHaveLength(2);
    expect((await list('?status=EXPIRED')).data).toHaveLength(1);
    expect((await list('?type=OUTGOING')).data).toHaveLength(4);
    expect((await list('?type=INCOMING')).data).toHaveLength(0);
    expect((await list(`?senderAccountIdentifier=${a.accountId}`)).data).toHaveLength(2);
    const dest = (inputs[2]!.destination as { accountId: string }).accountId;
    expect((await list(`?receiverAccountIdentifier=${dest}`)).data.map((t) => t.id)).toEqual([inputs[2]!.transactionId]);
    expect((await list(`?accountIdentifier=${dest}`)).data).toHaveLength(1);
    expect((await list(`?accountIdentifier=${b.accountId}`)).data).toHaveLength(2);
    const reference = (all.data[1]!.reconciliationInstructions as Json).reference as string;
    expect((await list(`?reference=${reference}`)).data.map((t) => t.id)).toEqual([all.data[1]!.id]);
    const start = all.data[1]!.createdAt as string;
    expect((await list(`?startDate=${encodeURIComponent(start)}`)).data).toHaveLength(2);
    expect((await list(`?endDate=${encodeURIComponent(start)}`)).data).toHaveLength(3);

    const first = await list('?limit=3&sortOrder=asc');
    expect(first.data.map((t) => t.id)).toEqual(inputs.map((i) => i.transactionId));
    expect(first.hasMore).toBe(true);
    const rest = await list(`?limit=3&sortOrder=asc&cursor=${first.nextCursor}`);
    expect(rest.data.map((t) => t.id)).toEqual([all.data[0]!.id]);
    expect(rest.hasMore).toBe(false);
    const desc = await list('?limit=2');
    const desc2 = await list(`?limit=2&cursor=${desc.nextCursor}`);
    expect([...desc.data, ...desc2.data].map((t) => t.id)).toEqual(all.data.map((t) => t.id));

    expectEnvelope(await call(ctx, p, 'GET', '/transactions?sortOrder=sideways'), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'GET', '/transactions?cursor=nope'), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'GET', '/transactions?status=LOST'), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'GET', '/transactions?startDate=yesterday'), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx, p, 'GET', '/transactions?customerId=Token:019542f5-b3e7-1d02-0000-000000000001'), 400, 'INVALID_INPUT');

    // The platform's own id as customerId lists the transfers it made on its own behalf (upstream's
    // listTransactions); another platform's id lists nothing.
    const { customerId: _customer, ...ownTransfer } = paymentInput(p, a);
    await withTx(ctx.handle.db, (trx) => ctx.app.payments.recordExpiredPayment(trx, ownTransfer));
    expect((await list(`?customerId=${p.id}`)).data.map((t) => t.id)).toEqual([ownTransfer.transactionId]);
    expect((await list(`?customerId=${p.id}&status=COMPLETED`)).data).toEqual([]);
    expect((await list(`?customerId=${(await ctx.newPlatform()).id}`)).data).toEqual([]);
    expect((await list(`?customerId=${a.customerId}`)).data).toHaveLength(2);
  });
});

describe('failure reasons', () => {
  it('never offers or stores a reason spec §9.4 removed', async () => {
    const removed = ['EXECUTION_FAILED_POST_DEBIT', 'SETTLEMENT_FAILED', 'TIMEOUT', 'MANUAL_REFUND'];
    // Every failureReason the API documents (responses and webhook payloads).
    const enums: string[][] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'failureReason' && Array.isArray((value as { enum?: unknown }).enum)) enums.push((value as { enum: string[] }).enum);
          walk(value);
        }
      }
    };
    walk((await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json());
    expect(enums.length).toBeGreaterThan(0);
    for (const values of enums) for (const reason of removed) expect(values).not.toContain(reason);
    const p = await ctx.newPlatform();
    const input = paymentInput(p, await fundedCustomer(ctx, p, 50_000));
    await startPayment(ctx, input);
    await expect(
      ctx.handle.db.updateTable('transactions').set({ status: 'FAILED', failure_reason: 'SETTLEMENT_FAILED' }).where('platform_id', '=', p.uuid).execute(),
    ).rejects.toThrow(/check/i);
  });
});

describe('the status machine', () => {
  it('allows only its edges; anything else throws', () => {
    expect(() => assertTransition('OUTGOING', 'PENDING', 'PROCESSING')).not.toThrow();
    expect(() => assertTransition('OUTGOING', 'PROCESSING', 'COMPLETED')).not.toThrow();
    expect(() => assertTransition('OUTGOING', 'COMPLETED', 'FAILED')).toThrow(IllegalTransition);
    expect(() => assertTransition('OUTGOING', 'FAILED', 'PROCESSING')).toThrow(IllegalTransition);
    expect(() => assertTransition('OUTGOING', 'PENDING', 'COMPLETED')).toThrow(IllegalTransition);
    expect(() => assertTransition('OUTGOING', null, 'PROCESSING')).toThrow(IllegalTransition);
    expect(() => assertTransition('OUTGOING', 'EXPIRED', 'PENDING')).toThrow(IllegalTransition);
  });
});
