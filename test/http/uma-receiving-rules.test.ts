import {
  encodeToUrl,
  getPayRequest,
  getPostTransactionCallback,
  getSignableLnurlpRequestPayload,
  getSignedLnurlpRequestUrl,
  KycStatus,
  LnurlpResponse,
  PayReqResponse,
  PubKeyResponse,
  signPayload,
  UmaProtocolVersion,
  type LnurlpRequest,
} from '@uma-sdk/core';
import bolt11 from 'bolt11';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { INVOICE_EXPIRY_JOB } from '../../src/modules/uma/lightning.js';
import { insertNonce, nonceSeen } from '../../src/modules/uma/repo.js';
import { APPROVAL_WINDOW_MS } from '../../src/modules/webhooks/index.js';
import { expectEnvelope } from '../helpers/context.js';
import { signedLnurlpAnswer, startFakeVasp, type FakeVasp } from '../helpers/uma.js';
import { receivingWorld, REGTEST } from '../helpers/uma-receiving.js';

/**
 * The receiving side's rules that a mutation audit of src/modules/uma found unguarded: which of
 * the platform's currencies a receiver is offered in (INCOMING only, narrowed to the customer's),
 * the payer data the receiver requires, the amount bounds at their edges, and the KYC status
 * answered. The sender is a VASP played with the SDK.
 */
const domain = 'rules.receiver.test';
const { world, call, payInvoice } = receivingWorld(domain);

// MXN and USD received (FULL_NAME mandatory for MXN, optional for USD), EUR sent only.
const mxn = { currencyCode: 'MXN', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: true }], enabledTransactionTypes: ['INCOMING'] };
const usd = { currencyCode: 'USD', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: false }], enabledTransactionTypes: ['INCOMING'] };
const eur = { currencyCode: 'EUR', minAmount: 100, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] };

beforeAll(async () => {
  const patched = await call('PATCH', '/config', { supportedCurrencies: [mxn, usd, eur] });
  expect(patched.statusCode, patched.body).toBe(200);
});

async function receiver(name: string, currencies: string[]): Promise<{ id: string; umaAddress: string }> {
  const response = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: name, fullName: 'Receiving Person', currencies });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

const userOf = (to: { umaAddress: string }) => to.umaAddress.split('@')[0]!;

/** The sender's signed lnurlp request for `to`, answered by the receiving platform. */
async function lnurlp(to: { umaAddress: string }) {
  const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: to.umaAddress, senderVaspDomain: world.fake.domain, signingPrivateKey: world.fake.signing.privateKey });
  return world.b.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });
}

/** The sender's lnurlp request for `to` with the nonce it chooses, signed at the receiving platform's time. */
async function lnurlpWithNonce(to: { umaAddress: string }, nonce: string, sender: FakeVasp = world.fake) {
  const unsigned: LnurlpRequest = {
    receiverAddress: to.umaAddress,
    nonce,
    timestamp: world.b.clock.now(),
    isSubjectToTravelRule: true,
    vaspDomain: sender.domain,
    umaVersion: UmaProtocolVersion,
    signature: '',
  };
  const url = encodeToUrl({ ...unsigned, signature: await signPayload(getSignableLnurlpRequestPayload(unsigned), sender.signing.privateKey) });
  return world.b.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });
}

