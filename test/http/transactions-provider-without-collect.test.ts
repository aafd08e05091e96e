import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RailProvider } from '../../src/modules/transactions/index.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, type Json } from '../helpers/payments.js';

/**
 * An embedder's rail provider without `collect` cannot take pulls (RailProvider): a pull from an
 * external account on its platforms — POST /transfer-in, or a quote whose source is a pull-capable
 * external account — is 501 NOT_IMPLEMENTED and nothing is written or moved. Payouts still go.
 */
let ctx: TestContext;
let rates: Server;
const submitted: string[] = [];
const payoutsOnly: RailProvider = {
  submit: async (payout) => {
    submitted.push(payout.transactionId);
    return { status: 'ACCEPTED' };
  },
  status: async () => ({ status: 'PENDING' }),
  deposit: async () => ({ status: 'PENDING' }),
  returnDeposit: async () => {},
};

beforeAll(async () => {
  // Production quotes need a rate provider: USD at 1 is all these ask.
  rates = createServer(async (request, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const currencies = ((JSON.parse(text) as Json).currencies as string[] | undefined) ?? [];
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ asOf: new Date().toISOString(), rates: Object.fromEntries(currencies.map((c) => [c, c === 'USD' ? '1' : '0.92'])) }));
  });
  await new Promise<void>((resolve) => rates.listen(0, '127.0.0.1', resolve));
  ctx = await createTestContext({ railProvider: payoutsOnly, env: { CORRIDOR_RATES_URL: `http://127.0.0.1:${(rates.address() as AddressInfo).port}/rates` } });
}, 120_000);
afterAll(async () => {
  await ctx?.close();
  rates?.close();
});

describe('a production rail provider that cannot pull', () => {
  it('a pull through /transfer-in or POST /quotes is 501 NOT_IMPLEMENTED: no quote, no transaction, no money', async () => {
    const p = await ctx.newPlatform('production');
    const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
    const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
    const created = await call(ctx, p, 'POST', '/platform/external-accounts', { ...sample, ownershipType: 'FIRST_PARTY', accountInfo: { ...sample.accountInfo, accountNumber: '98765432101' } });
    expect(created.statusCode, created.body).toBe(201);
    const pullable = (created.json() as Json).id as string;

    expectEnvelope(await call(ctx, p, 'POST', '/transfer-in', { source: { accountId: pullable }, destination: { accountId: own.id }, amount: 5_000 }), 501, 'NOT_IMPLEMENTED');
    const quote = { source: { sourceType: 'ACCOUNT', accountId: pullable }, destination: { destinationType: 'ACCOUNT', accountId: own.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 5_000 };
    expectEnvelope(await call(ctx, p, 'POST', '/quotes', { ...quote, immediatelyExecute: true }), 501, 'NOT_IMPLEMENTED');
    const stored = await call(ctx, p, 'POST', '/quotes', quote);
    expect(stored.statusCode, stored.body).toBe(201);
    expectEnvelope(await call(ctx, p, 'POST', `/quotes/${(stored.json() as Json).id}/execute`), 501, 'NOT_IMPLEMENTED');
    await drainJobs(ctx);

    expect(((await call(ctx, p, 'GET', `/quotes/${(stored.json() as Json).id}`)).json() as Json).status).toBe('PENDING');
    expect(await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
    expect(submitted).toEqual([]);
    const after = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
    expect([after.balance.amount, after.totalBalance.amount]).toEqual([0, 0]);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
