import { Currency, getLnurlpResponse, getPayRequest, getPayReqResponse, getSignedLnurlpRequestUrl, KycStatus, LnurlpResponse, parseLnurlpRequest, PayReqResponse, PayRequest, PubKeyResponse } from '@uma-sdk/core';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bolt11, NETWORKS } from '../../src/modules/uma/invoices.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * UMA amounts are exact (modules/uma README, "Amounts"): on both sides of a payment, at amounts
 * where a double no longer counts millisatoshis, each rounded to the side its rule names. The
 * sandbox rates price MXN at 493.224932249322 msats per centavo (10^11 × 0.0000091 ÷ 1845, to 15
 * significant digits), USD at 9,100 msats per cent, EUR at 4,550,000/433 msats per cent.
 */
let ctx: TestContext;
let hooks: WebhookReceiver;
/** A VASP built on the UMA SDK: the sender of pay requests to Corridor, or the receiver Corridor pays. */
let fake: FakeVasp;
let sender: TestPlatform;
let bob: { id: string; umaAddress: string };
const RECEIVER_DOMAIN = 'receiver.example';
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

type Body = Record<string, unknown>;
interface Customer {
  id: string;
  accountId: string;
}

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const drain = async () => {
  for (let i = 0; i < 50; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
  throw new Error('jobs kept coming');
};
const currencyConfig = (code: string, types: string[], maxAmount = MAX_SAFE, minAmount = 1) => ({ currencyCode: code, minAmount, maxAmount, requiredCounterpartyFields: [], enabledTransactionTypes: types });

async function senderCustomer(platformCustomerId: string, code: string): Promise<Customer> {
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const created = await call(sender, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId, fullName: 'Sam Sender', currencies: [code], endUserTermsConsent: consent });
  expect(created.statusCode, created.body).toBe(201);
  const { id } = created.json() as { id: string };
  const accounts = (await call(sender, 'GET', `/customers/internal-accounts?customerId=${id}&currency=${code}`)).json() as { data: Array<{ id: string }> };
  const accountId = accounts.data[0]!.id;
  expect((await call(sender, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount: 100_000_000 })).statusCode).toBe(200);
  return { id, accountId };
}

const balance = async (customer: Customer, code: string) => {
  const accounts = (await call(sender, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=${code}`)).json() as { data: Array<{ balance: { amount: number } }> };
  return accounts.data[0]!.balance.amount;
};

async function quote(customer: Customer, address: string, currency: string, lockedCurrencySide: 'SENDING' | 'RECEIVING', lockedCurrencyAmount: number) {
  const looked = await call(sender, 'GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${customer.id}`);
  expect(looked.statusCode, looked.body).toBe(200);
  return call(sender, 'POST', '/quotes', {
    lookupId: looked.json().lookupId,
    source: { sourceType: 'ACCOUNT', accountId: customer.accountId },
    destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency },
    lockedCurrencySide,
    lockedCurrencyAmount,
  });
}

const invoiceMsatsOf = async (quoteId: string) =>
  BigInt((await ctx.handle.db.selectFrom('uma_outgoing_payments').select('amount_msats').where('quote_id', '=', quoteId.slice('Quote:'.length)).executeTakeFirstOrThrow()).amount_msats);

beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_MAX_TRANSACTION: JSON.stringify({ default: MAX_SAFE }) } });
  hooks = await WebhookReceiver.start();
  fake = await startFakeVasp();
  // The receiving platform: MXN from 100 centavos to what a JSON integer carries, a customer who takes it.
  const receiving = await call(ctx.platform, 'PATCH', '/config', {
    umaDomain: RECEIVER_DOMAIN,
    webhookEndpoint: hooks.url,
    supportedCurrencies: [currencyConfig('MXN', ['INCOMING', 'OUTGOING'], MAX_SAFE, 100)],
  });
  expect(receiving.statusCode, receiving.body).toBe(200);
  const created = await call(ctx.platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'bob', fullName: 'Bob Receiver', currencies: ['MXN'] });
  expect(created.statusCode, created.body).toBe(201);
  bob = created.json() as { id: string; umaAddress: string };
  // The sending platform: USD and EUR without a platform limit in the way.
  sender = await ctx.newPlatform();
  const sending = await call(sender, 'PATCH', '/config', {
    umaDomain: 'sender.example',
    webhookEndpoint: hooks.url,
    supportedCurrencies: [currencyConfig('USD', ['INCOMING', 'OUTGOING']), currencyConfig('EUR', ['INCOMING', 'OUTGOING'])],
  });
  expect(sending.statusCode, sending.body).toBe(200);
}, 300_000);

// The SDK stamps what it signs with the system time; the manual clock that judges it follows.
beforeEach(() => {
  ctx.clock.set(new Date());
  hooks.answer = () => ({ status: 200, body: '{}' });
});

