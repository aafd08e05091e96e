import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, fundedCustomer, paymentInput, startPayment } from '../helpers/payments.js';

/** POST /transactions/{id}/cancel's `reason` is documented as kept in the log: nothing else stores it. */
const logLines: string[] = [];
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
afterAll(() => ctx.close());

const cancelLines = () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === 'payment cancelled');

describe('the cancel reason', () => {
  it('is logged with the transaction once the cancel has committed, and not for a refused cancel', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 50_000);
    const input = paymentInput(p, customer);
    await startPayment(ctx, input);
    const cancelled = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`, { reason: 'REQUESTED_AFTER_HOURS' });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelLines()).toEqual([expect.objectContaining({ platformId: p.uuid, transactionId: input.transactionId, reason: 'REQUESTED_AFTER_HOURS' })]);
    const refused = await call(ctx, p, 'POST', `/transactions/${input.transactionId}/cancel`, { reason: 'again' });
    expect(refused.statusCode).toBe(409);
    expect(cancelLines()).toHaveLength(1);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
