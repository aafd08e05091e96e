import { InMemoryNonceValidator, PayReqResponse, PubKeyResponse, verifyPayReqResponseSignature } from '@uma-sdk/core';
import bolt11 from 'bolt11';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectEnvelope } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { receivingWorld, REGTEST } from '../helpers/uma-receiving.js';

/**
 * The receiving side crediting an incoming UMA payment: the platform's decision (200, 202 then
 * approve or reject), the invoice presented at the node (once, concurrently, after the receiver
 * was deleted), and the payee data answered. The sender is a VASP played with the SDK.
 */
const domain = 'pay.receiver.test';
const { world, call, newReceiver, postPayRequest, payInvoice } = receivingWorld(domain);

async function incomingOf(invoice: string) {
  const hash = bolt11.decode(invoice, REGTEST).tagsObject.payment_hash!;
  const payment = await world.b.handle.db.selectFrom('uma_incoming_payments').selectAll().where('payment_hash', '=', hash).executeTakeFirstOrThrow();
  const transaction = await world.b.handle.db.selectFrom('transactions').selectAll().where('id', '=', payment.transaction_id!).executeTakeFirstOrThrow();
  return { payment, transaction, hash };
}

/** The ledger transactions that credited the incoming payment `transactionUuid`. */
async function creditsOf(transactionUuid: string) {
  return world.b.handle.db.selectFrom('ledger_transactions').select('id').where('reference', '=', `transaction:${transactionUuid}:credit`).execute();
}

