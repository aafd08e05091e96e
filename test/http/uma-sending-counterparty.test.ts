import { Currency, getLnurlpResponse, getPayReqResponse, KycStatus, parseLnurlpRequest, PayRequest } from '@uma-sdk/core';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type ServerResponse, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { selfSignedChains, type Secp256k1Key } from '../../src/modules/uma/certificates.js';
import { bolt11, NETWORKS } from '../../src/modules/uma/invoices.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/**
 * The sending side against a receiving VASP that does not play fair: a local HTTP server built on
 * the UMA SDK (so its answers are signed and parse), whose currencies, conversions, invoices,
 * callbacks and Lightning node each test bends. Everything it answers is untrusted input to the
 * sender: whatever it says, the sender's quote prices exactly what was asked, the sender's money
 * is held once and released on every failure, and no answer is a 500.
 */

type Reply = { status: number; body: string };
type Body = Record<string, unknown>;

interface PayreqShape {
  /** The invoice's msats from what the SDK would invoice. */
  msats?: (invoiced: number) => number;
  fee?: number;
  /** `converted.decimals`. */
  decimals?: number;
  /** One invoice for every pay request. */
  invoice?: string;
  utxoCallback?: string;
  /** The invoice's lifetime, seconds. */
  expiry?: number;
  /** How long before now the invoice says it was issued, seconds. */
  issuedSecondsAgo?: number;
  /** Last word on the signed answer's JSON. */
  edit?: (answer: Body & { converted: Body }) => void;
  /** Signs with this key instead of the published one. */
  signingKey?: Secp256k1Key;
  /** Answers again, word for word, what it answered last. */
  replay?: boolean;
  /** The payee identifier it signs (default `$carol@<its domain>`). */
  payee?: string;
}

interface HostileVasp {
  domain: string;
  signing: Secp256k1Key;
  currencies: () => Currency[];
  payerData: Record<string, { mandatory: boolean }>;
  /** Last word on the signed lnurlp answer's JSON (its signature covers the receiver and nonce only). */
  lnurlpEdit: (answer: Body) => void;
  payreq: PayreqShape;
  /** Instead of answering the pay request: hang, or say too much. */
  payreqRaw?: (res: ServerResponse) => void;
  /** What the node answers to a presented invoice; default the preimage of one it issued. */
  pay?: () => Reply;
  requests: PayRequest[];
  lastPayreqAnswer?: string;
  presented: number;
  preimages: Map<string, string>;
  server: Server;
}

const mxn = () => new Currency('MXN', 'Mexican Peso', '$', 500, 1, 100_000_000, 2);
const defaultPayerData = () => ({ identifier: { mandatory: true }, compliance: { mandatory: true }, name: { mandatory: false } });
const nodeKey = randomBytes(32);
const hexChain = (pem: string) => [...pem.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/g)].map((m) => Buffer.from(m[1]!.replace(/\s/g, ''), 'base64').toString('hex'));

/** A regtest BOLT 11 invoice of the hostile node, whose preimage it keeps. */
function invoiceOf(vasp: HostileVasp, msats: number, expiry = 600, issuedSecondsAgo = 0): string {
  const preimage = randomBytes(32);
  const paymentHash = createHash('sha256').update(preimage).digest('hex');
  vasp.preimages.set(paymentHash, preimage.toString('hex'));
  const unsigned = bolt11().encode({
    network: NETWORKS.sandbox,
    millisatoshis: String(msats),
    timestamp: Math.floor(Date.now() / 1000) - issuedSecondsAgo,
    tags: [
      { tagName: 'payment_hash', data: paymentHash },
      { tagName: 'payment_secret', data: randomBytes(32).toString('hex') },
      { tagName: 'description', data: 'pay carol' },
      { tagName: 'expire_time', data: expiry },
    ],
  });
  return bolt11().sign(unsigned, nodeKey).paymentRequest!;
}

