import { getPayRequest, KycStatus, PubKeyResponse } from '@uma-sdk/core';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { BASE, createTestContext, type TestContext } from './context.js';
import { startFakeVasp, type FakeVasp } from './uma.js';
import { WebhookReceiver } from './webhook-receiver.js';

/** The simulated Lightning node's network (regtest), to decode its invoices with bolt11. */
export const REGTEST = { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] };

/** What a receiving-side test talks to; filled in by the file's beforeAll. */
export interface ReceivingWorld {
  /** The receiving platform's Corridor, its `umaDomain` pointing here, receiving MXN. */
  b: TestContext;
  /** The sending VASP, played with the SDK. */
  fake: FakeVasp;
  /** The receiving platform's webhook endpoint: approves every payment unless told otherwise. */
  hooks: WebhookReceiver;
}

export interface PayRequestExtras {
  requestedPayeeData?: Record<string, { mandatory: boolean }>;
  settlement?: { layer: string; assetIdentifier: string };
  /** Sent in place of the signed request's `amount` (which its signature does not cover). */
  amount?: unknown;
}

/**
 * A receiving platform at `domain` and a sender VASP for one test file: set up before its tests
 * (and the manual clock set to the system time before each, since the SDK stamps its messages
 * with that), closed after them; with the calls the tests make.
 */
export function receivingWorld(domain: string) {
  const world = {} as ReceivingWorld;

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
    world.b.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: world.b.platform.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

  async function newReceiver(name: string): Promise<{ id: string; umaAddress: string }> {
    const response = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: name, fullName: 'Receiving Person', currencies: ['MXN'] });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  }

  /** The sender's signed pay request for 50,000 MXN (minor units) to `receiver`, as the SDK builds it. */
  async function postPayRequest(receiver: { umaAddress: string }, extras: PayRequestExtras = {}) {
    const keys = PubKeyResponse.fromJson((await world.b.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
    const request = await getPayRequest({
      receiverEncryptionPubKey: keys.getEncryptionPubKey(),
      sendingVaspPrivateKey: world.fake.signing.privateKey,
      receivingCurrencyCode: 'MXN',
      amount: 50_000,
      isAmountInReceivingCurrency: true,
      payerIdentifier: `$alice@${world.fake.domain}`,
      payerKycStatus: KycStatus.Verified,
      umaMajorVersion: 1,
      trInfo: '{}',
      payerData: { name: 'Alice Sender' } as never,
      ...(extras.requestedPayeeData ? { requestedPayeeData: extras.requestedPayeeData as never } : {}),
      ...(extras.settlement ? { settlement: extras.settlement } : {}),
    });
    return world.b.app.inject({
      method: 'POST',
      url: `/uma/payreq/${encodeURIComponent(receiver.umaAddress.split('@')[0]!)}`,
      headers: { host: domain, 'content-type': 'application/json' },
      payload: 'amount' in extras ? JSON.stringify({ ...(JSON.parse(request.toJsonString()) as Record<string, unknown>), amount: extras.amount }) : request.toJsonString(),
    });
  }

  const payInvoice = (invoice: string) =>
    world.b.app.inject({ method: 'POST', url: '/uma/lightning/pay', headers: { host: domain, 'content-type': 'application/json' }, payload: { invoice } });

  beforeAll(async () => {
    world.b = await createTestContext();
    const mxn = { currencyCode: 'MXN', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING'] };
    expect((await call('PATCH', '/config', { umaDomain: domain, supportedCurrencies: [mxn] })).statusCode).toBe(200);
    world.fake = await startFakeVasp();
    world.hooks = await WebhookReceiver.start();
    expect((await call('PATCH', '/config', { webhookEndpoint: world.hooks.url })).statusCode).toBe(200);
  }, 120_000);

  beforeEach(() => {
    world.b.clock.set(new Date());
    world.hooks.answer = () => ({ status: 200, body: '{}' });
  });

  afterAll(async () => {
    await world.hooks?.close();
    await new Promise((resolve) => world.fake?.server.close(resolve));
    await world.b?.close();
  });

  return { world, call, newReceiver, postPayRequest, payInvoice };
}