/** The INCOMING_PAYMENT.PENDING question about `receiver`'s payment, once the platform has been asked. */
async function askedAbout(receiver: { umaAddress: string }) {
  for (;;) {
    const asked = world.hooks.of('INCOMING_PAYMENT.PENDING').find((w) => (w.body.data?.destination as { umaAddress?: string } | undefined)?.umaAddress === receiver.umaAddress);
    if (asked) return asked.body.data!.id as string;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('an incoming UMA payment credited at the node', () => {
  it('several presentations of one invoice at once credit the receiver exactly once, each with the same preimage', async () => {
    const receiver = await newReceiver('concurrent');
    const answer = PayReqResponse.fromJson((await postPayRequest(receiver)).body);
    const paid = await Promise.all(Array.from({ length: 4 }, () => payInvoice(answer.pr)));
    for (const response of paid) expect(response.statusCode, response.body).toBe(200);
    const preimages = new Set(paid.map((r) => (r.json() as { preimage: string }).preimage));
    expect(preimages.size).toBe(1);
    const { transaction, payment, hash } = await incomingOf(answer.pr);
    expect(createHash('sha256').update(Buffer.from([...preimages][0]!, 'hex')).digest('hex')).toBe(hash);
    expect([transaction.status, payment.status]).toEqual(['COMPLETED', 'COMPLETED']);
    expect(await creditsOf(transaction.id)).toHaveLength(1);
    const completed = await world.b.handle.db
      .selectFrom('events')
      .select('id')
      .where('type', '=', 'INCOMING_PAYMENT.COMPLETED')
      .where('resource_id', '=', `Transaction:${transaction.id}`)
      .execute();
    expect(completed).toHaveLength(1);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('an invoice of a receiver deleted since it was issued credits nobody: 409, the payment FAILED', async () => {
    const receiver = await newReceiver('deleted');
    const answer = PayReqResponse.fromJson((await postPayRequest(receiver)).body);
    expect((await call('DELETE', `/customers/${receiver.id}`)).statusCode).toBe(200);
    expect(expectEnvelope(await payInvoice(answer.pr), 409, 'CONFLICT').details).toEqual({ reason: 'PAYMENT_NOT_PENDING' });
    const { transaction } = await incomingOf(answer.pr);
    expect([transaction.status, transaction.failure_reason]).toEqual(['FAILED', 'OFFRAMP_FAILED']);
    expect(await creditsOf(transaction.id)).toEqual([]);
    // Presented again, still refused; nothing moves.
    expectEnvelope(await payInvoice(answer.pr), 409, 'CONFLICT');
    expect(await creditsOf(transaction.id)).toEqual([]);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('202, then the platform approves through the API: the invoice is answered and, paid, credits the receiver', async () => {
    const receiver = await newReceiver('async-approve');
    world.hooks.answer = () => ({ status: 202 });
    const pending = postPayRequest(receiver);
    const approved = await call('POST', `/transactions/${await askedAbout(receiver)}/approve`, {});
    expect(approved.statusCode, approved.body).toBe(200);
    const response = await pending;
    expect(response.statusCode, response.body).toBe(200);
    const answer = PayReqResponse.fromJson(response.body);
    expect((await payInvoice(answer.pr)).statusCode).toBe(200);
    const { transaction } = await incomingOf(answer.pr);
    expect(transaction.status).toBe('COMPLETED');
    expect(await creditsOf(transaction.id)).toHaveLength(1);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('202, the receiver deleted, then approved: USER_NOT_READY, no invoice, the payment FAILED OFFRAMP_FAILED', async () => {
    const receiver = await newReceiver('deleted-while-deciding');
    world.hooks.answer = () => ({ status: 202 });
    const pending = postPayRequest(receiver);
    const transactionId = await askedAbout(receiver);
    expect((await call('DELETE', `/customers/${receiver.id}`)).statusCode).toBe(200);
    const approved = await call('POST', `/transactions/${transactionId}/approve`, {});
    expect(approved.json()).toMatchObject({ status: 'FAILED', failureReason: 'OFFRAMP_FAILED' });
    expectEnvelope(await pending, 403, 'USER_NOT_READY');
    const uuid = transactionId.slice('Transaction:'.length);
    expect(await world.b.handle.db.selectFrom('uma_incoming_payments').select('id').where('transaction_id', '=', uuid).execute()).toEqual([]);
    expect(await creditsOf(uuid)).toEqual([]);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('202, then the platform rejects through the API: SENDER_NOT_ACCEPTED, no invoice, the payment REJECTED', async () => {
    const receiver = await newReceiver('async-reject');
    world.hooks.answer = () => ({ status: 202 });
    const pending = postPayRequest(receiver);
    const transactionId = await askedAbout(receiver);
    expect((await call('POST', `/transactions/${transactionId}/reject`, {})).statusCode).toBe(200);
    expectEnvelope(await pending, 400, 'SENDER_NOT_ACCEPTED');
    const transaction = await world.b.handle.db.selectFrom('transactions').selectAll().where('id', '=', transactionId.slice('Transaction:'.length)).executeTakeFirstOrThrow();
    expect([transaction.status, transaction.failure_reason]).toEqual(['REJECTED', 'COMPLIANCE_REJECTED']);
    expect(await world.b.handle.db.selectFrom('uma_incoming_payments').select('id').where('transaction_id', '=', transaction.id).execute()).toEqual([]);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('a platform without a webhook endpoint: SERVICE_SWITCH_ERROR, the payment FAILED PAYMENT_APPROVAL_WEBHOOK_ERROR, nothing credited', async () => {
    const receiver = await newReceiver('no-webhook');
    expect((await call('PATCH', '/config', { webhookEndpoint: null })).statusCode).toBe(200);
    try {
      expectEnvelope(await postPayRequest(receiver), 500, 'SERVICE_SWITCH_ERROR');
    } finally {
      expect((await call('PATCH', '/config', { webhookEndpoint: world.hooks.url })).statusCode).toBe(200);
    }
    const transaction = await world.b.handle.db.selectFrom('transactions').selectAll().where('type', '=', 'INCOMING').orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow();
    expect([transaction.status, transaction.failure_reason, transaction.destination]).toEqual([
      'FAILED',
      'PAYMENT_APPROVAL_WEBHOOK_ERROR',
      expect.objectContaining({ umaAddress: receiver.umaAddress }),
    ]);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it("the platform's receiverCustomerInfo cannot replace the payee's identifier or its signed compliance data", async () => {
    const receiver = await newReceiver('payee-data');
    world.hooks.answer = () => ({ status: 200, body: JSON.stringify({ receiverCustomerInfo: { IDENTIFIER: '$someone@else.test', COMPLIANCE: 'none', FULL_NAME: 'Receiving Person' } }) });
    const response = await postPayRequest(receiver, { requestedPayeeData: { name: { mandatory: true } } });
    expect(response.statusCode, response.body).toBe(200);
    const answer = PayReqResponse.fromJson(response.body);
    expect(answer.payeeData).toMatchObject({ identifier: receiver.umaAddress.toLowerCase(), name: 'Receiving Person' });
    const keys = PubKeyResponse.fromJson((await world.b.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
    expect(await verifyPayReqResponseSignature(answer, `$alice@${world.fake.domain}`, receiver.umaAddress.toLowerCase(), keys, new InMemoryNonceValidator(0))).toBe(true);
  });

  // Last in the file: it moves the receiving platform's test clock, which does not go back.
  it("the receiving platform's sandbox clock expires its unpaid invoices: refused 409 at the node, failed QUOTE_EXPIRED by the job", async () => {
    const receiver = await newReceiver('test-clock');
    const presented = PayReqResponse.fromJson((await postPayRequest(receiver)).body);
    const unpaid = PayReqResponse.fromJson((await postPayRequest(receiver)).body);
    const runDueJobs = async () => {
      while ((await world.b.jobs.runDue(50)) > 0);
    };
    // 599 of the invoice's 600 seconds: both still payable, the expiry job not yet due.
    expect((await call('POST', '/sandbox/clock/advance', { seconds: 599 })).statusCode).toBe(200);
    await runDueJobs();
    expect((await incomingOf(unpaid.pr)).payment.status).toBe('PENDING');
    expect((await call('POST', '/sandbox/clock/advance', { seconds: 2 })).statusCode).toBe(200);
    // Presented past its expiry before the job ran: it expires then.
    expect(expectEnvelope(await payInvoice(presented.pr), 409, 'CONFLICT').details).toEqual({ reason: 'INVOICE_EXPIRED' });
    await runDueJobs();
    for (const answer of [presented, unpaid]) {
      const { payment, transaction } = await incomingOf(answer.pr);
      expect([payment.status, transaction.status, transaction.failure_reason]).toEqual(['EXPIRED', 'FAILED', 'QUOTE_EXPIRED']);
      expect(await creditsOf(transaction.id)).toEqual([]);
    }
    expectEnvelope(await payInvoice(unpaid.pr), 409, 'CONFLICT');
    await expectLedgerConsistent(world.b.handle.db);
  });
});
