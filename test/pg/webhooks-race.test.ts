/**
 * Webhook rows two transactions reach at once, on PostgreSQL (webhooks/README.md, Approvals): an
 * API decision about an incoming payment while another decision of the same question (the
 * deadline, the webhook's answer) holds its row. The API's read of the open question is FOR
 * UPDATE: it queues behind the other decision and, once that commits, finds nothing open (409),
 * where a plain read took the question as still open and the decision found no row to decide
 * (a 500).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecidedApproval } from '../../src/modules/webhooks/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { AppError } from '../../src/platform/errors.js';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { holdLocks, openSide, started, waitingFor } from '../helpers/lock-queue.js';
import { approvalQuestion, untilApprovalWindowOpen, WebhookReceiver } from '../helpers/webhook-receiver.js';

const CONSUMER = 'race-incoming-payments';

describe.runIf(onPostgres)('an API decision while another decision of the same approval question holds its row', () => {
  let ctx: TestContext;
  let receiver: WebhookReceiver;
  const applied: DecidedApproval[] = [];
  beforeAll(async () => {
    ctx = await createTestContext();
    ctx.app.webhooks.approvals.registerConsumer(CONSUMER, async (_trx, decided) => {
      applied.push(decided);
    });
    receiver = await WebhookReceiver.start();
    receiver.answer = () => ({ status: 202 });
  });
  afterAll(async () => {
    await receiver.close();
    await ctx.close();
  });

  it('waits for it, then finds the question decided: 409 TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL, the other decision stands', async () => {
    const p = await ctx.newPlatform();
    expect((await ctx.app.inject({ method: 'PATCH', url: '/2025-10-13/config', headers: { authorization: p.auth }, payload: { webhookEndpoint: receiver.url } })).statusCode).toBe(200);
    const asked = approvalQuestion(p.uuid, CONSUMER);
    const waiting = ctx.app.webhooks.approvals.request(asked);
    await untilApprovalWindowOpen(ctx.handle.db, asked.transactionId, 5_000);

    // The side decides the question (as the deadline does) and holds the row until released.
    const side = await openSide(ctx.handle.db, 2);
    const held = await holdLocks(side.db, (trx) =>
      sql`update webhook_approvals set status = 'TIMED_OUT', decided_via = 'DEADLINE', decided_at = now(), outcome = '{}'::jsonb
          where transaction_id = ${asked.transactionId} and status = 'PENDING'`.execute(trx),
    );
    try {
      const deciding = started(
        withTx(ctx.handle.db, (trx) => ctx.app.webhooks.approvals.decidePendingApproval(trx, p.uuid, asked.transactionId, { status: 'APPROVED' })).then(
          (decided) => ({ statusCode: 200, body: JSON.stringify(decided) }),
          (error: unknown) => ({ statusCode: error instanceof AppError ? 409 : 500, body: error instanceof AppError ? error.code : String(error) }),
        ),
      );
      await waitingFor(side.db, [held.pid], deciding);
      await held.release();
      expect(await deciding.request).toEqual({ statusCode: 409, body: 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL' });
      expect(await waiting).toMatchObject({ transactionId: asked.transactionId, via: 'DEADLINE', decision: { status: 'TIMED_OUT' } });
      // The API's decision applied nothing.
      expect(applied).toEqual([]);
    } finally {
      await held.release();
      await side.close();
    }
  });
});
