import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountsLedger } from '../../src/modules/internal-accounts/index.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { Payments, SandboxRails } from '../../src/modules/transactions/index.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { OffsetPlatformClock } from '../../src/platform/platform-clock.js';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, eventTypes, fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';

/** Payments under real concurrency on PostgreSQL: racing executions, cancels and settlement workers. */
describe.runIf(onPostgres)('payments on PostgreSQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('concurrent executions of one quote: one transaction, one hold', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => startPayment(ctx, { ...input, transactionId: i === 0 ? input.transactionId : paymentInput(p, customer).transactionId })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CONFLICT' });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 39_925, total: 50_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('concurrent payments that together overdraw an account: the balance never goes below zero', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 35_000);
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => startPayment(ctx, paymentInput(p, customer))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'AMOUNT_OUT_OF_RANGE' });
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: 35_000 - 3 * 10_075, total: 35_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('two settlement workers racing over the same jobs, and cancels racing the hand-over: every payment ends once', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 1_000_000);
    const inputs = Array.from({ length: 20 }, (_, i) => paymentInput(p, customer, i % 4 === 0 ? { sentAmount: 10_902n, receivedAmount: 10_902n } : {}));
    for (const input of inputs) await startPayment(ctx, input);
    // A second process: its own worker and Payments on the same database.
    const otherWorker = new JobWorker(ctx.handle.db, ctx.clock, pino({ level: 'silent' }));
    new Payments({
      db: ctx.handle.db,
      clock: ctx.clock,
      platformClock: new OffsetPlatformClock(ctx.handle.db, ctx.clock),
      ledger: createAccountsLedger(ctx.clock),
      jobs: otherWorker,
      logger: pino({ level: 'silent' }),
      rails: { sandbox: new SandboxRails(async () => null) }, // no account outcomes: these payments go to made-up account ids
    });
    const drainBoth = async () => {
      for (let i = 0; i < 20; i++) {
        const [a, b] = await Promise.all([ctx.jobs.runDue(7), otherWorker.runDue(7)]);
        if (a + b === 0) return;
      }
    };
    const cancels = inputs.filter((_, i) => i % 3 === 0).map((input) => call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`));
    const [responses] = await Promise.all([Promise.all(cancels), drainBoth()]);
    expect(responses.every((r) => r.statusCode === 200 || r.statusCode === 409)).toBe(true);
    ctx.clock.advance(5_000);
    await drainBoth();

    let expected = 1_000_000;
    for (const input of inputs) {
      const tx = (await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json;
      const types = await eventTypes(ctx, input.transactionId);
      expect(['COMPLETED', 'FAILED']).toContain(tx.status);
      expect(types.filter((t) => t === 'OUTGOING_PAYMENT.COMPLETED' || t === 'OUTGOING_PAYMENT.FAILED')).toHaveLength(1);
      expect(types.filter((t) => t === 'OUTGOING_PAYMENT.PROCESSING').length).toBeLessThanOrEqual(1);
      if (tx.status === 'COMPLETED') expected -= 10_075;
    }
    expect(await balances(ctx, p, customer.customerId)).toEqual({ available: expected, total: expected });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('REALTIME_FUNDING money racing the expiry of its payment: each payment is funded or expired, once', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 0);
    const deadline = new Date(ctx.clock.now().getTime() + 60_000);
    const inputs = Array.from({ length: 12 }, () => paymentInput(p, customer, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, fundingDeadline: deadline }));
    for (const input of inputs) await startPayment(ctx, input);
    ctx.clock.advance(60_000);
    const [sends] = await Promise.all([
      Promise.all(inputs.map((input) => call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' }))),
      (async () => {
        for (let i = 0; i < 20; i++) if ((await ctx.jobs.runDue(5)) === 0) return;
      })(),
    ]);
    let funded = 0n;
    for (const [i, input] of inputs.entries()) {
      const tx = (await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json;
      const types = await eventTypes(ctx, input.transactionId);
      if (sends[i]!.statusCode === 200) {
        funded += input.totalSendingAmount;
        expect(tx.status).not.toBe('EXPIRED');
        expect(types).not.toContain('OUTGOING_PAYMENT.EXPIRED');
      } else {
        expect(sends[i]!.statusCode).toBe(409);
        expect(tx).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED' });
        expect(types).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED']);
      }
    }
    expect((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total).toBe(-funded);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
