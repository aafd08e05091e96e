import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/platform/db/tx.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import type { RailProvider } from '../../src/modules/transactions/rail-provider.js';
import { enqueueJob } from '../../src/platform/jobs/index.js';
import { createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, fundedCustomer, paymentInput, platformFundedSender, platformUsdBalances, startPayment, type Json } from '../helpers/payments.js';
import { stubRailProvider } from '../helpers/rail-stub.js';

/**
 * Production payouts through the HTTP rail provider (docs/payments.md, the rail-provider
 * contract): a payout the provider ACCEPTED is never handed over again while Corridor asks how it
 * stands; every failureReason of the contract fails the payment with that reason and its debit
 * refunded; and a refund that waits for the provider to send a deposit back shows no settledAt
 * until the provider has answered RETURNED.
 */
const HAND_OVER = '/rails/payouts';
const STATUS = '/rails/payouts/status';
const CONTRACT_REASONS = ['QUOTE_EXECUTION_FAILED', 'PAYOUT_RETURNED', 'LIMIT_EXCEEDED', 'ACCOUNT_CANNOT_RECEIVE', 'ACCOUNT_INVALID', 'COMPLIANCE_REJECTED'] as const;

let stub: Awaited<ReturnType<typeof stubRailProvider>>;
let ctx: TestContext;
/** What the stub answers to each payout's hand-over and status, by transaction id (default ACCEPTED / PENDING). */
const handOver: Record<string, Json> = {};
const payoutStatus: Record<string, Json> = {};
/** What the stub answers to deposits' status and return, by reference / transaction id. */
const depositStatus: Record<string, Json> = {};
const depositReturn: Record<string, Json> = {};

beforeAll(async () => {
  stub = await stubRailProvider(
    {
      [HAND_OVER]: (body) => handOver[body.transactionId as string] ?? { status: 'ACCEPTED' },
      [STATUS]: (body) => payoutStatus[body.transactionId as string] ?? { status: 'PENDING' },
      '/rails/deposits/status': (body) => depositStatus[body.reference as string] ?? { status: 'PENDING' },
      '/rails/deposits/return': (body) => depositReturn[body.transactionId as string] ?? { status: 'RETURNED' },
      '/rails/deposits/list': { deposits: [], nextCursor: null },
    },
    (currency) => (currency === 'USD' ? '1' : '0.92'),
  );
  ctx = await createTestContext({ env: { CORRIDOR_RAILS_URL: `${stub.base}/rails`, CORRIDOR_RAILS_TOKEN: 'rail-secret', CORRIDOR_RATES_URL: `${stub.base}/rates` } });
}, 120_000);
afterAll(async () => {
  await ctx?.close();
  await stub?.close();
});
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const transaction = async (p: TestPlatform, id: string) => (await call(ctx, p, 'GET', `/transactions/${id}`)).json() as Json;
const asked = (path: string, transactionId: string) => stub.seen.filter((s) => s.path === path && s.body.transactionId === transactionId);

