import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { DecidedApproval } from '../../src/modules/webhooks/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { IdParam } from '../../src/platform/http/schemas.js';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { approvalQuestion, WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * DESIGN §8: the process that asked the platform (and holds the sender's request open) is not
 * the one the platform's approve call reaches. The decision taken in the second process must end
 * the wait in the first, inside the approval window, and be applied once.
 */
const CONSUMER = 'scale-incoming-payments';
const applied: Array<{ app: string; decided: DecidedApproval }> = [];
let ctx: TestContext;

const consumer =
  (name: string): FastifyPluginAsync =>
  async (api) => {
    api.webhooks.approvals.registerConsumer(CONSUMER, async (_trx, decided) => void applied.push({ app: name, decided }));
    api.post<{ Params: { id: string } }>(
      '/test/transactions/:id/approve',
      { schema: { params: Type.Object({ id: IdParam('Transaction', 'TRANSACTION_NOT_FOUND', 'transaction') }) }, config: { permission: 'TRANSACT' } },
      async (request) => {
        const decided = await withTx(ctx.handle.db, (trx) =>
          api.webhooks.approvals.decidePendingApproval(trx, request.principal.platformId, request.params.id, { status: 'APPROVED' }),
        );
        return { status: decided.decision.status };
      },
    );
  };

describe.runIf(onPostgres)('an approval asked in one process and decided in another', () => {
  let second: App;
  let receiver: WebhookReceiver;
  let platform: TestPlatform;

  beforeAll(async () => {
    ctx = await createTestContext({ extraRoutes: consumer('first') });
    second = await ctx.secondApp({ extraRoutes: consumer('second') });
    receiver = await WebhookReceiver.start();
    platform = await ctx.newPlatform();
    const configured = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: platform.auth }, payload: { webhookEndpoint: receiver.url } });
    expect(configured.statusCode, configured.body).toBe(200);
  });
  afterAll(async () => {
    await receiver?.close();
    await ctx.close();
  });

  it('ends the first process’s wait with the decision the second took', async () => {
    receiver.answer = () => ({ status: 202 });
    const question = approvalQuestion(platform.uuid, CONSUMER);
    const { transactionId } = question;
    const waiting = ctx.app.webhooks.approvals.request(question);
    await expect.poll(() => receiver.received.filter((w) => w.body.type === 'INCOMING_PAYMENT.PENDING').length).toBe(1);

    const approved = await second.inject({ method: 'POST', url: `${BASE}/test/transactions/${transactionId}/approve`, headers: { authorization: platform.auth } });
    expect(approved.json()).toEqual({ status: 'APPROVED' });
    const decided = await waiting;
    expect(decided).toMatchObject({ transactionId, via: 'API', decision: { status: 'APPROVED' } });
    expect(applied).toEqual([{ app: 'second', decided }]);
  });
});