async function startHostileVasp(): Promise<HostileVasp> {
  const chains = selfSignedChains('hostile VASP', new Date(Date.now() - 3_600_000));
  const vasp = {
    signing: chains.signing.key,
    currencies: () => [mxn()],
    payerData: defaultPayerData(),
    lnurlpEdit: () => {},
    payreq: {},
    requests: [],
    presented: 0,
    preimages: new Map(),
  } as unknown as HostileVasp;
  const reply = (res: ServerResponse, { status, body }: Reply) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(body);
  };
  const answer = async (url: URL, body: string, res: ServerResponse): Promise<void> => {
    if (url.pathname === '/.well-known/lnurlpubkey') {
      return reply(res, { status: 200, body: JSON.stringify({ signingCertChain: hexChain(chains.signing.chainPem), encryptionCertChain: hexChain(chains.encryption.chainPem) }) });
    }
    if (url.pathname.startsWith('/.well-known/lnurlp/')) {
      const response = await getLnurlpResponse({
        request: parseLnurlpRequest(url),
        privateKeyBytes: vasp.signing.privateKey,
        requiresTravelRuleInfo: true,
        callback: `http://${url.host}/payreq`,
        encodedMetadata: JSON.stringify([['text/plain', 'pay carol']]),
        minSendableSats: 1,
        maxSendableSats: 10_000_000,
        payerDataOptions: vasp.payerData,
        currencyOptions: vasp.currencies(),
        receiverKycStatus: KycStatus.Verified,
      });
      const signed = JSON.parse(response.toJsonString()) as Body;
      vasp.lnurlpEdit(signed);
      return reply(res, { status: 200, body: JSON.stringify(signed) });
    }
    if (url.pathname === '/payreq') {
      if (vasp.payreqRaw) return vasp.payreqRaw(res);
      const request = PayRequest.parse(JSON.parse(body));
      vasp.requests.push(request);
      const offered = vasp.currencies().find((c) => c.code === request.receivingCurrencyCode)!;
      const shape = vasp.payreq;
      if (shape.replay && vasp.lastPayreqAnswer) return reply(res, { status: 200, body: vasp.lastPayreqAnswer });
      const payee = shape.payee ?? `$carol@${url.host}`;
      const response = await getPayReqResponse({
        request,
        metadata: JSON.stringify([['text/plain', 'pay carol']]),
        invoiceCreator: { createUmaInvoice: async (msats) => shape.invoice ?? invoiceOf(vasp, shape.msats ? shape.msats(msats) : msats, shape.expiry, shape.issuedSecondsAgo) },
        conversionRate: offered.multiplier,
        receivingCurrencyCode: offered.code,
        receivingCurrencyDecimals: shape.decimals ?? offered.decimals,
        receiverChannelUtxos: [],
        receiverFeesMillisats: shape.fee ?? 0,
        utxoCallback: shape.utxoCallback ?? `http://${url.host}/utxo-callback`,
        payeeData: { identifier: payee },
        receivingVaspPrivateKey: (shape.signingKey ?? vasp.signing).privateKey,
        payeeIdentifier: payee,
      });
      const signed = JSON.parse(response.toJsonString()) as Body & { converted: Body };
      shape.edit?.(signed);
      vasp.lastPayreqAnswer = JSON.stringify(signed);
      return reply(res, { status: 200, body: vasp.lastPayreqAnswer });
    }
    if (url.pathname === '/uma/lightning/pay') {
      vasp.presented++;
      if (vasp.pay) return reply(res, vasp.pay());
      const hash = bolt11().decode(JSON.parse(body).invoice, NETWORKS.sandbox).tagsObject.payment_hash!;
      const preimage = vasp.preimages.get(hash);
      return reply(res, preimage ? { status: 200, body: JSON.stringify({ preimage }) } : { status: 404, body: '{}' });
    }
    return reply(res, { status: 200, body: '{}' });
  };
  vasp.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      answer(new URL(req.url!, `http://${req.headers.host}`), Buffer.concat(chunks).toString(), res).catch((error: unknown) =>
        reply(res, { status: 500, body: JSON.stringify({ message: String(error) }) }),
      );
    });
  });
  await new Promise<void>((resolve) => vasp.server.listen(0, '127.0.0.1', resolve));
  vasp.domain = `127.0.0.1:${(vasp.server.address() as { port: number }).port}`;
  return vasp;
}