describe('a production payout the provider accepted', () => {
  it('is handed over once, however many times its status is asked, also when its settlement time had passed at the hand-over', async () => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 50_000);
    const input = paymentInput(p, sender);
    await startPayment(ctx, input);
    // The jobs run late: the rail's settlement time has passed when the payout is handed over, so Corridor asks its status at once.
    ctx.clock.advance(3_600_000);
    await drainJobs(ctx);
    for (let i = 0; i < 4; i++) {
      ctx.clock.advance(120_000);
      await drainJobs(ctx);
    }
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'PROCESSING' });
    expect(asked(STATUS, input.transactionId).length).toBeGreaterThanOrEqual(4);
    expect(asked(HAND_OVER, input.transactionId)).toHaveLength(1);

    payoutStatus[input.transactionId] = { status: 'COMPLETED' };
    ctx.clock.advance(120_000);
    await drainJobs(ctx);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'COMPLETED' });
    expect(asked(HAND_OVER, input.transactionId)).toHaveLength(1);
    expect((await eventTypes(ctx, input.transactionId)).filter((t) => t === 'OUTGOING_PAYMENT.COMPLETED')).toHaveLength(1);
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000 - 10_075, total: 50_000 - 10_075 });
  });

  it('on time too: accepted, PENDING at its settlement time and after, then COMPLETED — one hand-over', async () => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 50_000);
    const input = paymentInput(p, sender);
    await startPayment(ctx, input);
    await drainJobs(ctx);
    for (let i = 0; i < 4; i++) {
      ctx.clock.advance(120_000);
      await drainJobs(ctx);
    }
    payoutStatus[input.transactionId] = { status: 'COMPLETED' };
    ctx.clock.advance(120_000);
    await drainJobs(ctx);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'COMPLETED' });
    expect(asked(STATUS, input.transactionId).length).toBeGreaterThanOrEqual(4);
    expect(asked(HAND_OVER, input.transactionId)).toHaveLength(1);

    // A settlement job run again after a crash (its completion lost, its checkpoint not yet written): the payment has ended, the provider is not asked.
    const statusAsks = asked(STATUS, input.transactionId).length;
    await enqueueJob(ctx.handle.db, ctx.clock, { kind: 'payments.settle', platformId: p.uuid, payload: { transactionId: input.transactionId.slice('Transaction:'.length), submitted: false } });
    await drainJobs(ctx);
    expect(asked(HAND_OVER, input.transactionId)).toHaveLength(1);
    expect(asked(STATUS, input.transactionId)).toHaveLength(statusAsks);
    expect((await eventTypes(ctx, input.transactionId)).filter((t) => t === 'OUTGOING_PAYMENT.COMPLETED')).toHaveLength(1);
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000 - 10_075, total: 50_000 - 10_075 });
  });
});

describe('every failureReason of the rail-provider contract', () => {
  const ends = [
    { when: 'REJECTED at the hand-over', answers: handOver, status: 'REJECTED', wait: 60_000 },
    { when: 'FAILED at the status', answers: payoutStatus, status: 'FAILED', wait: 3_600_000 },
  ];
  it.each(ends)('$when with any of them: FAILED with that reason, the debit refunded', async ({ answers, status, wait }) => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 100_000);
    const ids: string[] = [];
    for (const reason of CONTRACT_REASONS) {
      const input = paymentInput(p, sender);
      answers[input.transactionId] = { status, failureReason: reason };
      await startPayment(ctx, input);
      ids.push(input.transactionId);
    }
    await drainJobs(ctx);
    ctx.clock.advance(wait);
    await drainJobs(ctx);
    for (const [i, reason] of CONTRACT_REASONS.entries()) {
      expect(await transaction(p, ids[i]!), reason).toMatchObject({ status: 'FAILED', failureReason: reason, refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
    }
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 100_000, total: 100_000 });
  });
});

describe('a production refund the provider has not yet sent back', () => {
  it('is PENDING without settledAt; settled (COMPLETED, settledAt) once the provider answers RETURNED', async () => {
    const p = await ctx.newPlatform('production');
    const payee = await call(ctx, p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).EUR_ACCOUNT);
    expect(payee.statusCode, payee.body).toBe(201);
    const quoted = await call(ctx, p, 'POST', '/quotes', {
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' },
      destination: { destinationType: 'ACCOUNT', accountId: (payee.json() as Json).id },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 20_000,
    });
    expect(quoted.statusCode, quoted.body).toBe(201);
    const q = quoted.json() as Json;
    const reference = (q.paymentInstructions as Array<{ accountOrWalletInfo: Json }>)[0]!.accountOrWalletInfo.reference as string;
    const transactionId = q.transactionId as string;
    // Paid in with another amount: the payment fails and the money goes back through the provider, which does not answer yet.
    depositReturn[transactionId] = { status: 'LATER' };
    depositStatus[reference] = { status: 'RECEIVED', amount: '19999', receivedAt: ctx.clock.now().toISOString() };
    for (let s = 0; s < 30; s += 10) {
      ctx.clock.advance(10_000);
      await drainJobs(ctx);
    }
    const pending = await transaction(p, transactionId);
    expect(pending).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'PENDING', reason: 'TRANSACTION_FAILED' } });
    expect(pending.refund.settledAt).toBeUndefined();
    expect(asked('/rails/deposits/return', transactionId).length).toBeGreaterThanOrEqual(1);

    depositReturn[transactionId] = { status: 'RETURNED' };
    ctx.clock.advance(2 * 3_600_000);
    await drainJobs(ctx);
    const settled = await transaction(p, transactionId);
    expect(settled).toMatchObject({ status: 'FAILED', refund: { status: 'COMPLETED' } });
    expect(settled.refund.settledAt).toEqual(expect.any(String));
  });
});

