import { PayReqResponse } from '@uma-sdk/core';
import bolt11 from 'bolt11';
import { describe, expect, it } from 'vitest';
import { provisionCustomerAccounts } from '../../src/modules/internal-accounts/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, expectEnvelope } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { receivingWorld, REGTEST } from '../helpers/uma-receiving.js';

/**
 * The simulated Lightning node settles sandbox invoices only. A production receiver's invoice is
 * paid over Lightning itself: presented at `/uma/lightning/pay` (anonymous), it must not credit
 * the receiver, or whoever holds the invoice could make money arrive that nobody paid.
 */
const domain = 'node.receiver.test';
const { world, newReceiver, postPayRequest, payInvoice } = receivingWorld(domain);

describe('a production receiver’s invoice presented at the simulated node', () => {
  it('is 501 NOT_IMPLEMENTED: the payment stays PENDING, nothing is credited', async () => {
    // The production platform and its receiver, with an MXN account to credit.
    const bank = await world.b.newPlatform('production');
    const call = (method: 'POST' | 'PATCH', path: string, payload: unknown) =>
      world.b.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: bank.auth }, payload: payload as object });
    const mxn = { currencyCode: 'MXN', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING'] };
    expect((await call('PATCH', '/config', { umaDomain: 'bank.receiver.test', supportedCurrencies: [mxn] })).statusCode).toBe(200);
    const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'prod-receiver', fullName: 'Receiving Person', currencies: ['MXN'] });
    expect(created.statusCode, created.body).toBe(201);
    const customer = created.json() as { id: string; umaAddress: string };
    // Its accounts, as opened once its KYC is approved.
    const customerUuid = customer.id.slice('Customer:'.length);
    expect(await withTx(world.b.handle.db, (trx) => provisionCustomerAccounts(trx, world.b.clock, bank.uuid, customerUuid, null))).toBeGreaterThan(0);

    // An invoice of the node, recorded for the production receiver with its PENDING INCOMING
    // transaction: what a pay request from a (non-local) VASP to that receiver leaves behind.
    const answer = PayReqResponse.fromJson((await postPayRequest(await newReceiver('sandbox-twin'))).body);
    const hash = bolt11.decode(answer.pr, REGTEST).tagsObject.payment_hash!;
    const opened = await withTx(world.b.handle.db, (trx) =>
      world.b.app.incomingPayments.open(trx, {
        platformId: bank.uuid,
        customerId: customer.id,
        senderUmaAddress: `$alice@${world.fake.domain}`,
        receiverUmaAddress: customer.umaAddress,
        currency: 'MXN',
        amount: 50_000n,
        arrived: false,
      }),
    );
    await world.b.handle.db
      .updateTable('uma_incoming_payments')
      .set({ platform_id: bank.uuid, customer_id: customerUuid, receiver_uma_address: customer.umaAddress, transaction_id: opened.id })
      .where('payment_hash', '=', hash)
      .execute();

    expectEnvelope(await payInvoice(answer.pr), 501, 'NOT_IMPLEMENTED');
    const payment = await world.b.handle.db.selectFrom('uma_incoming_payments').select('status').where('payment_hash', '=', hash).executeTakeFirstOrThrow();
    expect(payment.status).toBe('PENDING');
    const transaction = await world.b.handle.db.selectFrom('transactions').select(['status', 'funded_amount']).where('id', '=', opened.id).executeTakeFirstOrThrow();
    expect(transaction.status).toBe('PENDING');
    expect(transaction.funded_amount === null || BigInt(transaction.funded_amount) === 0n).toBe(true);
    const credits = await world.b.handle.db.selectFrom('ledger_transactions').select('id').where('reference', '=', `transaction:${opened.id}:credit`).execute();
    expect(credits).toEqual([]);
    await expectLedgerConsistent(world.b.handle.db);
  });
});
