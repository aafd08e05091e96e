import { getPayRequest, getSignedLnurlpRequestUrl, KycStatus, LnurlpResponse, PubKeyResponse } from '@uma-sdk/core';
import { randomUUID } from 'node:crypto';
import { toPem } from '../../src/platform/crypto/pem.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * UMA signs an lnurlp response over `receiverIdentifier|nonce|timestamp` and a pay request over
 * `payerIdentifier|nonce|timestamp`: the same string. Corridor, as a receiver, signs the first
 * for anyone whose lnurlp request verifies; nothing in the bytes says which message it was.
 */
let ctx: TestContext;
let domain: string;
let fake: FakeVasp;
let hooks: WebhookReceiver;
let bob: { id: string; umaAddress: string };
let carol: { id: string; umaAddress: string };

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function corridorKeys() {
  return PubKeyResponse.fromJson((await ctx.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
}

/** A pay request to Carol from `payer`, built with the SDK, then carrying `signed` (signature, nonce, timestamp) as the payer's compliance signature. */
async function payCarol(payer: string, signed: { signature: string; signatureNonce: string; signatureTimestamp: number }) {
  const shell = await getPayRequest({
    receiverEncryptionPubKey: (await corridorKeys()).getEncryptionPubKey(),
    sendingVaspPrivateKey: fake.signing.privateKey,
    receivingCurrencyCode: 'MXN',
    amount: 5_000,
    isAmountInReceivingCurrency: true,
    payerIdentifier: payer,
    payerKycStatus: KycStatus.Verified,
    umaMajorVersion: 1,
    trInfo: JSON.stringify({ name: 'Anyone at all' }),
    payerData: { name: 'Anyone at all' } as never,
  });
  const forged = JSON.parse(shell.toJsonString());
  Object.assign(forged.payerData.compliance, signed);
  return ctx.app.inject({
    method: 'POST',
    url: `/uma/payreq/${encodeURIComponent(carol.umaAddress.split('@')[0]!)}`,
    headers: { host: domain, 'content-type': 'application/json' },
    payload: JSON.stringify(forged),
  });
}

async function expectNothingOpened(response: Awaited<ReturnType<typeof payCarol>>, webhooksBefore: number) {
  expectEnvelope(response, 400, 'INVALID_NONCE');
  expect(hooks.received.length).toBe(webhooksBefore);
  expect(await ctx.handle.db.selectFrom('uma_incoming_payments').selectAll().execute()).toEqual([]);
}

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  domain = `127.0.0.1:${(ctx.app.server.address() as { port: number }).port}`;
  hooks = await WebhookReceiver.start();
  const mxn = { currencyCode: 'MXN', minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
  expect((await call('PATCH', '/config', { umaDomain: domain, supportedCurrencies: [mxn], webhookEndpoint: hooks.url })).statusCode).toBe(200);
  const customer = async (id: string) => {
    const response = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: id, fullName: 'Test Person', currencies: ['MXN'] });
    expect(response.statusCode, response.body).toBe(201);
    return response.json() as { id: string; umaAddress: string };
  };
  bob = await customer('bob');
  carol = await customer('carol');
  fake = await startFakeVasp();
}, 300_000);

beforeEach(() => {
  ctx.clock.set(new Date());
  hooks.answer = () => ({ status: 200, body: '{}' });
});

afterAll(async () => {
  await hooks?.close();
  await new Promise((resolve) => fake?.server.close(resolve));
  await ctx?.close();
});

describe('an lnurlp answer Corridor signed is no pay request from its customer', () => {
  it('its signature, nonce and timestamp replayed as a pay request from the receiver it named: INVALID_NONCE, nothing opened', async () => {
    // Any VASP asks for Bob's lnurlp answer, signed by Corridor.
    const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: bob.umaAddress, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
    const answer = await ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });
    expect(answer.statusCode, answer.body).toBe(200);
    const { compliance } = LnurlpResponse.fromJson(answer.body);

    // It sends Carol a pay request "from Bob", carrying that signature as the payer's.
    const webhooksBefore = hooks.received.length;
    const { signature, signatureNonce, signatureTimestamp } = compliance!;
    await expectNothingOpened(await payCarol(compliance!.receiverIdentifier, { signature, signatureNonce, signatureTimestamp }), webhooksBefore);
  });

  it('nor is a lookup it sent: a domain that captures it and serves Corridor’s own chain cannot replay it as a pay request from the address looked up', async () => {
    const saved = { chainPem: fake.chainPem, lnurlp: fake.lnurlp };
    let captured: URL | undefined;
    fake.lnurlp = async (url) => {
      captured = url;
      return { status: 404, body: '{}' };
    };
    // Corridor's own published chain, served at the capturing domain: its key verifies the lookup's signature.
    fake.chainPem = (await corridorKeys()).signingCertChain!.map((certificate) => toPem(certificate.raw)).join('');
    try {
      const receiver = `$x@${fake.domain}`;
      expectEnvelope(await call('GET', `/receiver/uma/${encodeURIComponent(receiver)}?customerId=${bob.id}`), 404, 'UMA_NOT_FOUND');
      const webhooksBefore = hooks.received.length;
      const signed = { signature: captured!.searchParams.get('signature')!, signatureNonce: captured!.searchParams.get('nonce')!, signatureTimestamp: Number(captured!.searchParams.get('timestamp')) };
      await expectNothingOpened(await payCarol(receiver, signed), webhooksBefore);
    } finally {
      Object.assign(fake, saved);
    }
  });
});