/** The sender's signed pay request for `amount` minor units of `currency` to `to`. */
async function payRequest(to: { umaAddress: string }, options: { currency: string; amount?: number; payerData?: Record<string, unknown>; settlement?: { layer: string; assetIdentifier: string } }) {
  const keys = PubKeyResponse.fromJson((await world.b.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
  const request = await getPayRequest({
    receiverEncryptionPubKey: keys.getEncryptionPubKey(),
    sendingVaspPrivateKey: world.fake.signing.privateKey,
    receivingCurrencyCode: options.currency,
    amount: options.amount ?? 50_000,
    isAmountInReceivingCurrency: true,
    payerIdentifier: `$alice@${world.fake.domain}`,
    payerKycStatus: KycStatus.Verified,
    umaMajorVersion: 1,
    trInfo: '{}',
    payerData: (options.payerData ?? { name: 'Alice Sender' }) as never,
    ...(options.settlement ? { settlement: options.settlement } : {}),
  });
  return world.b.app.inject({
    method: 'POST',
    url: `/uma/payreq/${encodeURIComponent(userOf(to))}`,
    headers: { host: domain, 'content-type': 'application/json' },
    payload: request.toJsonString(),
  });
}

/** The receiver's review set by its platform (platform KYC on for the change only). */
async function review(to: { id: string }, kycStatus: string) {
  expect((await call('PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
  try {
    const patched = await call('PATCH', `/customers/${to.id}`, { customerType: 'INDIVIDUAL', kycStatus });
    expect(patched.statusCode, patched.body).toBe(200);
  } finally {
    expect((await call('PATCH', '/customers/settings', { platformKyc: false })).statusCode).toBe(200);
  }
}

async function incomingTo(to: { id: string }) {
  return world.b.handle.db.selectFrom('transactions').select(['id', 'received_amount', 'status', 'failure_reason']).where('type', '=', 'INCOMING').where('customer_id', '=', to.id.slice('Customer:'.length)).execute();
}

describe('the currencies a receiver is offered in', () => {
  it('only those the platform enables for INCOMING: an OUTGOING-only currency is not in the lnurlp answer, and a pay request in it is INVALID_CURRENCY', async () => {
    const to = await receiver('incoming-only', ['MXN', 'EUR']);
    const answer = await lnurlp(to);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(LnurlpResponse.fromJson(answer.body).currencies!.map((c) => c.code)).toEqual(['MXN']);
    expectEnvelope(await payRequest(to, { currency: 'EUR' }), 400, 'INVALID_CURRENCY');
    expect(await incomingTo(to)).toEqual([]);
    expect((await payRequest(to, { currency: 'MXN' })).statusCode).toBe(200);
  });

  it("only the customer's own: a currency the platform receives but the customer does not hold is not offered, and a pay request in it is INVALID_CURRENCY", async () => {
    const to = await receiver('own-currencies', ['MXN']);
    const answer = await lnurlp(to);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(LnurlpResponse.fromJson(answer.body).currencies!.map((c) => c.code)).toEqual(['MXN']);
    expectEnvelope(await payRequest(to, { currency: 'USD' }), 400, 'INVALID_CURRENCY');
    expect(await incomingTo(to)).toEqual([]);
  });
});

describe('the payer data a receiver requires', () => {
  it('a field one offered currency requires and another takes optionally is mandatory: in the lnurlp answer, and a pay request without it is refused', async () => {
    const to = await receiver('payer-data', ['MXN', 'USD']);
    const answer = await lnurlp(to);
    expect(answer.statusCode, answer.body).toBe(200);
    const parsed = LnurlpResponse.fromJson(answer.body);
    expect(parsed.currencies!.map((c) => c.code).sort()).toEqual(['MXN', 'USD']);
    expect(parsed.payerData).toMatchObject({ identifier: { mandatory: true }, compliance: { mandatory: true }, name: { mandatory: true } });
    const refused = expectEnvelope(await payRequest(to, { currency: 'USD', payerData: {} }), 400, 'MISSING_REQUIRED_UMA_PARAMETERS');
    expect(refused.details).toEqual({ field: 'payerData.name' });
    expect(await incomingTo(to)).toEqual([]);
  });
});

describe("the receiving currency's limits, at their edges", () => {
  it('the minimum and the maximum themselves are invoiced; one minor unit beyond either is AMOUNT_OUT_OF_RANGE, nothing opened', async () => {
    const to = await receiver('edges', ['MXN']);
    for (const amount of [99, 1_000_001]) {
      const body = expectEnvelope(await payRequest(to, { currency: 'MXN', amount }), 400, 'AMOUNT_OUT_OF_RANGE');
      expect(body.details).toEqual({ min: 100, max: 1_000_000, currency: 'MXN' });
    }
    expect(await incomingTo(to)).toEqual([]);
    for (const amount of [100, 1_000_000]) {
      const answered = await payRequest(to, { currency: 'MXN', amount });
      expect(answered.statusCode, answered.body).toBe(200);
    }
    expect((await incomingTo(to)).map((t) => Number(t.received_amount)).sort((x, y) => x - y)).toEqual([100, 1_000_000]);
  });
});

describe("the receiver's KYC status in the lnurlp answer", () => {
  it('APPROVED is VERIFIED, PENDING is PENDING; UNVERIFIED and HOLD are NOT_VERIFIED', async () => {
    const to = await receiver('kyc-status', ['MXN']);
    const kycOf = async () => {
      const answer = await lnurlp(to);
      expect(answer.statusCode, answer.body).toBe(200);
      return LnurlpResponse.fromJson(answer.body).compliance!.kycStatus;
    };
    for (const [status, expected] of [['PENDING', KycStatus.Pending], ['HOLD', KycStatus.NotVerified], ['UNVERIFIED', KycStatus.NotVerified], ['APPROVED', KycStatus.Verified]] as const) {
      await review(to, status);
      expect(await kycOf(), status).toBe(expected);
    }
  });
});

describe('the answer deadline of a pay request', () => {
  it('an approval at the deadline itself, when the job may give the pay request up, records no invoice: SERVICE_SWITCH_ERROR, the transaction FAILED', async () => {
    const to = await receiver('at-deadline', ['MXN']);
    // The manual clock stands still; the deadline is its time plus the webhook timeout, the approval window and the margin.
    const answerBy = world.b.clock.now().getTime() + world.b.config.webhooks.timeoutMs + APPROVAL_WINDOW_MS + 60_000;
    world.hooks.answer = () => {
      world.b.clock.set(new Date(answerBy));
      return { status: 200, body: '{}' };
    };
    const refused = expectEnvelope(await payRequest(to, { currency: 'MXN' }), 500, 'SERVICE_SWITCH_ERROR');
    expect(refused.details).toEqual({ reason: 'ANSWER_DEADLINE_PASSED' });
    const [given] = await incomingTo(to);
    expect(given!.status).toBe('FAILED');
    expect(await world.b.handle.db.selectFrom('uma_incoming_payments').select('id').where('customer_id', '=', to.id.slice('Customer:'.length)).execute()).toEqual([]);
  });
});

describe("a pay request's settlement, as written", () => {
  it('Lightning in BTC named in other letter cases is the settlement offered: answered with an invoice', async () => {
    const to = await receiver('settlement-case', ['MXN']);
    const answered = await payRequest(to, { currency: 'MXN', settlement: { layer: 'LN', assetIdentifier: 'btc' } });
    expect(answered.statusCode, answered.body).toBe(200);
    expect(PayReqResponse.fromJson(answered.body).pr.startsWith('lnbcrt')).toBe(true);
  });
});

describe("an lnurlp request's nonce", () => {
  it('128 characters is taken, and kept (for the retention purge) until its timestamp plus the window; 129 is INVALID_NONCE', async () => {
    const to = await receiver('nonce-length', ['MXN']);
    const nonce = 'n'.repeat(120) + Date.now().toString(36).slice(-8).padStart(8, '0');
    expect(nonce).toHaveLength(128);
    const answered = await lnurlpWithNonce(to, nonce);
    expect(answered.statusCode, answered.body).toBe(200);
    const row = await world.b.handle.db.selectFrom('uma_nonces').selectAll().where('nonce', '=', nonce).executeTakeFirstOrThrow();
    const signedAt = Math.floor(world.b.clock.now().getTime() / 1000);
    expect(row.vasp_domain).toBe(world.fake.domain);
    expect(row.expires_at.getTime()).toBe((signedAt + world.b.config.uma.timestampWindowSeconds) * 1000);
    expectEnvelope(await lnurlpWithNonce(to, `${nonce}x`), 400, 'INVALID_NONCE');
  });
});

describe("nonces are each sending VASP's own", () => {
  it("a nonce another VASP has used is no replay from this one: both are answered; each one's second use is INVALID_NONCE", async () => {
    const to = await receiver('nonce-scope', ['MXN']);
    const other = await startFakeVasp();
    try {
      const nonce = `shared-${Date.now()}`;
      expect((await lnurlpWithNonce(to, nonce)).statusCode).toBe(200);
      const fromOther = await lnurlpWithNonce(to, nonce, other);
      expect(fromOther.statusCode, fromOther.body).toBe(200);
      expectEnvelope(await lnurlpWithNonce(to, nonce, other), 400, 'INVALID_NONCE');
      expectEnvelope(await lnurlpWithNonce(to, nonce), 400, 'INVALID_NONCE');
    } finally {
      await new Promise((resolve) => other.server.close(resolve));
    }
  });

  it('are kept under the domain in any letter case: the same nonce from VASP.example again is a replay', async () => {
    const nonce = `case-${Date.now()}`;
    const expiresAt = new Date(world.b.clock.now().getTime() + 300_000);
    expect(await insertNonce(world.b.handle.db, 'Case-VASP.example', nonce, expiresAt)).toBe(true);
    expect(await nonceSeen(world.b.handle.db, 'case-vasp.EXAMPLE', nonce)).toBe(true);
    expect(await insertNonce(world.b.handle.db, 'case-vasp.example', nonce, expiresAt)).toBe(false);
  });
});

describe("the sender's post-transaction callback", () => {
  it('is recorded once: a second signed callback for the payment does not move the time it was confirmed', async () => {
    const to = await receiver('callback-once', ['MXN']);
    const answer = await payRequest(to, { currency: 'MXN' });
    expect(answer.statusCode, answer.body).toBe(200);
    const callbackUrl = new URL(PayReqResponse.fromJson(answer.body).payeeData!.compliance!.utxoCallback as string);
    const send = async () => {
      const callback = JSON.parse(JSON.stringify(await getPostTransactionCallback({ utxos: [], vaspDomain: world.fake.domain, signingPrivateKey: world.fake.signing.privateKey })));
      return world.b.app.inject({ method: 'POST', url: callbackUrl.pathname, headers: { host: domain }, payload: callback });
    };
    const paymentId = callbackUrl.pathname.split('/').pop()!;
    const confirmedAt = async () => (await world.b.handle.db.selectFrom('uma_incoming_payments').select('sender_confirmed_at').where('id', '=', paymentId).executeTakeFirstOrThrow()).sender_confirmed_at;
    expect(await confirmedAt()).toBeNull();
    const first = world.b.clock.now();
    expect((await send()).statusCode).toBe(200);
    world.b.clock.advance(60_000);
    expect((await send()).statusCode).toBe(200);
    expect((await confirmedAt())?.getTime()).toBe(first.getTime());
  });
});

describe('the simulated node settles only the invoices it issued', () => {
  async function invoiced(name: string) {
    const to = await receiver(name, ['MXN']);
    const answer = await payRequest(to, { currency: 'MXN' });
    expect(answer.statusCode, answer.body).toBe(200);
    const pr = PayReqResponse.fromJson(answer.body).pr;
    const hash = bolt11.decode(pr, REGTEST).tagsObject.payment_hash!;
    const payment = async () => world.b.handle.db.selectFrom('uma_incoming_payments').selectAll().where('payment_hash', '=', hash).executeTakeFirstOrThrow();
    return { to, pr, payment };
  }

  it('another invoice for its payment hash (1 sat, signed by another key) is 404 REFERENCE_NOT_FOUND: nothing credited, the real one still pays', async () => {
    const { to, pr, payment } = await invoiced('forged-invoice');
    const real = bolt11.decode(pr, REGTEST);
    const forged = bolt11.sign(
      bolt11.encode({
        network: REGTEST,
        millisatoshis: '1000',
        timestamp: real.timestamp,
        tags: real.tags.filter((t) => ['payment_hash', 'payment_secret', 'purpose_commit_hash', 'expire_time'].includes(t.tagName)),
      }),
      randomBytes(32).toString('hex'),
    ).paymentRequest!;
    expect(bolt11.decode(forged, REGTEST).tagsObject.payment_hash).toBe(real.tagsObject.payment_hash);
    expectEnvelope(await payInvoice(forged), 404, 'REFERENCE_NOT_FOUND');
    expect((await payment()).status).toBe('PENDING');
    expect((await incomingTo(to))[0]!.status).toBe('PENDING');
    expect((await payInvoice(pr)).statusCode).toBe(200);
    expect((await incomingTo(to))[0]!.status).toBe('COMPLETED');
  });

  it('its expiry job, should it run before the expiry on the platform clock, leaves the invoice payable', async () => {
    const { to, pr, payment } = await invoiced('expiry-job-early');
    await world.b.handle.db
      .updateTable('jobs')
      .set({ run_at: world.b.clock.now() })
      .where('kind', '=', INVOICE_EXPIRY_JOB)
      .where('status', '=', 'queued')
      .where('platform_id', '=', world.b.platform.uuid)
      .execute();
    while ((await world.b.jobs.runDue()) > 0);
    expect((await payment()).status).toBe('PENDING');
    expect((await payInvoice(pr)).statusCode).toBe(200);
    expect((await incomingTo(to))[0]!.status).toBe('COMPLETED');
  });

  it('at its expiry itself, an invoice is expired: 409 INVOICE_EXPIRED, the transaction FAILED QUOTE_EXPIRED, nothing credited', async () => {
    const { to, pr, payment } = await invoiced('at-expiry');
    world.b.clock.set((await payment()).expires_at);
    const refused = expectEnvelope(await payInvoice(pr), 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'INVOICE_EXPIRED' });
    expect((await payment()).status).toBe('EXPIRED');
    expect((await incomingTo(to)).map((t) => [t.status, t.failure_reason])).toEqual([['FAILED', 'QUOTE_EXPIRED']]);
  });
});

describe("the sender's lookup keeps only what the receiving VASP may answer", () => {
  /** `sender` looks `$carol` up at the fake VASP, which answers with `answer`. */
  async function lookupWith(sender: { id: string }, answer: (url: URL) => Promise<{ status: number; body: string }>) {
    const saved = world.fake.lnurlp;
    world.fake.lnurlp = answer;
    try {
      return await call('GET', `/receiver/uma/${encodeURIComponent(`$carol@${world.fake.domain}`)}?customerId=${sender.id}`);
    } finally {
      world.fake.lnurlp = saved;
    }
  }
  /** The SDK receiver's signed answer with `currencies` in place of its own (UMA does not sign them). */
  const answeringCurrencies = (currencies: unknown[]) => async (url: URL) => {
    const answer = JSON.parse((await signedLnurlpAnswer(url, world.fake.signing)).body) as Record<string, unknown>;
    return { status: 200, body: JSON.stringify({ ...answer, currencies }) };
  };
  const usd = (convertible: { min: number; max: number }, multiplier = 10) => ({ code: 'USD', name: 'US Dollar', symbol: '$', multiplier, decimals: 2, convertible });

  it('an answer signed for another receiver than the one looked up is PARSE_LNURLP_RESPONSE_ERROR, nothing kept', async () => {
    const sender = await receiver('lookup-other-receiver', ['MXN']);
    const response = await lookupWith(sender, async (url) => {
      const other = new URL(url.href);
      other.pathname = url.pathname.replace('carol', 'mallory');
      return signedLnurlpAnswer(other, world.fake.signing);
    });
    expectEnvelope(response, 400, 'PARSE_LNURLP_RESPONSE_ERROR');
    expect(await world.b.handle.db.selectFrom('uma_lookups').select('id').where('customer_id', '=', sender.id.slice('Customer:'.length)).execute()).toEqual([]);
  });

  it('a currency whose minimum is its maximum is kept; one whose minimum is 0 is offered from 1', async () => {
    const sender = await receiver('lookup-limits', ['MXN']);
    const exact = await lookupWith(sender, answeringCurrencies([usd({ min: 500, max: 500 })]));
    expect(exact.statusCode, exact.body).toBe(200);
    expect(exact.json().supportedCurrencies).toMatchObject([{ currency: { code: 'USD' }, min: 500, max: 500 }]);
    const fromZero = await lookupWith(sender, answeringCurrencies([usd({ min: 0, max: 500 })]));
    expect(fromZero.statusCode, fromZero.body).toBe(200);
    expect(fromZero.json().supportedCurrencies).toMatchObject([{ currency: { code: 'USD' }, min: 1, max: 500 }]);
  });

  it('a currency at a multiplier of 0 or below is left out, never a 500', async () => {
    const sender = await receiver('lookup-multiplier', ['MXN']);
    for (const multiplier of [0, -10]) {
      const response = await lookupWith(sender, answeringCurrencies([usd({ min: 100, max: 500 }, multiplier), { ...usd({ min: 100, max: 500 }), code: 'EUR', name: 'Euro', symbol: '€' }]));
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().supportedCurrencies.map((c: { currency: { code: string } }) => c.currency.code)).toEqual(['EUR']);
    }
  });
});
