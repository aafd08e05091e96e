import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, eventTypes, paymentInput, platformFundedSender, platformUsdBalances, startPayment, type Json } from '../helpers/payments.js';

/**
 * The production rail provider's answers are money: ACCEPTED/REJECTED to a payout's hand-over,
 * PENDING/COMPLETED/FAILED to its status, a failure always with a known failureReason
 * (docs/payments.md, the rail-provider contract). An answer outside it — not JSON, a status the
 * call does not have, a failure without a reason Corridor knows — is the provider failing (503
 * inside the job): the payment neither completes nor fails on it, the debit stays where it is,
 * and the job asks again until the provider answers within the contract.
 */
let ctx: TestContext;
let server: Server;
const answers: Record<string, string> = {};
const HAND_OVER = '/rails/payouts';
const STATUS = '/rails/payouts/status';

beforeAll(async () => {
  server = createServer(async (request, response) => {
    for await (const _chunk of request);
    response.setHeader('content-type', 'application/json');
    response.end(answers[request.url!] ?? JSON.stringify({ deposits: [], nextCursor: null }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ctx = await createTestContext({ env: { CORRIDOR_RAILS_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rails`, CORRIDOR_RAILS_TOKEN: 'rail-secret' } });
}, 120_000);
afterAll(async () => {
  await ctx?.close();
  server?.close();
});
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

/** Runs the payment's jobs through a few retries (each an hour apart on the clock). */
async function retryForHours(hours: number) {
  for (let i = 0; i < hours; i++) {
    await drainJobs(ctx);
    ctx.clock.advance(3_600_000);
  }
  await drainJobs(ctx);
}

const offContract: Array<[string, string, string]> = [
  ['the hand-over answered with text that is not JSON', HAND_OVER, 'accepted!'],
  ['the hand-over answered COMPLETED, a status it does not have', HAND_OVER, JSON.stringify({ status: 'COMPLETED' })],
  ['the hand-over REJECTED without a failureReason', HAND_OVER, JSON.stringify({ status: 'REJECTED' })],
  ['the hand-over REJECTED with a failureReason Corridor does not know', HAND_OVER, JSON.stringify({ status: 'REJECTED', failureReason: 'SOMETHING_ELSE' })],
  ['the status answered null', STATUS, 'null'],
  ['the status answered ACCEPTED, a status it does not have', STATUS, JSON.stringify({ status: 'ACCEPTED' })],
  ['the status FAILED without a failureReason', STATUS, JSON.stringify({ status: 'FAILED' })],
];

describe('a production rail provider answering outside its contract', () => {
  it.each(offContract)('%s: the payment stays PROCESSING with its debit, until an answer within the contract settles it', async (_why, path, odd) => {
    const p = await ctx.newPlatform('production');
    const sender = await platformFundedSender(ctx, p, 50_000);
    answers[HAND_OVER] = JSON.stringify({ status: 'ACCEPTED' });
    answers[STATUS] = JSON.stringify({ status: 'PENDING' });
    answers[path] = odd;
    const input = paymentInput(p, sender);
    await startPayment(ctx, input);
    await retryForHours(3);

    const stuck = (await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json;
    expect(stuck.status).toBe('PROCESSING');
    expect(stuck.refund).toBeUndefined();
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000 - 10_075, total: 50_000 - 10_075 });

    // Within the contract again: the payment completes once, from the same debit.
    answers[HAND_OVER] = JSON.stringify({ status: 'ACCEPTED' });
    answers[STATUS] = JSON.stringify({ status: 'COMPLETED' });
    await retryForHours(2);
    expect(((await call(ctx, p, 'GET', `/transactions/${input.transactionId}`)).json() as Json).status).toBe('COMPLETED');
    expect(await platformUsdBalances(ctx, p)).toEqual({ available: 50_000 - 10_075, total: 50_000 - 10_075 });
    const events = await eventTypes(ctx, input.transactionId);
    expect(events.filter((t) => t === 'OUTGOING_PAYMENT.COMPLETED')).toHaveLength(1);
    expect(events).not.toContain('OUTGOING_PAYMENT.FAILED');
  });
});