let ctx: TestContext;
let vasp: HostileVasp;
interface Sender {
  id: string;
  umaAddress: string;
  accountId: string;
}
let sam: Sender;

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const carol = () => `$carol@${vasp.domain}`;
const lookup = (sender: Sender = sam, query = `customerId=${sender.id}`) => call('GET', `/receiver/uma/${encodeURIComponent(carol())}?${query}`);
const balance = async (sender: Sender = sam) => {
  const accounts = (await call('GET', `/customers/internal-accounts?customerId=${sender.id}&currency=USD`)).json() as { data: Array<{ balance: { amount: number } }> };
  return accounts.data[0]!.balance.amount;
};
const drain = async () => {
  for (let i = 0; i < 50; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
  throw new Error('jobs kept coming');
};

/** A sandbox USD customer; `fund` gives its account $100,000. */
async function customer(platformCustomerId: string, extra: Body = {}, fund = true): Promise<Sender> {
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const created = await call('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId, fullName: 'Sam Sender', currencies: ['USD'], endUserTermsConsent: consent, ...extra });
  expect(created.statusCode, created.body).toBe(201);
  const { id, umaAddress } = created.json() as { id: string; umaAddress: string };
  const accounts = (await call('GET', `/customers/internal-accounts?customerId=${id}&currency=USD`)).json() as { data: Array<{ id: string }> };
  const accountId = accounts.data[0]!.id;
  if (fund) expect((await call('POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount: 10_000_000 })).statusCode).toBe(200);
  return { id, umaAddress, accountId };
}

/** A quote to carol on `lookupId` from `sender`'s account (RECEIVING 50,000 centavos unless `extra` says otherwise). */
function quoteOn(lookupId: string, sender: Sender = sam, extra: Body = {}) {
  return call('POST', '/quotes', {
    lookupId,
    source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
    destination: { destinationType: 'UMA_ADDRESS', umaAddress: carol(), currency: 'MXN' },
    lockedCurrencySide: 'RECEIVING',
    lockedCurrencyAmount: 50_000,
    ...extra,
  });
}

/** Looks carol up for `sender` and asks for a quote to her (quoteOn). */
async function quote(extra: Body = {}, sender: Sender = sam) {
  const looked = await lookup(sender);
  expect(looked.statusCode, looked.body).toBe(200);
  return quoteOn(looked.json().lookupId, sender, extra);
}

beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_UMA_TIMEOUT_MS: '3000' } });
  vasp = await startHostileVasp();
  const usd = { currencyCode: 'USD', minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
  expect((await call('PATCH', '/config', { umaDomain: 'sender.example', supportedCurrencies: [usd] })).statusCode).toBe(200);
  sam = await customer('sam', { email: 'sam@example.com' });
}, 300_000);

// The SDK stamps what it signs with the system time; the manual clock that judges it follows.
beforeEach(() => {
  ctx.clock.set(new Date());
  vasp.currencies = () => [mxn()];
  vasp.payerData = defaultPayerData();
  vasp.lnurlpEdit = () => {};
  vasp.payreq = {};
  delete vasp.payreqRaw;
  delete vasp.pay;
});

afterAll(async () => {
  vasp?.server.closeAllConnections();
  await new Promise((resolve) => vasp?.server.close(resolve));
  await ctx?.close();
});

describe('the lookup keeps only what a quote can use of the receiving VASP’s answer', () => {
  it('a pay-request callback the receiver’s own domain would not be reached by is refused, never a 500 at the quote', async () => {
    for (const callback of ['ftp://127.0.0.1/payreq', 'http://pay.example.com/payreq', 'https://user:secret@pay.example.com/payreq', 'not a url']) {
      vasp.lnurlpEdit = (answer) => (answer.callback = callback);
      const refused = expectEnvelope(await lookup(), 400, 'PARSE_LNURLP_RESPONSE_ERROR');
      expect(refused.details).toMatchObject({ vaspDomain: vasp.domain });
    }
  });

  it('a pay-request callback into the sandbox’s test VASP at a path that does not decode is that VASP’s refusal, not a 500', async () => {
    vasp.lnurlpEdit = (answer) => (answer.callback = 'https://sandbox.uma.money/uma/payreq/%E0%A4%A');
    const refused = expectEnvelope(await quote(), 400, 'INVALID_RECEIVER');
    expect(refused.details).toMatchObject({ counterpartyStatus: 404, counterpartyCode: 'UMA_NOT_FOUND' });
  });

  it('an answer in a UMA version Corridor does not speak is refused', async () => {
    vasp.lnurlpEdit = (answer) => (answer.umaVersion = '99.0');
    const refused = expectEnvelope(await lookup(), 400, 'PARSE_LNURLP_RESPONSE_ERROR');
    expect(refused.details).toMatchObject({ umaVersion: '99.0', supportedMajorVersions: expect.arrayContaining([1]) });
  });

  it('a currency counted in other decimals than its own, or at a rate that is no number, is left out; quoting it is INVALID_CURRENCY', async () => {
    vasp.currencies = () => [
      // Whole pesos: 50,000 "minor units" would be 50,000 pesos to the receiver, 500 to Corridor.
      new Currency('MXN', 'Mexican Peso', '$', 50_000, 1, 100_000_000, 0),
      new Currency('EUR', 'Euro', '€', 5e-324, 1, 100_000_000, 2),
      new Currency('PHP', 'Philippine Peso', '₱', 170, 1, 100_000_000, 2),
    ];
    const looked = await lookup();
    expect(looked.statusCode, looked.body).toBe(200);
    expect(looked.json().supportedCurrencies).toEqual([expect.objectContaining({ currency: expect.objectContaining({ code: 'PHP', decimals: 2 }) })]);
    const asked = vasp.requests.length;
    expectEnvelope(await quote(), 400, 'INVALID_CURRENCY');
    expect(vasp.requests).toHaveLength(asked);
  });

  it('a sender is required, as for every receiver lookup: naming neither is INVALID_INPUT on both fields', async () => {
    const refused = expectEnvelope(await lookup(sam, ''), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ errors: [expect.objectContaining({ field: 'customerId' }), expect.objectContaining({ field: 'senderUmaAddress' })] });
  });

  it('the sender named by address is held to the address rule, and to the customerId when both are given', async () => {
    const refused = expectEnvelope(await lookup(sam, `senderUmaAddress=${encodeURIComponent('not an address')}`), 400, 'INVALID_UMA_ADDRESS');
    expect(refused.details).toMatchObject({ field: 'senderUmaAddress' });
    const other = await customer('other-sender', {}, false);
    expectEnvelope(await lookup(sam, `customerId=${sam.id}&senderUmaAddress=${encodeURIComponent(other.umaAddress)}`), 400, 'INVALID_INPUT');
    expect((await lookup(sam, `customerId=${sam.id}&senderUmaAddress=${encodeURIComponent(sam.umaAddress)}`)).statusCode).toBe(200);
  });
});