/** A USD → EUR payment on SEPA_INSTANT: what the sender sends (`sentAmount`) and what the payee receives differ. */
const crossCurrency = (sentAmount: bigint, receivedAmount: bigint) => ({
  sentAmount,
  totalSendingAmount: sentAmount + 75n,
  receivedAmount,
  receivingCurrency: 'EUR',
  exchangeRate: '0.92',
  destination: { destinationType: 'ACCOUNT' as const, accountId: 'ExternalAccount:019542f5-b3e7-7d02-8000-000000000001', paymentRail: 'SEPA_INSTANT' as const },
});

describe('across currencies', () => {
  it('the production hand-over carries amount (received, EUR) and sentAmount (sent, USD) as the contract names them', async () => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 50_000);
    // Started as POST /transfer-out starts it: `requestedAs` is the sandbox's business, never sent to the provider.
    const input = paymentInput(p, sender, { ...crossCurrency(10_000n, 9_200n), requestedAs: 'TRANSFER' });
    payoutStatus[input.transactionId] = { status: 'COMPLETED' };
    await startPayment(ctx, input);
    await drainJobs(ctx);
    ctx.clock.advance(60_000);
    await drainJobs(ctx);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'COMPLETED' });
    const [handed] = asked(HAND_OVER, input.transactionId);
    expect(handed!.body).toMatchObject({ transactionId: input.transactionId, rail: 'SEPA_INSTANT', currency: 'EUR', amount: '9200', sentAmount: '10000', sendingCurrency: 'USD' });
    expect(handed!.body).not.toHaveProperty('requestedAs');
    expect(asked(STATUS, input.transactionId)[0]!.body).toMatchObject({ amount: '9200', sentAmount: '10000' });
  });

  it('the sandbox outcome is chosen by the sent amount’s last three digits, never the received amount’s', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 100_000);
    // …903 sent: rejected at the hand-over (LIMIT_EXCEEDED) whatever is received.
    const rejected = paymentInput(p, customer, crossCurrency(10_903n, 10_030n));
    // …902 sent: returned at the settlement time (PAYOUT_RETURNED).
    const returned = paymentInput(p, customer, crossCurrency(10_902n, 10_030n));
    // Received amounts ending 903 and 902, sent amounts that trigger nothing: both complete.
    const settles = paymentInput(p, customer, crossCurrency(10_000n, 9_903n));
    const settlesToo = paymentInput(p, customer, crossCurrency(10_001n, 9_902n));
    for (const input of [rejected, returned, settles, settlesToo]) await startPayment(ctx, input);
    await drainJobs(ctx);
    ctx.clock.advance(60_000);
    await drainJobs(ctx);
    expect(await transaction(p, rejected.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'LIMIT_EXCEEDED', refund: { status: 'COMPLETED' } });
    expect(await transaction(p, returned.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'PAYOUT_RETURNED', refund: { status: 'COMPLETED' } });
    expect(await transaction(p, settles.transactionId)).toMatchObject({ status: 'COMPLETED' });
    expect(await transaction(p, settlesToo.transactionId)).toMatchObject({ status: 'COMPLETED' });
    const balances = ((await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customer.customerId}&currency=USD`)).json() as { data: Json[] }).data[0]!;
    expect(balances.balance.amount).toBe(100_000 - (10_000 + 75) - (10_001 + 75));
  });
});

describe('what a quote’s execution hands over', () => {
  it('a totalSendingAmount other than sentAmount + fees + platformFees is refused: no transaction, nothing held', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    for (const totalSendingAmount of [10_074n, 10_076n, 10_000n]) {
      const input = paymentInput(p, customer, { totalSendingAmount });
      await expect(startPayment(ctx, input)).rejects.toThrow(/totalSendingAmount/);
      expect((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).statusCode).toBe(404);
    }
    const balances = ((await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customer.customerId}&currency=USD`)).json() as { data: Json[] }).data[0]!;
    expect({ available: balances.balance.amount, total: balances.totalBalance.amount }).toEqual({ available: 50_000, total: 50_000 });
  });
});