afterAll(async () => {
  await hooks?.close();
  fake?.server.closeAllConnections();
  await new Promise((resolve) => fake?.server.close(resolve));
  await ctx?.close();
});

describe('Corridor receiving: the pay request is converted exactly', () => {
  const bobUser = () => encodeURIComponent(bob.umaAddress.split('@')[0]!);
  async function postPayRequest(amount: number, isAmountInReceivingCurrency: boolean, user = bobUser(), host = RECEIVER_DOMAIN) {
    const keys = PubKeyResponse.fromJson((await ctx.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
    const request = await getPayRequest({
      receiverEncryptionPubKey: keys.getEncryptionPubKey(),
      sendingVaspPrivateKey: fake.signing.privateKey,
      receivingCurrencyCode: 'MXN',
      amount,
      isAmountInReceivingCurrency,
      payerIdentifier: `$alice@${fake.domain}`,
      payerKycStatus: KycStatus.Verified,
      umaMajorVersion: 1,
      trInfo: JSON.stringify({ name: 'Alice' }),
      payerData: { name: 'Alice Sender' } as never,
    });
    return ctx.app.inject({ method: 'POST', url: `/uma/payreq/${user}`, headers: { host, 'content-type': 'application/json' }, payload: request.toJsonString() });
  }
  async function payRequest(amount: number, isAmountInReceivingCurrency: boolean) {
    const response = await postPayRequest(amount, isAmountInReceivingCurrency);
    expect(response.statusCode, response.body).toBe(200);
    const answer = PayReqResponse.fromJson(response.body);
    const invoice = bolt11().decode(answer.pr, NETWORKS.sandbox);
    const row = await ctx.handle.db.selectFrom('uma_incoming_payments').selectAll().where('payment_hash', '=', invoice.tagsObject.payment_hash!).executeTakeFirstOrThrow();
    return { answer, invoiceMsats: BigInt(invoice.millisatoshis!), row };
  }

  it('msats sent: the receiver gets what they buy rounded down, never more than was paid for', async () => {
    // 24,661,500 msats at 493.224932249322 msats per centavo are 50,000.5… centavos: 50,000 (rounded to nearest, 50,001 was worth more than was paid).
    const { answer, invoiceMsats, row } = await payRequest(24_661_500, false);
    expect(answer.converted).toMatchObject({ amount: 50_000, multiplier: 493.224932249322, fee: 0 });
    expect(invoiceMsats).toBe(24_661_500n);
    expect(row).toMatchObject({ amount: 50_000n, amount_msats: 24_661_500n });
  });

  it('an amount in centavos past 2^53 msats: the invoice is amount × multiplier exactly, rounded up', async () => {
    // 50,000,000,000,001 × 493.224932249322 = 24,661,246,612,466,593.22…: 24,661,246,612,466,594 msats (the double product is 24,661,246,612,466,596).
    const { answer, invoiceMsats, row } = await payRequest(50_000_000_000_001, true);
    expect(answer.converted).toMatchObject({ amount: 50_000_000_000_001, fee: 0 });
    expect(invoiceMsats).toBe(24_661_246_612_466_594n);
    expect(row).toMatchObject({ amount: 50_000_000_000_001n, amount_msats: 24_661_246_612_466_594n });
  });

  it('an amount whose invoice Lightning cannot carry, or msats worth less than a centavo, are AMOUNT_OUT_OF_RANGE; nothing is opened', async () => {
    const opened = async () => (await ctx.handle.db.selectFrom('transactions').select('id').where('type', '=', 'INCOMING').execute()).length;
    const before = await opened();
    // 5 × 10^15 centavos (within the platform's limit) at 493.2… msats are past BOLT 11's 21 million BTC.
    expectEnvelope(await postPayRequest(5_000_000_000_000_000, true), 400, 'AMOUNT_OUT_OF_RANGE');
    // A receiver taking from 0 centavos: 400 msats buy none (rounded to nearest, one centavo worth more than was paid).
    const other = await ctx.newPlatform();
    const configured = await call(other, 'PATCH', '/config', { umaDomain: 'receiver-two.example', webhookEndpoint: hooks.url, supportedCurrencies: [currencyConfig('MXN', ['INCOMING'], 1_000_000, 0)] });
    expect(configured.statusCode, configured.body).toBe(200);
    const created = await call(other, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'dora', fullName: 'Dora Receiver', currencies: ['MXN'] });
    expect(created.statusCode, created.body).toBe(201);
    const dora = encodeURIComponent((created.json() as { umaAddress: string }).umaAddress.split('@')[0]!);
    expectEnvelope(await postPayRequest(400, false, dora, 'receiver-two.example'), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(await opened()).toBe(before);
  });

  it('the lnurlp limits are whole sats a JSON number carries exactly in msats', async () => {
    const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: bob.umaAddress, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
    const response = await ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: RECEIVER_DOMAIN } });
    expect(response.statusCode, response.body).toBe(200);
    const answer = LnurlpResponse.fromJson(response.body);
    // 100 centavos are 49,322.49… msats: 50 sats. The most centavos are past 2^53 msats: the most that is not.
    expect(answer.minSendable).toBe(50_000);
    expect(answer.maxSendable).toBe(Math.floor(MAX_SAFE / 1000) * 1000);
  });
});

