import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, customerUsdAccount, readySender, type Json } from '../helpers/payments.js';

/**
 * A quote's execution reads the rates it was priced with as stored (its `rate_window_start`,
 * rates' `storedSnapshot`), never the provider's. When the process has already moved on to the
 * next window — the usual case across processes, or a quote executed minutes after its creation —
 * that is a read of the stored window, which must find it: the quote executes as quoted.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const RATE_WINDOW_MS = 5 * 60_000;

describe('executing a quote after the rate window it was priced in has ended', () => {
  it('200: the quote runs with its own window’s rates, as quoted', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 500_000);
    const payee = await customerUsdAccount(ctx, p, sender.customerId, '12345678901');
    // Ten seconds before a window ends; an ACH quote lives five minutes.
    const now = ctx.clock.now().getTime();
    ctx.clock.set(new Date(now - (now % RATE_WINDOW_MS) + RATE_WINDOW_MS - 10_000));
    const quoted = await call(ctx, p, 'POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: payee, paymentRail: 'ACH' },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
    });
    expect(quoted.statusCode, quoted.body).toBe(201);
    const quote = quoted.json() as Json;

    // The next window: reading the rates now makes it this process's current one.
    ctx.clock.advance(20_000);
    expect((await call(ctx, p, 'GET', '/exchange-rates?sourceCurrency=USD')).statusCode).toBe(200);

    const executed = await call(ctx, p, 'POST', `/quotes/${quote.id}/execute`);
    expect(executed.statusCode, executed.body).toBe(200);
    expect(executed.json()).toMatchObject({ status: 'PROCESSING', totalSendingAmount: quote.totalSendingAmount, totalReceivingAmount: quote.totalReceivingAmount });
    expect((await balances(ctx, p, sender.customerId)).available).toBe(500_000 - (quote.totalSendingAmount as number));
  });
});
