import { getPayRequest, getSignedLnurlpRequestUrl, KycStatus, PubKeyResponse } from '@uma-sdk/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { fakeChain } from '../helpers/uma.js';

/**
 * A production receiver's answers to another VASP price the receiver's currencies, which asks the
 * rate provider (a deployment without one: 503 SERVICE_UNAVAILABLE, retryable). A message the
 * receiver refuses whatever it can price — one signed outside the timestamp window — is refused
 * before that (uma README, SENDER_NOT_ACCEPTED): 400 INVALID_TIMESTAMP, not a 503 the sending VASP would
 * retry with a message that can never be accepted.
 */
const DOMAIN = 'receive.example.com';
/** A VASP on the public internet (a production receiver refuses local ones first: SENDER_NOT_ACCEPTED). */
const SENDER = 'sender.example.com';

let ctx: TestContext;
let production: TestPlatform;
let receiver: { umaAddress: string };
const signing = fakeChain().key;

beforeAll(async () => {
  ctx = await createTestContext();
  production = await ctx.newPlatform('production');
  const call = (method: 'POST' | 'PATCH', path: string, payload: unknown) =>
    ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: production.auth }, payload: payload as object });
  const mxn = { currencyCode: 'MXN', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING'] };
  expect((await call('PATCH', '/config', { umaDomain: DOMAIN, supportedCurrencies: [mxn] })).statusCode).toBe(200);
  const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'dave', fullName: 'Dave Receiver', currencies: ['MXN'] });
  expect(created.statusCode, created.body).toBe(201);
  receiver = created.json() as { umaAddress: string };
  expect(receiver.umaAddress.endsWith(`@${DOMAIN}`)).toBe(true);
});
afterAll(() => ctx.close());

/** The messages are stamped with the system time; the receiver's clock is an hour past it. */
const anHourLater = () => ctx.clock.set(new Date(Date.now() + 3_600_000));

describe('a production receiver without a rate provider', () => {
  it('refuses a stale lnurlp request 400 INVALID_TIMESTAMP', async () => {
    const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: receiver.umaAddress, senderVaspDomain: SENDER, signingPrivateKey: signing.privateKey });
    anHourLater();
    expectEnvelope(await ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: DOMAIN } }), 400, 'INVALID_TIMESTAMP');
  });

  it('refuses a stale pay request 400 INVALID_TIMESTAMP', async () => {
    ctx.clock.set(new Date());
    const keys = PubKeyResponse.fromJson((await ctx.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
    const request = await getPayRequest({
      receiverEncryptionPubKey: keys.getEncryptionPubKey(),
      sendingVaspPrivateKey: signing.privateKey,
      receivingCurrencyCode: 'MXN',
      amount: 50_000,
      isAmountInReceivingCurrency: true,
      payerIdentifier: `$alice@${SENDER}`,
      payerKycStatus: KycStatus.Verified,
      umaMajorVersion: 1,
      trInfo: '{}',
      payerData: { name: 'Alice Sender' } as never,
    });
    anHourLater();
    const user = encodeURIComponent(receiver.umaAddress.split('@')[0]!);
    const answer = await ctx.app.inject({ method: 'POST', url: `/uma/payreq/${user}`, headers: { host: DOMAIN, 'content-type': 'application/json' }, payload: request.toJsonString() });
    expectEnvelope(answer, 400, 'INVALID_TIMESTAMP');
  });
});