describe('GET /transactions account identifier filters', () => {
  it('match a UMA address on the side it is on: receiver and either side list the payment, sender none', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const umaAddress = `$payee${p.uuid.slice(-6)}@example.com`;
    const input = paymentInput(p, customer, { destination: { destinationType: 'UMA_ADDRESS', umaAddress } });
    await startPayment(ctx, input);
    // Cancelled at once, so no rail is asked: the filters read the row alone.
    expect((await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`)).statusCode).toBe(200);
    const other = paymentInput(p, customer);
    await startPayment(ctx, other);
    expect((await call(ctx, p, 'POST', `/transactions/${other.transactionId}/cancel`)).statusCode).toBe(200);
    const listed = async (query: string) => ((await call(ctx, p, 'GET', `/transactions?${query}=${encodeURIComponent(umaAddress)}`)).json() as { data: Json[] }).data.map((t) => t.id);
    expect(await listed('receiverAccountIdentifier')).toEqual([input.transactionId]);
    expect(await listed('accountIdentifier')).toEqual([input.transactionId]);
    expect(await listed('senderAccountIdentifier')).toEqual([]);
  });
});

describe('the production deposit feed', () => {
  it('a page whose nextCursor is null is asked again from the same cursor, never from the start', async () => {
    const from = stub.seen.length;
    stub.answers['/rails/deposits/list'] = (body) => (body.cursor === null ? { deposits: [], nextCursor: 'c-1' } : { deposits: [], nextCursor: null });
    try {
      for (let i = 0; i < 5; i++) {
        ctx.clock.advance(10_000);
        await drainJobs(ctx);
      }
      const cursors = stub.seen.slice(from).filter((s) => s.path === '/rails/deposits/list').map((s) => s.body.cursor);
      const first = cursors.indexOf('c-1');
      expect(first).toBeGreaterThanOrEqual(0);
      expect(cursors.length - first).toBeGreaterThanOrEqual(3);
      expect(cursors.slice(first)).toEqual(cursors.slice(first).map(() => 'c-1'));
    } finally {
      stub.answers['/rails/deposits/list'] = { deposits: [], nextCursor: null };
    }
  });
});

describe('the jobs of a payment that has ended', () => {
  const jobsOf = (p: TestPlatform) =>
    ctx.handle.db.selectFrom('jobs').select(['kind', 'status', 'last_error']).where('platform_id', '=', p.uuid).where('kind', 'in', ['payments.submit', 'payments.settle']).execute();

  it('a cancelled payment’s submit job ends done without an error: nothing is posted, nothing retried', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    expect((await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`)).statusCode).toBe(200);
    await drainJobs(ctx);
    ctx.clock.advance(3_600_000);
    await drainJobs(ctx);
    expect(await jobsOf(p)).toEqual([{ kind: 'payments.submit', status: 'done', last_error: null }]);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });
    const balances = ((await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customer.customerId}&currency=USD`)).json() as { data: Json[] }).data[0]!;
    expect({ available: balances.balance.amount, total: balances.totalBalance.amount }).toEqual({ available: 50_000, total: 50_000 });
  });

  it('a submit job run again after the payment completed (a crash lost its completion) ends done: the hold is not posted again, the rail not asked', async () => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 50_000);
    const input = paymentInput(p, sender);
    payoutStatus[input.transactionId] = { status: 'COMPLETED' };
    await startPayment(ctx, input);
    await drainJobs(ctx);
    ctx.clock.advance(60_000);
    await drainJobs(ctx);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'COMPLETED' });
    await enqueueJob(ctx.handle.db, ctx.clock, { kind: 'payments.submit', platformId: p.uuid, payload: { transactionId: input.transactionId.slice('Transaction:'.length) } });
    await drainJobs(ctx);
    expect((await jobsOf(p)).every((j) => j.status === 'done' && j.last_error === null), JSON.stringify(await jobsOf(p))).toBe(true);
    expect(asked(HAND_OVER, input.transactionId)).toHaveLength(1);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'COMPLETED' });
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000 - 10_075, total: 50_000 - 10_075 });
  });
});

describe('a production payment from an internal account', () => {
  it('is cancellable while PENDING (only a pull from an external account is not): the hold released, the rail never asked', async () => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 50_000);
    const input = paymentInput(p, sender);
    await startPayment(ctx, input);
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000 - 10_075, total: 50_000 });
    const cancelled = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'COMPLETED', reason: 'USER_CANCELLATION' } });
    await drainJobs(ctx);
    expect(asked(HAND_OVER, input.transactionId)).toEqual([]);
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000, total: 50_000 });
  });
});

describe('an expired quote’s execution', () => {
  it('shows no expected settlement time: it never settles', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    const expired = await withTx(ctx.handle.db, (trx) => ctx.app.payments.recordExpiredPayment(trx, input));
    expect(expired).toMatchObject({ status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED', expectedSettlementAt: null });
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'EXPIRED', expectedSettlementAt: null });
  });
});

describe('a payment that ends while its settlement job waits for the rail', () => {
  it('is not written by that job afterwards: the terminal row keeps its expectedSettlementAt and updatedAt', async () => {
    let duringSubmit: (() => Promise<void>) | undefined;
    // A rail that names its own settlement time (`settlesInSeconds`), which the job writes to the row after the hand-over.
    const provider: RailProvider = {
      submit: async () => {
        await duringSubmit?.();
        return { status: 'ACCEPTED', settlesInSeconds: 600 };
      },
      status: async () => ({ status: 'PENDING' }),
      deposit: async () => ({ status: 'PENDING' }),
      returnDeposit: async () => {},
    };
    const other = await createTestContext({ railProvider: provider });
    try {
      const p = await other.newPlatform('production');
      const input = paymentInput(p, await platformFundedSender(other, p, 50_000));
      await startPayment(other, input);
      const uuid = input.transactionId.slice('Transaction:'.length);
      const read = () => other.handle.db.selectFrom('transactions').select(['status', 'expected_settlement_at', 'updated_at']).where('id', '=', uuid).executeTakeFirstOrThrow();
      let ended: Awaited<ReturnType<typeof read>> | undefined;
      // Another run of the payment's settlement (one whose lease this run took over) completes it while this one is at the rail.
      duringSubmit = async () => {
        const at = other.clock.now();
        await other.handle.db.updateTable('transactions').set({ status: 'COMPLETED', settled_at: at, updated_at: at }).where('id', '=', uuid).where('status', '=', 'PROCESSING').execute();
        ended = await read();
        duringSubmit = undefined;
      };
      await drainJobs(other);
      expect(ended?.status).toBe('COMPLETED');
      expect(await read()).toEqual(ended);
      other.clock.advance(3_600_000);
      await drainJobs(other);
      expect(await read()).toEqual(ended);
      await expectLedgerConsistent(other.handle.db);
    } finally {
      await other.close();
    }
  }, 120_000);
});

describe('a REALTIME_FUNDING payment’s money in the ledger', () => {
  it('is held from the account it was paid into, SETTLEMENT(REALTIME_FUNDING), which a completed payment leaves at zero; SETTLEMENT(PULL) is not touched', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 0);
    const input = paymentInput(p, customer, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' } });
    await startPayment(ctx, input);
    const sent = await call(ctx, p, 'POST', '/sandbox/send', { quoteId: input.quoteId, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    await drainJobs(ctx);
    ctx.clock.advance(60_000);
    await drainJobs(ctx);
    expect(await transaction(p, input.transactionId)).toMatchObject({ status: 'COMPLETED' });
    const total = async (rail: string) => (await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail, currency: 'USD' })).total;
    expect(await total('REALTIME_FUNDING')).toBe(0n);
    expect(await total('PULL')).toBe(0n);
    expect(await total('RTP')).toBe(10_000n);
  });
});

describe('GET /transactions pages', () => {
  it('a page that holds the last transaction has no more: hasMore false and no nextCursor, also when it is exactly full', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const first = paymentInput(p, customer);
    await startPayment(ctx, first);
    ctx.clock.advance(1_000);
    const second = paymentInput(p, customer);
    await startPayment(ctx, second);
    const page = async (query: string) => (await call(ctx, p, 'GET', `/transactions?${query}`)).json() as Json;
    const whole = await page('limit=2');
    expect(whole.data.map((t: Json) => t.id)).toEqual([second.transactionId, first.transactionId]);
    expect(whole.hasMore).toBe(false);
    expect(whole.nextCursor).toBeUndefined();
    const one = await page('limit=1');
    expect(one).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    const last = await page(`limit=1&cursor=${encodeURIComponent(one.nextCursor as string)}`);
    expect(last.data.map((t: Json) => t.id)).toEqual([first.transactionId]);
    expect(last.hasMore).toBe(false);
    expect(last.nextCursor).toBeUndefined();
  });
});

describe('a rail’s estimate of its settlement time (ACCEPTED.settlesAt)', () => {
  it('is shown but not waited out: the rail is asked again at the usual poll, and a payment it settled sooner completes then', async () => {
    const statusAsks: Date[] = [];
    let other: TestContext | undefined;
    const provider: RailProvider = {
      // The rail expects to settle in an hour, but has settled by its next ask.
      submit: async () => ({ status: 'ACCEPTED', settlesAt: new Date(other!.clock.now().getTime() + 3_600_000) }),
      status: async () => {
        statusAsks.push(other!.clock.now());
        return { status: 'COMPLETED' };
      },
      deposit: async () => ({ status: 'PENDING' }),
      returnDeposit: async () => {},
    };
    other = await createTestContext({ railProvider: provider });
    try {
      const p = await other.newPlatform('production');
      const input = paymentInput(p, await platformFundedSender(other, p, 50_000));
      await startPayment(other, input);
      const handedOver = other.clock.now();
      await drainJobs(other);
      expect((await call(other, p, 'GET', `/transactions/${input.transactionId}`)).json()).toMatchObject({
        status: 'PROCESSING',
        expectedSettlementAt: new Date(handedOver.getTime() + 3_600_000).toISOString(),
      });
      for (let i = 0; i < 5; i++) {
        other.clock.advance(60_000);
        await drainJobs(other);
      }
      // Well before the hour: asked, and completed.
      expect((await call(other, p, 'GET', `/transactions/${input.transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
      expect(statusAsks.length).toBeGreaterThanOrEqual(1);
      expect(statusAsks[0]!.getTime() - handedOver.getTime()).toBeLessThanOrEqual(5 * 60_000);
      await expectLedgerConsistent(other.handle.db);
    } finally {
      await other.close();
    }
  }, 120_000);
});
