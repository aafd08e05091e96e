import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LONG_PENDING_SECONDS } from '../../src/modules/uma/simulated-vasp.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * A payment's expectedSettlementAt follows the time its rail names: the hosted sandbox's
 * `$pending.long.usd` receiver holds a payment in flight for an hour of the platform's time, and
 * the payment shows that hour, not the UMA rail's usual minute (an instant already past while it
 * was still in flight).
 */
let ctx: TestContext;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const drain = async () => {
  for (let i = 0; i < 50; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
  throw new Error('jobs kept coming');
};

const platformNow = async (platform: TestPlatform) => Date.parse((await call(platform, 'GET', '/sandbox/clock')).json().now);

const advance = async (platform: TestPlatform, seconds: number) => {
  const moved = await call(platform, 'POST', '/sandbox/clock/advance', { seconds });
  expect(moved.statusCode, moved.body).toBe(200);
  await drain();
};

beforeAll(async () => {
  ctx = await createTestContext();
}, 300_000);

// The SDK stamps the messages it signs with the system time; the manual clock that judges them follows it.
beforeEach(() => ctx.clock.set(new Date()));

afterAll(() => ctx?.close());

/** A sandbox platform whose customer pays $10.00 to `address` (lookup, quote, execute); the transaction id. */
async function payUma(address: string): Promise<{ platform: TestPlatform; transactionId: string }> {
  const platform = await ctx.newPlatform('sandbox');
  const usd = { currencyCode: 'USD', minAmount: 1, maxAmount: 10_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
  expect((await call(platform, 'PATCH', '/config', { umaDomain: 'ci-platform.example', supportedCurrencies: [usd] })).statusCode).toBe(200);
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const created = await call(platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'sender', fullName: 'Casey Sender', currencies: ['USD'], endUserTermsConsent: consent });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = created.json().id as string;
  const accountId = (await call(platform, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json().data[0].id as string;
  expect((await call(platform, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount: 1_000_000 })).statusCode).toBe(200);
  const looked = await call(platform, 'GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${customerId}`);
  expect(looked.statusCode, looked.body).toBe(200);
  const quoted = await call(platform, 'POST', '/quotes', {
    lookupId: looked.json().lookupId,
    source: { sourceType: 'ACCOUNT', accountId },
    destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency: 'USD' },
    lockedCurrencySide: 'RECEIVING',
    lockedCurrencyAmount: 1_000,
  });
  expect(quoted.statusCode, quoted.body).toBe(201);
  const quote = quoted.json() as { id: string; transactionId: string };
  const executed = await call(platform, 'POST', `/quotes/${quote.id}/execute`, {});
  expect(executed.statusCode, executed.body).toBe(200);
  await drain();
  return { platform, transactionId: quote.transactionId };
}

describe('expectedSettlementAt of a payment its rail holds longer than usual', () => {
  it(`$pending.long.usd shows the receiver's settlement time (${LONG_PENDING_SECONDS} s), never an instant already past, and completes then`, async () => {
    const executedAt = Date.now();
    const { platform, transactionId } = await payUma('$pending.long.usd@sandbox.uma.money');
    const read = async () => (await call(platform, 'GET', `/transactions/${transactionId}`)).json();
    const shown = await read();
    expect(shown.status).toBe('PROCESSING');
    const expected = Date.parse(shown.expectedSettlementAt);
    // The node's time counts from its invoice (whole seconds), issued at the quote.
    expect(expected).toBeGreaterThan(executedAt + (LONG_PENDING_SECONDS - 5) * 1000);
    expect(expected).toBeLessThanOrEqual(executedAt + LONG_PENDING_SECONDS * 1000);

    // Past the UMA rail's usual minute the payment is asked again and still shows the node's time.
    await advance(platform, 61);
    const later = await read();
    expect(later).toMatchObject({ status: 'PROCESSING', expectedSettlementAt: shown.expectedSettlementAt });
    expect(Date.parse(later.expectedSettlementAt)).toBeGreaterThan(await platformNow(platform));
    // A counterparty's time is an estimate, not a promise: the node is still asked at the usual poll (a minute), not only at its time.
    const settling = await ctx.handle.db.selectFrom('jobs').select('run_at').where('platform_id', '=', platform.uuid).where('kind', '=', 'payments.settle').where('status', '=', 'queued').executeTakeFirstOrThrow();
    expect(settling.run_at.getTime() - ctx.clock.now().getTime()).toBeLessThanOrEqual(60_000);

    await advance(platform, LONG_PENDING_SECONDS - 60);
    const settled = await read();
    expect(settled.status).toBe('COMPLETED');
    expect(Date.parse(settled.settledAt)).toBeGreaterThanOrEqual(expected);
  });

  it('$success.usd keeps the UMA rail’s usual time', async () => {
    const before = Date.now();
    const { platform, transactionId } = await payUma('$success.usd@sandbox.uma.money');
    const shown = (await call(platform, 'GET', `/transactions/${transactionId}`)).json();
    expect(Date.parse(shown.expectedSettlementAt) - before).toBeLessThanOrEqual(60_000 + 10_000);
    await advance(platform, 61);
    expect((await call(platform, 'GET', `/transactions/${transactionId}`)).json().status).toBe('COMPLETED');
  });
});