describe('Corridor sending to the sandbox test VASP: what the customer pays', () => {
  it('RECEIVING: the invoice costs the customer its exact value at the mid rate, rounded up, and that is what is debited', async () => {
    const erin = await senderCustomer('erin', 'EUR');
    const before = await balance(erin, 'EUR');
    const quoted = await quote(erin, '$success.mxn@sandbox.uma.money', 'MXN', 'RECEIVING', 1_000_284);
    expect(quoted.statusCode, quoted.body).toBe(201);
    // ⌈1,000,284 × 493.224932249322⌉ = 493,365,009 msats; ÷ (4,550,000/433) = 46,950.99… cents: 46,951
    // (the rate cut to 10,508.083 msats per cent made it 46,952).
    expect(await invoiceMsatsOf(quoted.json().id)).toBe(493_365_009n);
    expect(quoted.json()).toMatchObject({ totalReceivingAmount: 1_000_284, totalSendingAmount: 46_951, exchangeRate: 21.304849737 });
    const executed = await call(sender, 'POST', `/quotes/${quoted.json().id}/execute`, {});
    expect(executed.statusCode, executed.body).toBe(200);
    await drain();
    expect((await call(sender, 'POST', '/sandbox/clock/advance', { seconds: 61 })).statusCode).toBe(200);
    await drain();
    expect((await call(sender, 'GET', `/transactions/${quoted.json().transactionId}`)).json()).toMatchObject({ status: 'COMPLETED', receivedAmount: { amount: 1_000_284 } });
    expect(await balance(erin, 'EUR')).toBe(before - 46_951);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('SENDING: the locked amount buys msats rounded down; the receiver converts them rounded down', async () => {
    const erin = await senderCustomer('erin-sending', 'EUR');
    const quoted = await quote(erin, '$success.mxn@sandbox.uma.money', 'MXN', 'SENDING', 10_001);
    expect(quoted.statusCode, quoted.body).toBe(201);
    // ⌊10,001 × 4,550,000/433⌋ = 105,091,339 msats; ÷ 493.224932249322 = 213,069.6… centavos: 213,069 (rounded to nearest, 213,070).
    expect(await invoiceMsatsOf(quoted.json().id)).toBe(105_091_339n);
    expect(quoted.json()).toMatchObject({ totalSendingAmount: 10_001, totalReceivingAmount: 213_069 });
  });
});

describe('Corridor sending to a VASP built on the SDK: its answer is checked exactly', () => {
  const carol = () => `$carol@${fake.domain}`;
  const metadata = JSON.stringify([['text/plain', 'pay carol']]);
  const nodeKey = randomBytes(32);
  let sam: Customer;

  function invoiceFor(msats: bigint): string {
    const unsigned = bolt11().encode({
      network: NETWORKS.sandbox,
      millisatoshis: msats.toString(),
      timestamp: Math.floor(Date.now() / 1000),
      tags: [
        { tagName: 'payment_hash', data: createHash('sha256').update(randomBytes(32)).digest('hex') },
        { tagName: 'payment_secret', data: randomBytes(32).toString('hex') },
        { tagName: 'description', data: 'pay carol' },
        { tagName: 'expire_time', data: 600 },
      ],
    });
    return bolt11().sign(unsigned, nodeKey).paymentRequest!;
  }

  /** The fake VASP receives `offered` for carol; its pay-request answer is the SDK's, bent by the test. */
  function receiveAs(offered: Currency, answer: { fee?: number; invoiceMsats?: (sdkMsats: number) => bigint; edit?: (signed: Body & { converted: Body }) => void } = {}) {
    fake.lnurlp = async (url) => {
      const response = await getLnurlpResponse({
        request: parseLnurlpRequest(url),
        privateKeyBytes: fake.signing.privateKey,
        requiresTravelRuleInfo: true,
        callback: `http://${url.host}/payreq`,
        encodedMetadata: metadata,
        minSendableSats: 1,
        maxSendableSats: 10_000_000,
        payerDataOptions: { identifier: { mandatory: true }, compliance: { mandatory: true } },
        currencyOptions: [offered],
        receiverKycStatus: KycStatus.Verified,
      });
      return { status: 200, body: response.toJsonString() };
    };
    fake.payreq = async (body) => {
      const request = PayRequest.parse(JSON.parse(body));
      const response = await getPayReqResponse({
        request,
        metadata,
        invoiceCreator: { createUmaInvoice: async (msats) => invoiceFor(answer.invoiceMsats ? answer.invoiceMsats(msats) : BigInt(msats)) },
        conversionRate: offered.multiplier,
        receivingCurrencyCode: offered.code,
        receivingCurrencyDecimals: offered.decimals,
        receiverChannelUtxos: [],
        receiverFeesMillisats: answer.fee ?? 0,
        utxoCallback: `http://${fake.domain}/utxo-callback`,
        payeeData: { identifier: carol() },
        receivingVaspPrivateKey: fake.signing.privateKey,
        payeeIdentifier: carol(),
      });
      const signed = JSON.parse(response.toJsonString()) as Body & { converted: Body };
      answer.edit?.(signed);
      return { status: 200, body: JSON.stringify(signed) };
    };
  }

  beforeAll(async () => {
    sam = await senderCustomer('sam', 'USD');
  });

  it('an exact invoice past 2^53 msats is accepted, and costs the customer its exact value', async () => {
    // 123,456.789 msats per centavo; 99,999,999,014 centavos invoiced exactly: 12,345,678,778,271,607 msats
    // (as doubles it was 2 msats off the product, and refused).
    receiveAs(new Currency('MXN', 'Mexican Peso', '$', 123456.789, 1, 100_000_000_000, 2), { invoiceMsats: () => 12_345_678_778_271_607n });
    const quoted = await quote(sam, carol(), 'MXN', 'RECEIVING', 99_999_999_014);
    expect(quoted.statusCode, quoted.body).toBe(201);
    // ⌈12,345,678,778,271,607 ÷ 9,100⌉ cents.
    expect(quoted.json()).toMatchObject({ totalReceivingAmount: 99_999_999_014, totalSendingAmount: 1_356_667_997_613 });
    expect(await invoiceMsatsOf(quoted.json().id)).toBe(12_345_678_778_271_607n);
  });

  it('the receiver’s fee is shown in receiving minor units exactly: 123 msats at 4.1 msats per centavo are 30 centavos', async () => {
    receiveAs(new Currency('MXN', 'Mexican Peso', '$', 4.1, 1, 100_000_000, 2), { fee: 123 });
    const quoted = await quote(sam, carol(), 'MXN', 'RECEIVING', 50_000);
    expect(quoted.statusCode, quoted.body).toBe(201);
    expect(quoted.json()).toMatchObject({ totalReceivingAmount: 50_000, rateDetails: { counterpartyMultiplier: 4.1, counterpartyFixedFee: 30 } });
    expect(await invoiceMsatsOf(quoted.json().id)).toBe(205_123n);
  });

  it('SENDING: a locked amount buying more msats than a pay request carries (2^53 − 1) is AMOUNT_OUT_OF_RANGE; nothing is sent', async () => {
    // 10^12 cents at 9,100 msats each are 9.1 × 10^15 msats, past 2^53 − 1; at 123,456.789 msats per
    // centavo they are some 7.4 × 10^10 centavos, within the receiver's limits: only the pay request's number is in the way.
    receiveAs(new Currency('MXN', 'Mexican Peso', '$', 123456.789, 1, 100_000_000_000, 2));
    const answer = fake.payreq;
    let asked = 0;
    fake.payreq = (body) => {
      asked++;
      return answer(body);
    };
    const refused = expectEnvelope(await quote(sam, carol(), 'MXN', 'SENDING', 1_000_000_000_000), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toEqual({ min: 1, max: 100_000_000_000, currency: 'MXN' });
    expect(asked).toBe(0);
  });

  it('SENDING: a receiver that rounds the amount down is accepted; one a minor unit further off is not', async () => {
    // 10,004 cents buy 91,036,400 msats: 182,072.8 centavos at 500. Rounded down, 182,072 (0.8 × 500 msats off,
    // more than the half unit once allowed).
    const offered = new Currency('MXN', 'Mexican Peso', '$', 500, 1, 100_000_000, 2);
    receiveAs(offered, { edit: (signed) => (signed.converted.amount = 182_072) });
    const quoted = await quote(sam, carol(), 'MXN', 'SENDING', 10_004);
    expect(quoted.statusCode, quoted.body).toBe(201);
    expect(quoted.json()).toMatchObject({ totalSendingAmount: 10_004, totalReceivingAmount: 182_072 });
    expect(await invoiceMsatsOf(quoted.json().id)).toBe(91_036_400n);
    receiveAs(offered, { edit: (signed) => (signed.converted.amount = 182_071) });
    expectEnvelope(await quote(sam, carol(), 'MXN', 'SENDING', 10_004), 400, 'INVALID_PAYREQ_RESPONSE');
  });
});
