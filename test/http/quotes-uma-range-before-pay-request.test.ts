import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setReviewStatus } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';

/**
 * A pay request discloses the sender to the receiver's VASP and opens a payment there, so a UMA
 * quote Corridor would refuse anyway sends none (quotes README, "Destinations"; docs/uma.md). A
 * SENDING lock's total is the locked amount itself: outside the platform's minAmount–maxAmount
 * for the sending currency (here USD 1.00–50.00), or above the corridor's single-transaction
 * maximum (here USD 30.00; USD 35.00 to MXN) for the receiving currency named, or else the
 * receiver's first, it is refused before the receiver is asked, as the source and the sender are.
 */
let ctx: TestContext;
let fake: FakeVasp;
let sender: TestPlatform;
let payRequests = 0;
const currencyConfig = (code: string, minAmount: number, maxAmount: number) => ({ currencyCode: code, minAmount, maxAmount, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: sender.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_MAX_TRANSACTION: JSON.stringify({ USD: 3_000, 'USD:MXN': 3_500 }) } });
  fake = await startFakeVasp();
  fake.payreq = async () => {
    payRequests++;
    return { status: 404, body: '{}' };
  };
  sender = await ctx.newPlatform();
  const configured = await call('PATCH', '/config', { umaDomain: 'sender.example', supportedCurrencies: [currencyConfig('USD', 100, 5_000)] });
  expect(configured.statusCode, configured.body).toBe(200);
}, 120_000);

// The SDK stamps what it signs with the system time; the manual clock that judges it follows.
beforeEach(() => {
  ctx.clock.set(new Date());
});

afterAll(async () => {
  fake?.server.closeAllConnections();
  await new Promise((resolve) => fake?.server.close(resolve));
  await ctx?.close();
});

let seq = 0;

/**
 * A ready USD sender, funded, and its quote to carol at the fake VASP (looked up first) for a SENDING lock of `amount`, in `currency` (null: none named);
 * `afterLookup` runs between the lookup and the quote.
 */
async function quoteToCarol(amount: number, currency: string | null = 'PHP', afterLookup?: (customerId: string) => Promise<void>) {
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `sam-${++seq}`, fullName: 'Sam Sender', endUserTermsConsent: consent });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as { id: string }).id;
  const accountId = ((await call('GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as { data: Array<{ id: string }> }).data[0]!.id;
  expect((await call('POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount: 100_000 })).statusCode).toBe(200);
  const address = `$carol@${fake.domain}`;
  const looked = await call('GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${customerId}`);
  expect(looked.statusCode, looked.body).toBe(200);
  await afterLookup?.(customerId);
  return call('POST', '/quotes', {
    lookupId: (looked.json() as { lookupId: string }).lookupId,
    source: { sourceType: 'ACCOUNT', accountId },
    destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, ...(currency === null ? {} : { currency }) },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: amount,
    immediatelyExecute: true,
  });
}

describe('a UMA quote whose SENDING amount Corridor refuses anyway', () => {
  it('within the range, the pay request goes out (here the receiver refuses it)', async () => {
    const before = payRequests;
    expectEnvelope(await quoteToCarol(1_000), 400, 'INVALID_RECEIVER');
    expect(payRequests).toBe(before + 1);
  });

  it.each([
    ['above maxAmount', 6_000],
    ['below minAmount', 99],
  ])('%s: 400 AMOUNT_OUT_OF_RANGE, and no pay request goes to the receiver’s VASP', async (_why, amount) => {
    const before = payRequests;
    const refused = expectEnvelope(await quoteToCarol(amount), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toMatchObject({ totalSendingAmount: amount, minAmount: 100, maxAmount: 5_000, currency: 'USD' });
    expect(payRequests).toBe(before);
    expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', sender.uuid).execute()).toEqual([]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('above the corridor’s maximum: 400 TRANSACTION_SIZE_LIMIT_EXCEEDED, and no pay request goes to the receiver’s VASP', async () => {
    const before = payRequests;
    const refused = expectEnvelope(await quoteToCarol(4_000), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
    expect(refused.details).toMatchObject({ totalSendingAmount: 4_000, limit: 3_000, currency: 'USD', corridor: 'USD:PHP' });
    expect(payRequests).toBe(before);
    expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', sender.uuid).execute()).toEqual([]);
  });

  it('without the receiving currency: the receiver’s first (PHP) decides the corridor, before the pay request', async () => {
    // Within USD:MXN's maximum but above PHP's (USD's own).
    const before = payRequests;
    const refused = expectEnvelope(await quoteToCarol(3_200, null), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
    expect(refused.details).toMatchObject({ totalSendingAmount: 3_200, limit: 3_000, currency: 'USD', corridor: 'USD:PHP' });
    expect(payRequests).toBe(before);
    expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', sender.uuid).execute()).toEqual([]);
  });

  it('a sender no longer approved since the lookup: 403 USER_NOT_READY, and no pay request goes to the receiver’s VASP', async () => {
    const before = payRequests;
    const onHold = (customerId: string) => withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, sender.uuid, parseId('Customer', customerId)!, 'HOLD')).then(() => undefined);
    expect(expectEnvelope(await quoteToCarol(1_000, 'PHP', onHold), 403, 'USER_NOT_READY').details).toMatchObject({ status: 'HOLD' });
    expect(payRequests).toBe(before);
    expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', sender.uuid).execute()).toEqual([]);
  });
});