describe('a post-transaction callback is signed over `nonce|timestamp` only', () => {
  it("an lnurlp answer Corridor signed (`$bob@d|n|t`) is no callback from d with nonce `$bob@d|n`: INVALID_NONCE, nothing recorded", async () => {
    // A payment Carol received from a customer of this deployment's own domain (another platform of it, say).
    const paymentId = randomUUID();
    await ctx.handle.db
      .insertInto('uma_incoming_payments')
      .values({
        platform_id: ctx.platform.uuid,
        id: paymentId,
        customer_id: carol.id.slice('Customer:'.length),
        receiver_uma_address: carol.umaAddress,
        sender_identifier: bob.umaAddress,
        sender_vasp_domain: domain,
        currency_code: 'MXN',
        amount: 100n,
        amount_msats: 1000n,
        fee_msats: 0n,
        payment_hash: randomUUID(),
        invoice: 'lnbcrt1',
        payer_data: {},
        status: 'COMPLETED',
        created_at: ctx.clock.now(),
        expires_at: ctx.clock.now(),
        transaction_id: null,
        sender_confirmed_at: null,
      })
      .execute();
    const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: bob.umaAddress, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
    const answer = await ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });
    const { compliance } = LnurlpResponse.fromJson(answer.body);
    const callback = {
      utxos: [],
      vaspDomain: domain,
      signature: compliance!.signature,
      signatureNonce: `${compliance!.receiverIdentifier}|${compliance!.signatureNonce}`,
      signatureTimestamp: compliance!.signatureTimestamp,
    };
    const response = await ctx.app.inject({ method: 'POST', url: `/uma/utxo-callback/${paymentId}`, headers: { host: domain, 'content-type': 'application/json' }, payload: JSON.stringify(callback) });
    expectEnvelope(response, 400, 'INVALID_NONCE');
    const row = await ctx.handle.db.selectFrom('uma_incoming_payments').select('sender_confirmed_at').where('id', '=', paymentId).executeTakeFirstOrThrow();
    expect(row.sender_confirmed_at).toBeNull();
  });
});

describe('the forms a counterparty’s signature may take (an lnurlp request to Corridor)', () => {
  const ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

  function derInteger(value: bigint): Buffer {
    let hex = value.toString(16);
    if (hex.length % 2) hex = `0${hex}`;
    const bytes = Buffer.from(hex, 'hex');
    return bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes;
  }
  const der = (r: bigint, s: bigint) => {
    const body = Buffer.concat([Buffer.from([0x02, derInteger(r).length]), derInteger(r), Buffer.from([0x02, derInteger(s).length]), derInteger(s)]);
    return Buffer.concat([Buffer.from([0x30, body.length]), body]).toString('hex');
  };
  /** r and s of a DER signature (short lengths: a secp256k1 signature is at most 72 bytes). */
  function rs(signatureHex: string): { r: bigint; s: bigint } {
    const bytes = Buffer.from(signatureHex, 'hex');
    const rLength = bytes[3]!;
    const r = BigInt(`0x${bytes.subarray(4, 4 + rLength).toString('hex')}`);
    const s = BigInt(`0x${bytes.subarray(6 + rLength).toString('hex')}`);
    return { r, s };
  }
  const request = () => getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: bob.umaAddress, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
  const send = (url: URL) => ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });

  it('compact (r‖s), truncated, or trailing bytes after the DER: 401 INVALID_SIGNATURE, and the nonce is not used up', async () => {
    const url = await request();
    const signature = url.searchParams.get('signature')!;
    const { r, s } = rs(signature);
    for (const malformed of [r.toString(16).padStart(64, '0') + s.toString(16).padStart(64, '0'), signature.slice(0, -2), `${signature}00`, '', '30']) {
      url.searchParams.set('signature', malformed);
      expectEnvelope(await send(url), 401, 'INVALID_SIGNATURE');
    }
    url.searchParams.set('signature', signature);
    expect((await send(url)).statusCode).toBe(200);
  });

  it('high S is taken as its low-S twin (as UMA’s SDKs do): one message, one nonce — the twin of an accepted signature is a replay', async () => {
    const url = await request();
    const signature = url.searchParams.get('signature')!;
    const { r, s } = rs(signature);
    const high = s > ORDER / 2n ? s : ORDER - s;
    url.searchParams.set('signature', der(r, high));
    expect((await send(url)).statusCode).toBe(200);
    url.searchParams.set('signature', der(r, ORDER - high));
    expectEnvelope(await send(url), 400, 'INVALID_NONCE');
  });
});