describe('the pay-request answer prices exactly what was asked', () => {
  const refusals: Array<[string, Body, () => void]> = [
    ['an invoice for ten times the converted amount (RECEIVING)', {}, () => (vasp.payreq = { msats: (msats) => msats * 10 })],
    ['an invoice for ten times the msats sent (SENDING)', { lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 2_000 }, () => (vasp.payreq = { msats: (msats) => msats * 10 })],
    ['an invoice short of the converted amount', {}, () => (vasp.payreq = { msats: (msats) => Math.floor(msats / 2) })],
    ['the currency counted in other decimals', {}, () => (vasp.payreq = { decimals: 0 })],
    ['a negative fee', {}, () => (vasp.payreq = { edit: (answer) => (answer.converted.fee = -5_000) })],
    ['a fractional fee', {}, () => (vasp.payreq = { edit: (answer) => (answer.converted.fee = 0.5) })],
    ['a multiplier of zero', {}, () => (vasp.payreq = { edit: (answer) => (answer.converted.multiplier = 0) })],
    ['an invoice issued an hour ago to live ten minutes, expired', {}, () => (vasp.payreq = { issuedSecondsAgo: 3_600 })],
    ['a post-transaction callback that is not a URL', {}, () => (vasp.payreq = { utxoCallback: 'not a url' })],
    ['a post-transaction callback over plain http to a public host', {}, () => (vasp.payreq = { utxoCallback: 'http://pay.example.com/utxo' })],
    ['a conversion into another currency of the same decimals', {}, () => (vasp.payreq = { edit: (answer) => (answer.converted.currencyCode = 'PHP') })],
    ['less than the amount locked on RECEIVING, invoiced for what it converts', {}, () => (vasp.payreq = { msats: (msats) => (msats * 4) / 5, edit: (answer) => (answer.converted.amount = 40_000) })],
    ['an answer signed for another payee than the one looked up', {}, () => (vasp.payreq = { payee: `$dave@${vasp.domain}` })],
    ['an invoice that is no BOLT 11 invoice', {}, () => (vasp.payreq = { invoice: 'lnbcrt1notaninvoice' })],
    // Priced consistently (half the msats for half the amount), but not the msats the sender's locked amount buys and pays for.
    [
      'an invoice for half the msats sent, converted as such (SENDING)',
      { lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 2_000 },
      () => (vasp.payreq = { msats: (msats) => Math.floor(msats / 2), edit: (answer) => (answer.converted.amount = Math.floor(Number(answer.converted.amount) / 2)) }),
    ],
    ['an invoice that expires as it is issued (no time left to pay it)', {}, () => (vasp.payreq = { expiry: 0 })],
  ];

  it.each(refusals)('%s is INVALID_PAYREQ_RESPONSE; no quote, nothing held', async (_what, extra, bend) => {
    const before = await balance();
    const quotes = await ctx.handle.db.selectFrom('quotes').select('id').execute();
    bend();
    const refused = expectEnvelope(await quote(extra), 400, 'INVALID_PAYREQ_RESPONSE');
    expect(refused.details).toEqual({ vaspDomain: vasp.domain });
    expect(await ctx.handle.db.selectFrom('quotes').select('id').execute()).toHaveLength(quotes.length);
    expect(await balance()).toBe(before);
  });

  it('its signature is checked against the keys the receiver publishes, once (INVALID_SIGNATURE, INVALID_NONCE) and fresh (INVALID_TIMESTAMP)', async () => {
    vasp.payreq = { signingKey: selfSignedChains('stranger', new Date()).signing.key };
    expectEnvelope(await quote(), 401, 'INVALID_SIGNATURE');
    vasp.payreq = {};
    expect((await quote()).statusCode).toBe(201);
    vasp.payreq = { replay: true };
    expectEnvelope(await quote(), 400, 'INVALID_NONCE');
    vasp.payreq = {};
    const looked = (await lookup()).json() as { lookupId: string };
    // Six minutes on (the lookup lives fifteen): the receiver's answer, stamped now, is outside the five-minute window.
    ctx.clock.advance(6 * 60_000);
    expectEnvelope(await quoteOn(looked.lookupId), 400, 'INVALID_TIMESTAMP');
  });

  it('the receiver’s fee is in the invoice the sender pays and shown in receiving minor units (upstream’s counterpartyFixedFee)', async () => {
    vasp.payreq = { fee: 1_000 };
    const quoted = await quote();
    expect(quoted.statusCode, quoted.body).toBe(201);
    // 1,000 msats at 500 msats per centavo: 2 centavos.
    expect(quoted.json()).toMatchObject({ totalReceivingAmount: 50_000, rateDetails: { counterpartyMultiplier: 500, counterpartyFixedFee: 2 } });
    const row = await ctx.handle.db.selectFrom('uma_outgoing_payments').select('amount_msats').where('quote_id', '=', quoted.json().id.slice('Quote:'.length)).executeTakeFirstOrThrow();
    expect(BigInt(row.amount_msats)).toBe(50_000n * 500n + 1_000n);
  });

  it('a quote does not outlive its invoice: not its stated lifetime, nor what is left of it', async () => {
    vasp.payreq = { expiry: 30 };
    const quoted = await quote();
    expect(quoted.statusCode, quoted.body).toBe(201);
    const { createdAt, expiresAt } = quoted.json() as { createdAt: string; expiresAt: string };
    expect(Date.parse(expiresAt) - Date.parse(createdAt)).toBeLessThanOrEqual(30_000);
    // Issued 570 s ago to live 600: 30 s left (a second's rounding either way).
    vasp.payreq = { issuedSecondsAgo: 570 };
    const late = (await quote()).json() as { createdAt: string; expiresAt: string };
    expect(Date.parse(late.expiresAt) - Date.parse(late.createdAt)).toBeLessThanOrEqual(31_000);
  });
});

