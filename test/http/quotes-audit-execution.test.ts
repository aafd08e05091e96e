import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, fundedCustomer, type Json } from '../helpers/payments.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

/** A funded customer whose end-user terms consent is on file, so it may send. */
async function sender(p: TestPlatform, amount: number) {
  const customer = await fundedCustomer(ctx, p, amount);
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const patched = await ctx.app.inject({
    method: 'PATCH',
    url: `${BASE}/customers/${customer.customerId}`,
    headers: { authorization: p.auth },
    payload: { customerType: 'INDIVIDUAL', endUserTermsConsent: consent },
  });
  expect(patched.statusCode, patched.body).toBe(200);
  return customer;
}

async function payee(p: TestPlatform): Promise<string> {
  const created = await call(ctx, p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).EUR_ACCOUNT);
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Json).id as string;
}

describe('executing a quote again after it expired', () => {
  it('answers QUOTE_EXPIRED every time, never "already executed": nothing was executed and nothing moved', async () => {
    const p = await ctx.newPlatform();
    const from = await sender(p, 100_000);
    const eur = await payee(p);
    const created = await call(ctx, p, 'POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: from.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: eur, paymentRail: 'SEPA' },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
    });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    ctx.clock.advance(301_000);
    // A client retrying after a lost answer must learn what happened, not that its payment went out.
    for (let attempt = 0; attempt < 3; attempt++) {
      const refused = expectEnvelope(await call(ctx, p, 'POST', `/quotes/${q.id}/execute`), 409, 'CONFLICT');
      expect(refused.details).toEqual({ reason: 'QUOTE_EXPIRED', quoteId: q.id, transactionId: q.transactionId });
      expect(refused.message).not.toMatch(/already been executed/);
    }
    const rows = await ctx.handle.db.selectFrom('transactions').select(['status', 'failure_reason']).where('id', '=', parseId('Transaction', q.transactionId as string)!).execute();
    expect(rows).toEqual([{ status: 'EXPIRED', failure_reason: 'QUOTE_EXPIRED' }]);
    expect(await balances(ctx, p, from.customerId)).toEqual({ available: 100_000, total: 100_000 });
    expect(((await call(ctx, p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('EXPIRED');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a quote executed in time and repeated after its expiry is still "already executed" (PROCESSING), not QUOTE_EXPIRED', async () => {
    const p = await ctx.newPlatform();
    const from = await sender(p, 100_000);
    const eur = await payee(p);
    const q = (await call(ctx, p, 'POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: from.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: eur, paymentRail: 'SEPA' },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
    })).json() as Json;
    expect((await call(ctx, p, 'POST', `/quotes/${q.id}/execute`)).statusCode).toBe(200);
    ctx.clock.advance(301_000);
    const again = expectEnvelope(await call(ctx, p, 'POST', `/quotes/${q.id}/execute`), 409, 'CONFLICT');
    expect(again.details).toEqual({ quoteId: q.id, transactionId: q.transactionId });
    expect(await balances(ctx, p, from.customerId)).toEqual({ available: 90_000, total: 100_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('POST /quotes with one Idempotency-Key, concurrently', () => {
  it('to an account (only the database is written): every repeat waits for the first and replays its answer; one quote, executed once', async () => {
    const p = await ctx.newPlatform();
    const from = await sender(p, 100_000);
    const eur = await payee(p);
    const apps = onPostgres ? [ctx.app, await ctx.secondApp()] : [ctx.app];
    const body = {
      source: { sourceType: 'ACCOUNT', accountId: from.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: eur },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
      immediatelyExecute: true,
    };
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        apps[i % apps.length]!.inject({ method: 'POST', url: `${BASE}/quotes`, headers: { authorization: p.auth, 'idempotency-key': 'one-payment' }, payload: body }),
      ),
    );
    expect(answers.map((a) => a.statusCode)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(new Set(answers.map((a) => (a.json() as Json).id)).size).toBe(1);
    expect(await balances(ctx, p, from.customerId)).toEqual({ available: 90_000, total: 100_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});
