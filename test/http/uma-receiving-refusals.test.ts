import { PayReqResponse } from '@uma-sdk/core';
import bolt11 from 'bolt11';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as umaRepo from '../../src/modules/uma/repo.js';
import { expectEnvelope } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { receivingWorld, REGTEST } from '../helpers/uma-receiving.js';

/**
 * The receiving side's pay requests that must not end in a payable invoice, or not leave a
 * payment behind: a failure between the platform's approval and the invoice's record, a
 * receiver compliance rejected, a settlement layer this node does not offer. The sender is a
 * VASP played with the SDK.
 */
const domain = 'refusals.receiver.test';
const { world, call, newReceiver, postPayRequest, payInvoice } = receivingWorld(domain);

/** The INCOMING transactions to `receiver`, oldest first. */
async function transactionsTo(receiver: { id: string }) {
  return world.b.handle.db
    .selectFrom('transactions')
    .selectAll()
    .where('type', '=', 'INCOMING')
    .where('customer_id', '=', receiver.id.slice('Customer:'.length))
    .orderBy('id')
    .execute();
}

async function invoicesOf(receiver: { id: string }) {
  return world.b.handle.db.selectFrom('uma_incoming_payments').selectAll().where('customer_id', '=', receiver.id.slice('Customer:'.length)).execute();
}

async function eventsOf(transactionUuid: string) {
  const rows = await world.b.handle.db.selectFrom('events').select('type').where('resource_id', '=', `Transaction:${transactionUuid}`).orderBy('id').execute();
  return rows.map((r) => r.type);
}