describe('the receiver’s limits bound the quote before the pay request', () => {
  it('the receiver’s minimum is a bound: one minor unit below it is AMOUNT_OUT_OF_RANGE and nothing is sent; at it, the pay request goes out', async () => {
    vasp.currencies = () => [new Currency('MXN', 'Mexican Peso', '$', 500, 100, 100_000_000, 2)];
    const asked = vasp.requests.length;
    const below = expectEnvelope(await quote({ lockedCurrencyAmount: 99 }), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(below.details).toEqual({ min: 100, max: 100_000_000, currency: 'MXN' });
    expect(vasp.requests).toHaveLength(asked);
    const at = await quote({ lockedCurrencyAmount: 100 });
    expect(at.statusCode, at.body).toBe(201);
    expect(vasp.requests).toHaveLength(asked + 1);
  });
});

describe('one invoice is one payment; the sender’s money is held once and released on every failure', () => {
  const execute = async (quoteId: string) => {
    const executed = await call('POST', `/quotes/${quoteId}/execute`, {});
    await drain();
    ctx.clock.advance(61_000);
    await drain();
    return executed;
  };

  it('an invoice another quote already holds is refused; the first quote pays it once', async () => {
    vasp.payreq = { invoice: invoiceOf(vasp, 50_000 * 500) };
    const first = await quote();
    expect(first.statusCode, first.body).toBe(201);
    const before = await balance();
    expectEnvelope(await quote(), 400, 'INVALID_PAYREQ_RESPONSE');
    const { id, transactionId, totalSendingAmount } = first.json() as { id: string; transactionId: string; totalSendingAmount: number };
    expect((await execute(id)).statusCode).toBe(200);
    expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
    expect(await balance()).toBe(before - totalSendingAmount);
    // Two quotes racing with one invoice: one records it.
    vasp.payreq = { invoice: invoiceOf(vasp, 50_000 * 500) };
    const raced = await Promise.all([quote(), quote()]);
    expect(raced.map((r) => r.statusCode).sort()).toEqual([201, 400]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('the receiving node refusing the invoice fails the payment and gives the sender everything back', async () => {
    const before = await balance();
    const quoted = await quote();
    expect(quoted.statusCode, quoted.body).toBe(201);
    vasp.pay = () => ({ status: 403, body: JSON.stringify({ code: 'COMPLIANCE_REJECTED' }) });
    const { id, transactionId } = quoted.json() as { id: string; transactionId: string };
    expect((await execute(id)).statusCode).toBe(200);
    expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED' });
    expect(await balance()).toBe(before);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a node answering 200 without the invoice’s preimage has not paid: nothing completes until it proves payment, then once', async () => {
    const before = await balance();
    const quoted = await quote();
    expect(quoted.statusCode, quoted.body).toBe(201);
    const { id, transactionId, totalSendingAmount } = quoted.json() as { id: string; transactionId: string; totalSendingAmount: number };
    const answers = [JSON.stringify({ preimage: 'ab'.repeat(32) }), JSON.stringify({ preimage: 'not hex' }), 'not json', '{}'];
    vasp.pay = () => ({ status: 200, body: answers.shift() ?? '{}' });
    const presented = vasp.presented;
    expect((await execute(id)).statusCode).toBe(200);
    for (let i = 0; i < 4; i++) {
      ctx.clock.advance(61_000);
      await drain();
    }
    expect(vasp.presented - presented).toBeGreaterThanOrEqual(4);
    expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'PROCESSING' });
    const row = await ctx.handle.db.selectFrom('uma_outgoing_payments').select('preimage').where('quote_id', '=', id.slice('Quote:'.length)).executeTakeFirstOrThrow();
    expect(row.preimage).toBeNull();
    // The node now releases the real preimage: paid once, the sender debited once.
    delete vasp.pay;
    ctx.clock.advance(61_000);
    await drain();
    expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
    expect(await balance()).toBe(before - totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a payment the node took in flight (202) and then refuses fails, and gives the sender everything back', async () => {
    const before = await balance();
    const quoted = await quote();
    expect(quoted.statusCode, quoted.body).toBe(201);
    const { id, transactionId } = quoted.json() as { id: string; transactionId: string };
    vasp.pay = () => {
      vasp.pay = () => ({ status: 409, body: JSON.stringify({ code: 'CONFLICT' }) });
      return { status: 202, body: '{}' };
    };
    expect((await execute(id)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) {
      ctx.clock.advance(61_000);
      await drain();
    }
    expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });
    expect(await balance()).toBe(before);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a presentation answered 429, 408 or a redirect (not the node’s word) is presented again, never refunded: the payment completes once', async () => {
    for (const status of [429, 408, 302]) {
      ctx.clock.set(new Date());
      const before = await balance();
      const quoted = await quote();
      expect(quoted.statusCode, quoted.body).toBe(201);
      vasp.pay = () => {
        delete vasp.pay;
        return { status, body: '{}' };
      };
      const presented = vasp.presented;
      const { id, transactionId, totalSendingAmount } = quoted.json() as { id: string; transactionId: string; totalSendingAmount: number };
      expect((await execute(id)).statusCode).toBe(200);
      for (let i = 0; i < 3; i++) {
        ctx.clock.advance(61_000);
        await drain();
      }
      expect((await call('GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
      expect(vasp.presented - presented).toBeGreaterThanOrEqual(2);
      expect(await balance()).toBe(before - totalSendingAmount);
    }
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a receiving VASP that hangs, or answers more than a pay-request answer can be, is QUOTE_REQUEST_FAILED within the deadline', async () => {
    const before = await balance();
    vasp.payreqRaw = () => {};
    const started = Date.now();
    expect(expectEnvelope(await quote(), 400, 'QUOTE_REQUEST_FAILED').details).toMatchObject({ reason: 'no answer within 3000 ms' });
    expect(Date.now() - started).toBeLessThan(10_000);
    vasp.payreqRaw = (res) => res.end(JSON.stringify({ pr: 'x'.repeat(200_000) }));
    expect(expectEnvelope(await quote(), 400, 'QUOTE_REQUEST_FAILED').details!.reason).toMatch(/larger than/);
    expect(await balance()).toBe(before);
  });
});

describe('UMA addresses keep their user part as written', () => {
  it('a sender and a receiver with capitals in their user parts: the answer is checked over the identifiers as sent and signed', async () => {
    const caps = await customer('caps', { umaAddress: '$Sam.Caps@sender.example' });
    const receiver = `$Carol@${vasp.domain}`;
    vasp.payreq = { payee: receiver };
    const looked = await call('GET', `/receiver/uma/${encodeURIComponent(receiver)}?customerId=${caps.id}`);
    expect(looked.statusCode, looked.body).toBe(200);
    const quoted = await call('POST', '/quotes', {
      lookupId: looked.json().lookupId,
      source: { sourceType: 'ACCOUNT', accountId: caps.accountId },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: receiver, currency: 'MXN' },
      lockedCurrencySide: 'RECEIVING',
      lockedCurrencyAmount: 50_000,
    });
    expect(quoted.statusCode, quoted.body).toBe(201);
    expect(vasp.requests.at(-1)!.payerData!.identifier).toBe('$Sam.Caps@sender.example');
  });
});

describe('nothing reaches the receiving VASP for a quote the sender’s side refuses', () => {
  it('a sender that may not send, or a source that is not the lookup’s sender, is refused before the pay request', async () => {
    const unconsented = await customer('no-terms', { endUserTermsConsent: undefined }, false);
    const other = await customer('not-the-lookup-sender', {}, false);
    const asked = vasp.requests.length;
    expectEnvelope(await quote({}, unconsented), 403, 'END_USER_TERMS_NOT_ACCEPTED');
    const looked = (await lookup(sam)).json() as { lookupId: string };
    expect(expectEnvelope(await quoteOn(looked.lookupId, other), 400, 'INVALID_INPUT').details).toMatchObject({ errors: [{ field: 'lookupId' }] });
    expect(vasp.requests).toHaveLength(asked);
  });

  it('payer data: what the receiver asks for, from the record or senderCustomerInfo; a mandatory field neither holds is refused first', async () => {
    vasp.payerData = { ...defaultPayerData(), name: { mandatory: true }, nationality: { mandatory: true }, phoneNumber: { mandatory: false } };
    const looked = await lookup();
    expect(looked.json().requiredPayerDataFields).toEqual(expect.arrayContaining([{ name: 'NATIONALITY', mandatory: true }]));
    const asked = vasp.requests.length;
    const missing = expectEnvelope(await quote(), 400, 'MISSING_MANDATORY_USER_INFO');
    expect(missing.details).toEqual({ missingFields: ['NATIONALITY'] });
    expectEnvelope(await quote({ senderCustomerInfo: { NATIONALITY: 5 } }), 400, 'INVALID_INPUT');
    expect(vasp.requests).toHaveLength(asked);
    const quoted = await quote({ senderCustomerInfo: { NATIONALITY: 'FR', TAX_ID: '123-45-6789' } });
    expect(quoted.statusCode, quoted.body).toBe(201);
    const sent = vasp.requests.at(-1)!.payerData as Body;
    expect(sent).toMatchObject({ name: 'Sam Sender', nationality: 'FR', identifier: sam.umaAddress });
    // Nothing the receiver did not ask for: no e-mail, no tax id.
    expect(Object.keys(sent).sort()).toEqual(['compliance', 'identifier', 'name', 'nationality']);
  });
});
