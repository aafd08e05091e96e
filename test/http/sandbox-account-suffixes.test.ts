import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs, eventTypes } from '../helpers/payments.js';

/**
 * The upstream sandbox's account outcomes (docs/payments.md, Sandbox outcomes): the last three
 * digits of an external account's identifier choose how payments to and from it end, beside
 * Corridor's amount triggers, which go first.
 */
type Body = Record<string, any>;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
// Every money flow ends with the ledger's books checked.
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const call = (p: TestPlatform, method: 'GET' | 'POST', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
let seq = 0;
const FUNDING = 100_000;

/** A sandbox platform with an approved customer whose USD account holds FUNDING. */
async function world() {
  const p = await ctx.newPlatform();
  const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `s-${++seq}`, fullName: 'Ann Lee', endUserTermsConsent: consent() });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as Body).id as string;
  const usd = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as Body).data[0].id as string;
  expect((await call(p, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: FUNDING })).statusCode).toBe(200);
  return { p, customerId, usd };
}

/** A USD external account whose account number ends in `suffix`. */
async function usdAccount(p: TestPlatform, suffix: string, extra: Body = {}): Promise<string> {
  const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
  const created = await call(p, 'POST', '/platform/external-accounts', { ...sample, ...extra, accountInfo: { ...sample.accountInfo, accountNumber: `12345678${suffix}` } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Body).id as string;
}

async function available(p: TestPlatform, customerId: string): Promise<number> {
  return ((await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as Body).data[0].balance.amount as number;
}

const transaction = async (p: TestPlatform, id: string) => (await call(p, 'GET', `/transactions/${id}`)).json() as Body;

/** Settles what is due on the platform's clock after `seconds` more. */
async function advance(p: TestPlatform, seconds: number) {
  expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  await drainJobs(ctx);
}

/** Executes a quote paying `amount` cents from the customer's USD account to `accountId` (same currency: sent = received); answers the transaction id. */
async function pay(w: Awaited<ReturnType<typeof world>>, accountId: string, amount: number): Promise<string> {
  const body = { source: { sourceType: 'ACCOUNT', accountId: w.usd }, destination: { destinationType: 'ACCOUNT', accountId, paymentRail: 'RTP' }, lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: amount, immediatelyExecute: true };
  const created = await call(w.p, 'POST', '/quotes', body);
  expect(created.statusCode, created.body).toBe(201);
  await drainJobs(ctx);
  return (created.json() as Body).transactionId as string;
}

describe('quotes paid to a suffixed external account', () => {
  it.each([
    ['002', 'QUOTE_EXECUTION_FAILED', 0],
    ['004', 'ACCOUNT_CANNOT_RECEIVE', 60],
    ['005', 'PAYOUT_RETURNED', 60],
    ['006', 'QUOTE_EXECUTION_FAILED', 0],
    ['007', 'QUOTE_EXECUTION_FAILED', 60],
  ])('%s: FAILED %s, the debit refunded', async (suffix, failureReason, settleAfter) => {
    const w = await world();
    const id = await pay(w, await usdAccount(w.p, suffix), 10_000);
    if (settleAfter) {
      expect((await transaction(w.p, id)).status).toBe('PROCESSING');
      await advance(w.p, settleAfter);
    }
    expect(await transaction(w.p, id)).toMatchObject({ status: 'FAILED', failureReason, refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
    expect(await available(w.p, w.customerId)).toBe(FUNDING);
    expect(await eventTypes(ctx, id)).toEqual(expect.arrayContaining(['OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_COMPLETED']));
  });

  it('003: a long payment, COMPLETED six minutes after the hand-over (the test clock moves it)', async () => {
    const w = await world();
    const id = await pay(w, await usdAccount(w.p, '003'), 10_000);
    expect((await transaction(w.p, id)).status).toBe('PROCESSING');
    await advance(w.p, 300);
    expect((await transaction(w.p, id)).status).toBe('PROCESSING');
    await advance(w.p, 60);
    const settled = await transaction(w.p, id);
    expect(settled.status).toBe('COMPLETED');
    expect(await available(w.p, w.customerId)).toBe(FUNDING - settled.sentAmount.amount - settled.fees);
  });

  it('any other suffix settles; an amount trigger goes before the suffix', async () => {
    const w = await world();
    const plain = await pay(w, await usdAccount(w.p, '123'), 10_000);
    await advance(w.p, 60);
    expect((await transaction(w.p, plain)).status).toBe('COMPLETED');
    // 903 (LIMIT_EXCEEDED at submission) to a 003 account (a long success): the amount decides.
    const triggered = await pay(w, await usdAccount(w.p, '003'), 20_903);
    const view = await transaction(w.p, triggered);
    expect(view.sentAmount.amount).toBe(20_903);
    expect(view).toMatchObject({ status: 'FAILED', failureReason: 'LIMIT_EXCEEDED' });
  });
});

describe('POST /transfer-out to a suffixed external account', () => {
  const out = async (w: Awaited<ReturnType<typeof world>>, accountId: string, amount = 10_000) => {
    const created = await call(w.p, 'POST', '/transfer-out', { source: { accountId: w.usd }, destination: { accountId, paymentRail: 'RTP' }, amount });
    expect(created.statusCode, created.body).toBe(201);
    await drainJobs(ctx);
    return (created.json() as Body).id as string;
  };

  it.each([
    ['002', 'LIMIT_EXCEEDED', 0],
    ['003', 'ACCOUNT_INVALID', 0],
    ['004', 'ACCOUNT_CANNOT_RECEIVE', 60],
    ['005', 'ACCOUNT_CANNOT_RECEIVE', 30],
  ])('%s: FAILED %s, the debit refunded', async (suffix, failureReason, settleAfter) => {
    const w = await world();
    const id = await out(w, await usdAccount(w.p, suffix));
    if (settleAfter) {
      expect((await transaction(w.p, id)).status).toBe('PROCESSING');
      // 005 answers 30 s after the hand-over; the others at the rail's settlement time.
      if (suffix === '005') {
        await advance(w.p, settleAfter - 1);
        expect((await transaction(w.p, id)).status).toBe('PROCESSING');
      }
      await advance(w.p, suffix === '005' ? 1 : settleAfter);
    }
    expect(await transaction(w.p, id)).toMatchObject({ status: 'FAILED', failureReason, refund: { status: 'COMPLETED' } });
    expect(await available(w.p, w.customerId)).toBe(FUNDING);
  });

  it('a 003 account is a failure here, not a long payment; other suffixes settle, and amount triggers still apply', async () => {
    const w = await world();
    const ok = await out(w, await usdAccount(w.p, '006'));
    await advance(w.p, 60);
    const completed = await transaction(w.p, ok);
    expect(completed.status).toBe('COMPLETED');
    // `amount` includes the fees: the sent amount ends in 906 when the fees are added on top.
    const triggered = await out(w, await usdAccount(w.p, '002'), 10_906 + completed.fees);
    const view = await transaction(w.p, triggered);
    expect(view.sentAmount.amount % 1000).toBe(906);
    expect(view).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED' });
  });
});

describe('POST /transfer-in from a suffixed external account', () => {
  const pull = async (w: Awaited<ReturnType<typeof world>>, suffix: string) => {
    const source = await usdAccount(w.p, suffix, { ownershipType: 'FIRST_PARTY' });
    const created = await call(w.p, 'POST', '/transfer-in', { source: { accountId: source }, destination: { accountId: w.usd }, amount: 7_500 });
    expect(created.statusCode, created.body).toBe(201);
    await drainJobs(ctx);
    return (created.json() as Body).id as string;
  };

  it.each(['002', '003', '004'])('%s: FAILED COLLECTION_FAILED at once, nothing credited', async (suffix) => {
    const w = await world();
    const id = await pull(w, suffix);
    expect(await transaction(w.p, id)).toMatchObject({ type: 'INCOMING', status: 'FAILED', failureReason: 'COLLECTION_FAILED' });
    expect(await available(w.p, w.customerId)).toBe(FUNDING);
    expect(await eventTypes(ctx, id)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.FAILED']);
  });

  it('005: PENDING for 30 seconds, then FAILED COLLECTION_FAILED', async () => {
    const w = await world();
    const id = await pull(w, '005');
    expect((await transaction(w.p, id)).status).toBe('PENDING');
    await advance(w.p, 29);
    expect((await transaction(w.p, id)).status).toBe('PENDING');
    await advance(w.p, 1);
    expect(await transaction(w.p, id)).toMatchObject({ status: 'FAILED', failureReason: 'COLLECTION_FAILED' });
    expect(await available(w.p, w.customerId)).toBe(FUNDING);
  });

  it('any other suffix is collected', async () => {
    const w = await world();
    const id = await pull(w, '007');
    expect((await transaction(w.p, id)).status).toBe('COMPLETED');
    expect(await available(w.p, w.customerId)).toBe(FUNDING + 7_500);
  });
});
