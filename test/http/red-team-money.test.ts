// An attacker holding one platform's valid token tries to create, move or duplicate money it
// should not, through the HTTP API only. Each attempt is refused (or ends as the documented rule
// says) and the books stay consistent (`corridor ledger verify`'s checks) after every flow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call as rawCall, customerUsdAccount, drainJobs, readySender, type Json } from '../helpers/payments.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_DAILY_VOLUME_LIMIT: JSON.stringify({ USD: 100_000 }) } });
});
afterAll(() => ctx.close());

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawCall(ctx, p, method, path, body, headers);
const fromAccount = (accountId: string, extra: Json = {}) => ({ sourceType: 'ACCOUNT', accountId, ...extra });
const toAccount = (accountId: string) => ({ destinationType: 'ACCOUNT', accountId });
const sending = (source: Json, destination: Json, amount: number, extra: Json = {}) => ({ source, destination, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra });

/** A first-party USD bank account of the customer's, which money can be pulled from. */
async function pullable(p: TestPlatform, customerId: string, accountNumber: string): Promise<string> {
  const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
  const created = await call(p, 'POST', '/customers/external-accounts', { customerId, ...sample, ownershipType: 'FIRST_PARTY', accountInfo: { ...sample.accountInfo, accountNumber } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Json).id as string;
}

const usdReference = async (p: TestPlatform, customerId: string): Promise<string> =>
  ((await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as { data: Json[] }).data[0]!.fundingPaymentInstructions[0].accountOrWalletInfo.reference as string;

describe('another platform’s money', () => {
  it('its accounts, quotes and transactions are unknown to the attacker’s token: nothing moves', async () => {
    const attacker = await ctx.newPlatform();
    const victim = await ctx.newPlatform();
    const mine = await readySender(ctx, attacker, 10_000);
    const mineOut = await customerUsdAccount(ctx, attacker, mine.customerId, '71000001');
    const theirs = await readySender(ctx, victim, 50_000);
    const theirsOut = await customerUsdAccount(ctx, victim, theirs.customerId, '71000020');

    expectEnvelope(await call(attacker, 'POST', '/quotes', sending(fromAccount(theirs.accountId), toAccount(mineOut), 1_000, { immediatelyExecute: true })), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(attacker, 'POST', '/quotes', sending(fromAccount(mine.accountId), toAccount(theirs.accountId), 1_000, { immediatelyExecute: true })), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(attacker, 'POST', '/quotes', sending(fromAccount(mine.accountId), toAccount(theirsOut), 1_000, { immediatelyExecute: true })), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(attacker, 'POST', `/sandbox/internal-accounts/${theirs.accountId}/fund`, { amount: 5 }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(attacker, 'POST', '/sandbox/deposits', { reference: await usdReference(victim, theirs.customerId), amount: 5 }), 404, 'REFERENCE_NOT_FOUND');

    const quote = (await call(victim, 'POST', '/quotes', sending(fromAccount(theirs.accountId), toAccount(theirsOut), 1_000))).json() as Json;
    expectEnvelope(await call(attacker, 'POST', `/quotes/${quote.id}/execute`), 404, 'QUOTE_NOT_FOUND');
    expectEnvelope(await call(attacker, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD' }), 404, 'QUOTE_NOT_FOUND');
    expect((await call(victim, 'POST', `/quotes/${quote.id}/execute`)).statusCode).toBe(200);
    expectEnvelope(await call(attacker, 'POST', `/transactions/${quote.transactionId}/cancel`), 404, 'TRANSACTION_NOT_FOUND');
    expectEnvelope(await call(attacker, 'POST', `/sandbox/transactions/${quote.transactionId}/refund`), 404, 'TRANSACTION_NOT_FOUND');
    await drainJobs(ctx);

    expect(await balances(ctx, victim, theirs.customerId)).toEqual({ available: 49_000, total: 49_000 });
    expect(await balances(ctx, attacker, mine.customerId)).toEqual({ available: 10_000, total: 10_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a sandbox token reaches no production account, and a production token no sandbox simulation', async () => {
    const sandbox = await ctx.newPlatform();
    const production = await ctx.newPlatform('production');
    const productionAccount = ((await call(production, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data[0]!;
    const reference = productionAccount.fundingPaymentInstructions[0].accountOrWalletInfo.reference as string;
    expectEnvelope(await call(sandbox, 'POST', `/sandbox/internal-accounts/${productionAccount.id}/fund`, { amount: 5 }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(sandbox, 'POST', '/sandbox/deposits', { reference, amount: 5 }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(production, 'POST', `/sandbox/internal-accounts/${productionAccount.id}/fund`, { amount: 5 }), 403, 'FORBIDDEN');
    expectEnvelope(await call(production, 'POST', '/sandbox/deposits', { reference, amount: 5 }), 403, 'FORBIDDEN');
    expectEnvelope(await call(production, 'POST', '/sandbox/send', { quoteId: 'Quote:019542f5-b3e7-7d02-8000-000000000002', currencyCode: 'USD' }), 403, 'FORBIDDEN');
    expectEnvelope(await call(production, 'POST', '/sandbox/transactions/Transaction:019542f5-b3e7-7d02-8000-000000000002/refund'), 403, 'FORBIDDEN');
    expectEnvelope(await call(production, 'POST', '/sandbox/clock/advance', { seconds: 86_400 }), 403, 'FORBIDDEN');
    const after = ((await call(production, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data[0]!;
    expect(after.totalBalance.amount).toBe(0);
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('another customer’s money on the same platform', () => {
  it('its account as a source named for another customer, its beneficiaries, its bank account pulled into another’s: refused', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 20_000);
    const bob = await readySender(ctx, p, 0);
    const annBeneficiary = await customerUsdAccount(ctx, p, ann.customerId, '72000001');
    const bobBeneficiary = await customerUsdAccount(ctx, p, bob.customerId, '72000020');
    const annBank = await pullable(p, ann.customerId, '72000003');

    expectEnvelope(await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId, { customerId: bob.customerId }), toAccount(bobBeneficiary), 1_000)), 400, 'INVALID_INPUT');
    expectEnvelope(await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(bobBeneficiary), 1_000)), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(p, 'POST', '/transfer-out', { source: { accountId: ann.accountId }, destination: { accountId: bobBeneficiary }, amount: 1_000 }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(p, 'POST', '/transfer-in', { source: { accountId: annBank }, destination: { accountId: bob.accountId }, amount: 1_000 }), 404, 'REFERENCE_NOT_FOUND');
    // A third-party beneficiary is paid, never pulled from.
    const pulled = expectEnvelope(await call(p, 'POST', '/quotes', sending(fromAccount(annBeneficiary), toAccount(ann.accountId), 1_000, { immediatelyExecute: true })), 400, 'INVALID_INPUT');
    expect(pulled.details).toMatchObject({ errors: [{ field: 'source.accountId' }] });
    expectEnvelope(await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(ann.accountId), 1_000)), 400, 'SELF_PAYMENT');
    await drainJobs(ctx);

    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 20_000, total: 20_000 });
    expect(await balances(ctx, p, bob.customerId)).toEqual({ available: 0, total: 0 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('one quote, paid once', () => {
  it('immediatelyExecute, then execute, sandbox send and a cancel of the settled payment: debited exactly once', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 50_000);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '73000001');
    const created = await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), 10_000, { immediatelyExecute: true }));
    expect(created.statusCode, created.body).toBe(201);
    const quote = created.json() as Json;

    expect(expectEnvelope(await call(p, 'POST', `/quotes/${quote.id}/execute`), 409, 'CONFLICT').details).toMatchObject({ transactionId: quote.transactionId });
    expectEnvelope(await call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD' }), 409, 'CONFLICT');
    await drainJobs(ctx);
    await call(p, 'POST', '/sandbox/clock/advance', { seconds: 2 * 86_400 });
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/transactions/${quote.transactionId}`)).json() as Json).status).toBe('COMPLETED');
    expectEnvelope(await call(p, 'POST', `/transactions/${quote.transactionId}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    // An outgoing payment is no incoming one to send back.
    expectEnvelope(await call(p, 'POST', `/sandbox/transactions/${quote.transactionId}/refund`), 409, 'CONFLICT');

    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 40_000, total: 40_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('an Idempotency-Key used to execute one quote does not answer for another, which stays unexecuted', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 50_000);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '73000020');
    const first = (await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), 1_000))).json() as Json;
    const second = (await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), 1_000))).json() as Json;
    const key = { 'idempotency-key': 'red-team-execute' };
    expect((await call(p, 'POST', `/quotes/${first.id}/execute`, undefined, key)).statusCode).toBe(200);
    expectEnvelope(await call(p, 'POST', `/quotes/${second.id}/execute`, undefined, key), 409, 'CONFLICT');
    expect(((await call(p, 'GET', `/quotes/${second.id}`)).json() as Json).status).toBe('PENDING');
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 49_000, total: 50_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('fees and rounding', () => {
  it('no fee goes negative or fractional, by override or by configuration', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 10_000);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '74000001');
    for (const [override, field] of [
      [{ platformFixedFee: { amount: -50, currency: 'USD' }, platformVariableFeeBps: 0 }, 'platformFeeOverride.platformFixedFee.amount'],
      [{ platformFixedFee: { amount: 0, currency: 'USD' }, platformVariableFeeBps: -5 }, 'platformFeeOverride.platformVariableFeeBps'],
      [{ platformFixedFee: { amount: 0.5, currency: 'USD' }, platformVariableFeeBps: 0 }, 'platformFeeOverride.platformFixedFee.amount'],
    ] as const) {
      const refused = expectEnvelope(await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), 2_000, { platformFeeOverride: override, immediatelyExecute: true })), 400, 'INVALID_INPUT');
      expect(refused.details).toMatchObject({ errors: [{ field }] });
    }
    const config = expectEnvelope(await call(p, 'PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', fixedFee: { amount: -10, currency: 'USD' } }] }), 400, 'INVALID_INPUT');
    expect(config.details).toMatchObject({ errors: [{ field: 'feeConfigs.0.fixedFee.amount' }] });
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 10_000, total: 10_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('tiny conversions between 0-, 2-, 6- and 8-decimal currencies never give the receiver more than the sent amount is worth, and round trips lose', async () => {
    const p = await ctx.newPlatform();
    const codes = ['USD', 'JPY', 'USDC', 'BTC', 'EUR'];
    const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: codes.map(currency) })).statusCode).toBe(200);
    const ann = await readySender(ctx, p, 0);
    const accounts = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${ann.customerId}&limit=100`)).json() as { data: Json[] }).data;
    const accountOf = Object.fromEntries(accounts.map((a) => [a.balance.currency.code as string, a.id as string]));
    for (const code of codes) expect((await call(p, 'POST', `/sandbox/internal-accounts/${accountOf[code]}/fund`, { amount: 1_000_000 })).statusCode).toBe(200);

    for (const from of codes) {
      for (const to of codes) {
        if (from === to) continue;
        for (const side of ['SENDING', 'RECEIVING']) {
          for (const amount of [1, 2, 3, 7, 99]) {
            const answer = await call(p, 'POST', '/quotes', { source: fromAccount(accountOf[from]!), destination: toAccount(accountOf[to]!), lockedCurrencySide: side, lockedCurrencyAmount: amount });
            if (answer.statusCode !== 201) {
              // Too small to arrive as one minor unit: refused, never rounded up to one.
              expectEnvelope(answer, 400, 'INVALID_AMOUNT');
              continue;
            }
            const quote = answer.json() as Json;
            const worth = quote.totalSendingAmount * quote.rateDetails.counterpartyMultiplier * 10 ** (quote.receivingCurrency.decimals - quote.sendingCurrency.decimals);
            expect(quote.totalReceivingAmount, `${from}→${to} ${side} ${amount}`).toBeLessThanOrEqual(worth * (1 + 1e-9));
          }
        }
      }
    }

    // 40 one-cent book transfers to yen (rounded down), then one cent at a time back (paid rounded up)
    // for as long as the yen gained pay for it: the customer ends with fewer cents, never more.
    for (let i = 0; i < 40; i++) {
      const out = await call(p, 'POST', '/quotes', { source: fromAccount(accountOf.USD!), destination: toAccount(accountOf.JPY!), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1, immediatelyExecute: true });
      expect(out.statusCode, out.body).toBe(201);
    }
    await drainJobs(ctx);
    const jpy = () => call(p, 'GET', `/customers/internal-accounts?customerId=${ann.customerId}&currency=JPY`).then((r) => (r.json() as { data: Json[] }).data[0]!.balance.amount as number);
    expect(await jpy()).toBeGreaterThan(1_000_000);
    let returned = 0;
    for (;;) {
      const back = (await call(p, 'POST', '/quotes', { source: fromAccount(accountOf.JPY!), destination: toAccount(accountOf.USD!), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 1 })).json() as Json;
      if ((await jpy()) - back.totalSendingAmount < 1_000_000) break;
      expect((await call(p, 'POST', `/quotes/${back.id}/execute`)).statusCode).toBe(200);
      await drainJobs(ctx);
      returned++;
    }
    expect(returned).toBeGreaterThan(0);
    expect(returned).toBeLessThan(40);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 1_000_000 - 40 + returned, total: 1_000_000 - 40 + returned });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('daily volume', () => {
  it('a cancel gives the volume back once: a second cancel is refused and the limit holds', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 1_000_000);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '75000001');
    const pay = (amount: number) => call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), amount, { immediatelyExecute: true }));
    const first = (await pay(90_000)).json() as Json;
    expect((await call(p, 'POST', `/transactions/${first.transactionId}/cancel`)).statusCode).toBe(200);
    expectEnvelope(await call(p, 'POST', `/transactions/${first.transactionId}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    expect((await pay(90_000)).statusCode).toBe(201);
    expectEnvelope(await pay(20_000), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    // An expired quote counts nothing, however often it is tried.
    const stale = (await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), 5_000))).json() as Json;
    await call(p, 'POST', '/sandbox/clock/advance', { seconds: 301 });
    for (let i = 0; i < 2; i++) expect(expectEnvelope(await call(p, 'POST', `/quotes/${stale.id}/execute`), 409, 'CONFLICT').details).toMatchObject({ reason: 'QUOTE_EXPIRED' });
    expectEnvelope(await call(p, 'POST', `/transactions/${stale.transactionId}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    await drainJobs(ctx);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 910_000, total: 910_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('REALTIME_FUNDING paid in', () => {
  it('in another currency is refused; a wrong amount fails the payment and goes back; nothing pays it again', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 0);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '76000001');
    const quote = (await call(p, 'POST', '/quotes', sending({ sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: ann.customerId }, toAccount(beneficiary), 5_000))).json() as Json;
    expectEnvelope(await call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'EUR' }), 400, 'INVALID_INPUT');
    const less = await call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD', currencyAmount: 4_000 });
    expect(less.json()).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'COMPLETED' } });
    expectEnvelope(await call(p, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD' }), 409, 'CONFLICT');
    expectEnvelope(await call(p, 'POST', `/transactions/${quote.transactionId}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    expectEnvelope(await call(p, 'POST', `/quotes/${quote.id}/execute`), 400, 'INVALID_INPUT');
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/transactions/${quote.transactionId}`)).json() as Json).status).toBe('FAILED');
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('a deleted customer receives nothing', () => {
  it('book transfer 410, real-time money sent back, deposit and funding 409 naming the deletion, UMA payment 404', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 10_000);
    const bob = await readySender(ctx, p, 0);
    const reference = await usdReference(p, bob.customerId);
    const book = (await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(bob.accountId), 1_000))).json() as Json;
    const realtime = (await call(p, 'POST', '/quotes', sending({ sourceType: 'REALTIME_FUNDING', currency: 'USD' }, toAccount(bob.accountId), 1_000))).json() as Json;
    expect((await call(p, 'DELETE', `/customers/${bob.customerId}`)).statusCode).toBe(200);

    expectEnvelope(await call(p, 'POST', `/quotes/${book.id}/execute`), 410, 'CUSTOMER_DELETED');
    expect((await call(p, 'POST', '/sandbox/send', { quoteId: realtime.id, currencyCode: 'USD' })).json()).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE', refund: { status: 'COMPLETED' } });
    const deposit = expectEnvelope(await call(p, 'POST', '/sandbox/deposits', { reference, amount: 500 }), 409, 'CONFLICT');
    expect(deposit.details).toEqual({ reason: 'CUSTOMER_DELETED', accountId: bob.accountId, customerId: bob.customerId });
    expect(deposit.message).toContain('deleted customer');
    expect(expectEnvelope(await call(p, 'POST', `/sandbox/internal-accounts/${bob.accountId}/fund`, { amount: 500 }), 409, 'CONFLICT').details).toMatchObject({ reason: 'CUSTOMER_DELETED' });
    expectEnvelope(
      await call(p, 'POST', '/sandbox/uma/receive', { senderUmaAddress: '$alice@vasp.example', customerId: bob.customerId, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 500 }),
      404,
      'USER_NOT_FOUND',
    );
    await drainJobs(ctx);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 10_000, total: 10_000 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('money pulled in', () => {
  it('a collecting transfer-in is not cancelled, refunded or spent; a completed one is sent back once', async () => {
    const p = await ctx.newPlatform();
    const ann = await readySender(ctx, p, 0);
    const beneficiary = await customerUsdAccount(ctx, p, ann.customerId, '77000001');
    // Suffix 005: collecting for 30 seconds, then not collected.
    const slowBank = await pullable(p, ann.customerId, '77000005');
    const slow = (await call(p, 'POST', '/transfer-in', { source: { accountId: slowBank }, destination: { accountId: ann.accountId }, amount: 10_000 })).json() as Json;
    await drainJobs(ctx);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 0, total: 10_000 });
    const cancel = expectEnvelope(await call(p, 'POST', `/transactions/${slow.id}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
    expect(cancel.message).toContain('incoming payment');
    expectEnvelope(await call(p, 'POST', `/sandbox/transactions/${slow.id}/refund`), 409, 'CONFLICT');
    expect(expectEnvelope(await call(p, 'POST', '/quotes', sending(fromAccount(ann.accountId), toAccount(beneficiary), 5_000, { immediatelyExecute: true })), 400, 'AMOUNT_OUT_OF_RANGE').details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE' });
    await call(p, 'POST', '/sandbox/clock/advance', { seconds: 60 });
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/transactions/${slow.id}`)).json() as Json).status).toBe('FAILED');
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 0, total: 0 });

    const bank = await pullable(p, ann.customerId, '77000009');
    const pulled = (await call(p, 'POST', '/transfer-in', { source: { accountId: bank }, destination: { accountId: ann.accountId }, amount: 10_000 })).json() as Json;
    await drainJobs(ctx);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 10_000, total: 10_000 });
    expect((await call(p, 'POST', `/sandbox/transactions/${pulled.id}/refund`)).statusCode).toBe(200);
    expectEnvelope(await call(p, 'POST', `/sandbox/transactions/${pulled.id}/refund`), 409, 'CONFLICT');
    await drainJobs(ctx);
    expectEnvelope(await call(p, 'POST', `/sandbox/transactions/${pulled.id}/refund`), 409, 'CONFLICT');
    expect(((await call(p, 'GET', `/transactions/${pulled.id}`)).json() as Json).status).toBe('REFUNDED');
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 0, total: 0 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});
