import { PayReqResponse } from '@uma-sdk/core';
import bolt11 from 'bolt11';
import { describe, expect, it } from 'vitest';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { receivingWorld, REGTEST } from '../helpers/uma-receiving.js';

/**
 * The platform decides one incoming payment twice: through the API while its endpoint is still
 * answering the INCOMING_PAYMENT.PENDING webhook, then by that answer. The first decision stands:
 * the late answer neither overrides it nor fails the payment it approved.
 */
const domain = 'late-answer.receiver.test';
const { world, call, newReceiver, postPayRequest, payInvoice } = receivingWorld(domain);

async function askedAbout(receiver: { umaAddress: string }): Promise<string> {
  for (;;) {
    const asked = world.hooks.of('INCOMING_PAYMENT.PENDING').find((w) => (w.body.data?.destination as { umaAddress?: string } | undefined)?.umaAddress === receiver.umaAddress);
    if (asked) return asked.body.data!.id as string;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('an approval webhook answered after the platform decided through the API', () => {
  it('approved through the API, then rejected by the slow answer: approved, the invoice issued and paid once', async () => {
    const receiver = await newReceiver('api-first');
    world.hooks.answer = () => ({ status: 403, body: JSON.stringify({ reason: 'too late to count' }), delayMs: 1_000 });
    const pending = postPayRequest(receiver);
    const transactionId = await askedAbout(receiver);
    const approved = await call('POST', `/transactions/${transactionId}/approve`, {});
    expect(approved.statusCode, approved.body).toBe(200);

    const response = await pending;
    expect(response.statusCode, response.body).toBe(200);
    const uuid = transactionId.slice('Transaction:'.length);
    const approval = await world.b.handle.db.selectFrom('webhook_approvals').selectAll().where('transaction_id', '=', transactionId).executeTakeFirstOrThrow();
    expect([approval.status, approval.decided_via]).toEqual(['APPROVED', 'API']);

    const invoice = PayReqResponse.fromJson(response.body).pr;
    expect((await payInvoice(invoice)).statusCode).toBe(200);
    const hash = bolt11.decode(invoice, REGTEST).tagsObject.payment_hash!;
    const payment = await world.b.handle.db.selectFrom('uma_incoming_payments').select(['status', 'transaction_id']).where('payment_hash', '=', hash).executeTakeFirstOrThrow();
    expect(payment).toEqual({ status: 'COMPLETED', transaction_id: uuid });
    expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
    const credits = await world.b.handle.db.selectFrom('ledger_transactions').select('id').where('reference', '=', `transaction:${uuid}:credit`).execute();
    expect(credits).toHaveLength(1);
    await expectLedgerConsistent(world.b.handle.db);
  });
});
