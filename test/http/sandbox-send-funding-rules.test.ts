import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';

/**
 * POST /sandbox/send pays a REALTIME_FUNDING payment in exactly once and with exactly the
 * expected amount (transactions README, REALTIME_FUNDING): a second send while the funded
 * payment still waits for its hand-over is refused, and more money than expected is sent back
 * as less is.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const realtime = { sourceType: 'REALTIME_FUNDING', currency: 'USD' } as const;
const sandboxFunding = async (platformId: string) => (await accountBalance(ctx.handle.db, platformId, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total;

describe('POST /sandbox/send', () => {
  it('a second send before the funded payment is handed over: 409, the money paid in once', async () => {
    const p = await ctx.newPlatform();
    const input = paymentInput(p, await fundedCustomer(ctx, p, 0), { source: realtime });
    await startPayment(ctx, input);
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ status: 'PENDING' });
    // No job has run: the payment is PENDING, funded and held.
    expectEnvelope(await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' }), 409, 'CONFLICT');
    expect(await sandboxFunding(p.uuid)).toBe(-10_075n);
    await drainJobs(ctx);
    ctx.clock.advance(5_000);
    await drainJobs(ctx);
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('COMPLETED');
    expect(await sandboxFunding(p.uuid)).toBe(-10_075n);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('more than the expected amount: FAILED FUNDING_AMOUNT_MISMATCH and the money returned, nothing held', async () => {
    const p = await ctx.newPlatform();
    const input = paymentInput(p, await fundedCustomer(ctx, p, 0), { source: realtime });
    await startPayment(ctx, input);
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD', currencyAmount: 10_076 });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'COMPLETED' } });
    expect(await sandboxFunding(p.uuid)).toBe(0n);
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail: 'REALTIME_FUNDING', currency: 'USD' })).total).toBe(0n);
    expect(await eventTypes(ctx, input.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_COMPLETED']);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
