// The red team's races (test/http/red-team-money.test.ts for the rest): one platform's token
// sending requests at once to pay, cancel or send back the same money, on PostgreSQL where they
// truly run side by side. Each payment ends once, nothing goes below zero, nothing is paid or
// given back twice, and the books stay consistent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call as rawCall, customerUsdAccount, drainJobs, readySender, type Json } from '../helpers/payments.js';

describe.runIf(onPostgres)('red team races on PostgreSQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  const call = (p: TestPlatform, method: 'GET' | 'POST', path: string, body?: unknown) => rawCall(ctx, p, method, path, body);

  it('a REALTIME_FUNDING payment paid twice, paid wrong and cancelled at once: funded at most once, its volume counted only while it goes on', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 0);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '81000010');
    const quotes: Json[] = [];
    for (let i = 0; i < 5; i++) {
      const quote = (
        await call(p, 'POST', '/quotes', {
          source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: ann.customerId },
          destination: { destinationType: 'ACCOUNT', accountId: beneficiary },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: 5_000,
        })
      ).json() as Json;
      quotes.push(quote);
      const answers = await Promise.all([
        call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD' }),
        call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD' }),
        call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD', currencyAmount: 4_999 }),
        call(p, 'POST', `/transactions/${quote.transactionId}/cancel`),
      ]);
      // The payment takes money once: one send is answered 200, the others find it funded or ended.
      expect(answers.slice(0, 3).filter((a) => a.statusCode === 200).length).toBeLessThanOrEqual(1);
      for (const answer of answers.slice(0, 3)) if (answer.statusCode !== 200) expect(answer.statusCode).toBe(409);
      expect([200, 409]).toContain(answers[3]!.statusCode);
    }
    await drainJobs(ctx);

    let goingOn = 0;
    for (const quote of quotes) {
      const payment = (await call(p, 'GET', `/transactions/${quote.transactionId}`)).json() as Json;
      if (payment.status === 'FAILED') expect(payment.refund === undefined || payment.refund.status === 'COMPLETED').toBe(true);
      else goingOn += quote.totalSendingAmount as number;
    }
    const volume = await ctx.handle.db.selectFrom('daily_volumes').select('amount').where('customer_id', '=', ann.customerId.slice('Customer:'.length)).executeTakeFirst();
    expect(Number(volume?.amount ?? 0)).toBe(goingOn);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a transfer-in sent back twice while its money is spent: sent back once or not at all, never below zero', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 0);
    const bob = await readySender(ctx, p, 0);
    const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
    const bank = (
      (await call(p, 'POST', '/customers/external-accounts', { customerId: ann.customerId, ...sample, ownershipType: 'FIRST_PARTY', accountInfo: { ...sample.accountInfo, accountNumber: '81000020' } })).json() as Json
    ).id as string;
    let refunded = 0;
    for (let i = 0; i < 4; i++) {
      const pulled = (await call(p, 'POST', '/transfer-in', { source: { accountId: bank }, destination: { accountId: ann.accountId }, amount: 10_000 })).json() as Json;
      await drainJobs(ctx);
      const [first, second] = await Promise.all([call(p, 'POST', `/sandbox/transactions/${pulled.id}/refund`), call(p, 'POST', `/sandbox/transactions/${pulled.id}/refund`)]);
      expect([first.statusCode, second.statusCode].sort()).toEqual([200, 409]);
      // The refund's reversal (a job) and a payment of the same money run at once.
      const [spend] = await Promise.all([
        call(p, 'POST', '/quotes', {
          source: { sourceType: 'ACCOUNT', accountId: ann.accountId },
          destination: { destinationType: 'ACCOUNT', accountId: bob.accountId },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: 10_000,
          immediatelyExecute: true,
        }),
        drainJobs(ctx),
      ]);
      await drainJobs(ctx);
      const status = ((await call(p, 'GET', `/transactions/${pulled.id}`)).json() as Json).status as string;
      // Sent back (and then not spent) or spent (and then not sent back, the refund FAILED): never both.
      if (status === 'REFUNDED') expect(spend.statusCode).toBe(400);
      else expect({ status, spend: spend.statusCode }).toEqual({ status: 'COMPLETED', spend: 201 });
      if (status === 'REFUNDED') refunded++;
      const ann$ = await balances(ctx, p, ann.customerId);
      expect(ann$.available).toBeGreaterThanOrEqual(0);
      expect(ann$.total).toBe(0);
    }
    expect((await balances(ctx, p, bob.customerId)).total).toBe((4 - refunded) * 10_000);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