/** Runs every due job until none is left. */
async function runDueJobs() {
  while ((await world.b.jobs.runDue()) > 0);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a failure between the platform approval and the invoice record', () => {
  it('fails the INCOMING transaction PAY_REQUEST_FAILED at once; the sender sending again gets an invoice that pays', async () => {
    const receiver = await newReceiver('record-fails');
    vi.spyOn(umaRepo, 'insertIncomingPayment').mockRejectedValueOnce(new Error('connection terminated unexpectedly'));
    expectEnvelope(await postPayRequest(receiver), 500, 'INTERNAL_ERROR');
    const [given] = await transactionsTo(receiver);
    expect([given!.status, given!.failure_reason]).toEqual(['FAILED', 'PAY_REQUEST_FAILED']);
    expect(await eventsOf(given!.id)).toEqual(['INCOMING_PAYMENT.FAILED']);
    expect(await invoicesOf(receiver)).toEqual([]);

    const retried = await postPayRequest(receiver);
    expect(retried.statusCode, retried.body).toBe(200);
    expect((await payInvoice(PayReqResponse.fromJson(retried.body).pr)).statusCode).toBe(200);
    const [, paid] = await transactionsTo(receiver);
    expect(paid!.status).toBe('COMPLETED');
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('when giving up fails too (the database is gone), the job queued with the transaction fails it at the answer deadline', async () => {
    const receiver = await newReceiver('record-and-give-up-fail');
    vi.spyOn(umaRepo, 'insertIncomingPayment').mockRejectedValueOnce(new Error('connection terminated unexpectedly'));
    vi.spyOn(world.b.app.incomingPayments, 'fail').mockRejectedValueOnce(new Error('connection terminated unexpectedly'));
    expectEnvelope(await postPayRequest(receiver), 500, 'INTERNAL_ERROR');
    vi.restoreAllMocks();
    const [stuck] = await transactionsTo(receiver);
    expect(stuck!.status).toBe('PENDING');
    // Not before the deadline: an invoice may still be on its way.
    await runDueJobs();
    expect((await transactionsTo(receiver))[0]!.status).toBe('PENDING');

    world.b.clock.advance(10 * 60 * 1000);
    await runDueJobs();
    const [failed] = await transactionsTo(receiver);
    expect([failed!.status, failed!.failure_reason]).toEqual(['FAILED', 'PAY_REQUEST_FAILED']);
    expect(await eventsOf(failed!.id)).toEqual(['INCOMING_PAYMENT.FAILED']);
    await expectLedgerConsistent(world.b.handle.db);
  });

  it('an approval that came after the answer deadline records no invoice: SERVICE_SWITCH_ERROR, the transaction FAILED', async () => {
    const receiver = await newReceiver('approved-too-late');
    world.hooks.answer = () => {
      world.b.clock.advance(5 * 60 * 1000);
      return { status: 200, body: '{}' };
    };
    expect(expectEnvelope(await postPayRequest(receiver), 500, 'SERVICE_SWITCH_ERROR').details).toEqual({ reason: 'ANSWER_DEADLINE_PASSED' });
    const [late] = await transactionsTo(receiver);
    expect([late!.status, late!.failure_reason]).toEqual(['FAILED', 'PAY_REQUEST_FAILED']);
    expect(await invoicesOf(receiver)).toEqual([]);
    // The job finds it already ended: nothing more happens.
    await runDueJobs();
    expect(await eventsOf(late!.id)).toEqual(['INCOMING_PAYMENT.FAILED']);
  });

  it('a pay request whose invoice was recorded is left to its invoice by that job: paid, it credits the receiver', async () => {
    const receiver = await newReceiver('recorded');
    const answer = await postPayRequest(receiver);
    expect(answer.statusCode, answer.body).toBe(200);
    // Past the answer deadline, before the invoice expires (600 s).
    world.b.clock.advance(5 * 60 * 1000);
    await runDueJobs();
    expect((await transactionsTo(receiver))[0]!.status).toBe('PENDING');
    expect((await payInvoice(PayReqResponse.fromJson(answer.body).pr)).statusCode).toBe(200);
    expect((await transactionsTo(receiver))[0]!.status).toBe('COMPLETED');
  });
});

describe('a receiver whose KYC compliance rejected', () => {
  it('is refused 403 USER_NOT_READY: no transaction, no invoice', async () => {
    const receiver = await newReceiver('kyc-rejected');
    expect((await call('PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    try {
      const rejected = await call('PATCH', `/customers/${receiver.id}`, { customerType: 'INDIVIDUAL', kycStatus: 'REJECTED' });
      expect(rejected.statusCode, rejected.body).toBe(200);
    } finally {
      expect((await call('PATCH', '/customers/settings', { platformKyc: false })).statusCode).toBe(200);
    }
    expectEnvelope(await postPayRequest(receiver), 403, 'USER_NOT_READY');
    expect(await transactionsTo(receiver)).toEqual([]);
    expect(await invoicesOf(receiver)).toEqual([]);
    // Nor is the platform asked to approve a payment to it.
    expect(world.hooks.of('INCOMING_PAYMENT.PENDING').filter((w) => JSON.stringify(w.body.data).includes(receiver.umaAddress))).toEqual([]);
  });
});

describe("a pay request's settlement (UMA 1.x)", () => {
  it('naming a layer or asset this node does not offer is refused 400 INVALID_REQUEST_FORMAT: no transaction, no invoice', async () => {
    const receiver = await newReceiver('settlement-other');
    for (const settlement of [
      { layer: 'spark', assetIdentifier: 'btkn1example' },
      { layer: 'spark', assetIdentifier: 'BTC' },
      { layer: 'ln', assetIdentifier: 'USDT' },
    ]) {
      const refused = expectEnvelope(await postPayRequest(receiver, { settlement }), 400, 'INVALID_REQUEST_FORMAT');
      expect(refused.details).toEqual({ field: 'settlement', supportedSettlement: [{ layer: 'ln', assetIdentifier: 'BTC' }] });
    }
    expect(await transactionsTo(receiver)).toEqual([]);
    expect(await invoicesOf(receiver)).toEqual([]);
  });

  it('naming Lightning in BTC is answered with a Lightning invoice, as is naming none', async () => {
    const receiver = await newReceiver('settlement-ln');
    for (const settlement of [{ layer: 'ln', assetIdentifier: 'BTC' }, undefined]) {
      const answered = await postPayRequest(receiver, { settlement });
      expect(answered.statusCode, answered.body).toBe(200);
      expect(bolt11.decode(PayReqResponse.fromJson(answered.body).pr, REGTEST).millisatoshis).toBeTruthy();
    }
    expect(await invoicesOf(receiver)).toHaveLength(2);
  });
});
