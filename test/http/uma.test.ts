import {
  getPayRequest,
  getPostTransactionCallback,
  getSignedLnurlpRequestUrl,
  InMemoryNonceValidator,
  KycStatus,
  LnurlpResponse,
  PayReqResponse,
  PubKeyResponse,
  verifyPayReqResponseSignature,
} from '@uma-sdk/core';
import bolt11 from 'bolt11';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { builtInRates, ExchangeRates } from '../../src/modules/rates/index.js';
import { findUmaLookup } from '../../src/modules/uma/index.js';
import { msatsPerMinorUnit } from '../../src/modules/uma/rates.js';
import { toPem } from '../../src/platform/crypto/pem.js';
import { issueCertificate, newSecp256k1Key, type Secp256k1Key } from '../../src/modules/uma/certificates.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { fakeChain, signedLnurlpAnswer, startFakeVasp, type FakeVasp } from '../helpers/uma.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Two Corridors, each its own VASP on its own port (`127.0.0.1:<port>` is its UMA domain; the
 * sandbox reaches loopback over http, as the UMA SDK does), and a third VASP played by the test
 * with the SDK itself, whose keys, certificates and answers each test chooses.
 */
let a: TestContext;
let b: TestContext;
let domainA: string;
let domainB: string;
let alice: { id: string; umaAddress: string };
let fake: FakeVasp;
let bob: { id: string; umaAddress: string };
/** Platform B's webhook endpoint: it decides B's incoming payments (approves unless a test says otherwise). */
let hooksB: WebhookReceiver;

type Body = Record<string, unknown>;

const call = (ctx: TestContext, p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function customer(ctx: TestContext, p: TestPlatform, id: string, extra: Body = {}) {
  const response = await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: id, fullName: 'Test Person', ...extra });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string; umaAddress: string };
}

const lookup = (address: string, query = `customerId=${alice.id}`, ctx = a, p = a.platform) =>
  call(ctx, p, 'GET', `/receiver/uma/${encodeURIComponent(address)}?${query}`);

beforeAll(async () => {
  a = await createTestContext();
  b = await createTestContext();
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  await b.app.listen({ port: 0, host: '127.0.0.1' });
  domainA = `127.0.0.1:${(a.app.server.address() as { port: number }).port}`;
  domainB = `127.0.0.1:${(b.app.server.address() as { port: number }).port}`;
  const eur = { currencyCode: 'EUR', minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
  const mxn = {
    currencyCode: 'MXN',
    minAmount: 100,
    maxAmount: 1_000_000,
    requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: true }, { name: 'NATIONALITY', mandatory: false }],
    enabledTransactionTypes: ['INCOMING', 'OUTGOING'],
  };
  expect((await call(a, a.platform, 'PATCH', '/config', { umaDomain: domainA, supportedCurrencies: [eur] })).statusCode).toBe(200);
  expect((await call(b, b.platform, 'PATCH', '/config', { umaDomain: domainB, supportedCurrencies: [mxn] })).statusCode).toBe(200);
  alice = await customer(a, a.platform, 'alice', { currencies: ['EUR'] });
  bob = await customer(b, b.platform, 'bob', { currencies: ['MXN'] });
  fake = await startFakeVasp();
  hooksB = await WebhookReceiver.start();
  expect((await call(b, b.platform, 'PATCH', '/config', { webhookEndpoint: hooksB.url })).statusCode).toBe(200);
}, 300_000);

// The SDK stamps the messages it builds with the system time; the manual clocks that judge them
// follow it, however long the contexts took to start.
beforeEach(() => {
  a.clock.set(new Date());
  b.clock.set(new Date());
  hooksB.answer = () => ({ status: 200, body: '{}' });
});

afterAll(async () => {
  await hooksB?.close();
  await new Promise((resolve) => fake?.server.close(resolve));
  await a?.close();
  await b?.close();
});

describe('GET /.well-known/lnurlpubkey', () => {
  it('publishes the deployment signing and encryption chains, which the SDK reads', async () => {
    const response = await b.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' });
    expect(response.statusCode).toBe(200);
    const keys = PubKeyResponse.fromJson(response.body);
    expect(keys.signingCertChain).toHaveLength(2);
    expect(keys.encryptionCertChain).toHaveLength(2);
    expect(Buffer.from(keys.getSigningPubKey()).toString('hex')).toBe(response.json().signingPubKey);
    expect(keys.getEncryptionPubKey()).not.toEqual(keys.getSigningPubKey());
    // The same keys on every start: they are kept (sealed) in the database.
    const again = await b.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' });
    expect(again.json().signingPubKey).toBe(response.json().signingPubKey);
  });
});

describe('GET /receiver/uma/{receiverUmaAddress} between two Corridors', () => {
  it("looks up a customer of the other Corridor over UMA, end to end", async () => {
    expect(bob.umaAddress.endsWith(`@${domainB}`)).toBe(true);
    const response = await lookup(bob.umaAddress);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({
      receiverUmaAddress: bob.umaAddress.toLowerCase(),
      supportedCurrencies: [{ currency: { code: 'MXN', name: 'Mexican Peso', decimals: 2 }, min: 100, max: 1_000_000 }],
      requiredPayerDataFields: expect.arrayContaining([
        { name: 'IDENTIFIER', mandatory: true },
        { name: 'FULL_NAME', mandatory: true },
        { name: 'NATIONALITY', mandatory: false },
      ]),
    });
    // EUR → MXN at the rates module's mid-market rates (both sides price BTC from the same sandbox table).
    const snapshot = await new ExchangeRates({ db: a.handle.db, clock: a.clock, sandbox: builtInRates }).snapshot('sandbox');
    expect(body.supportedCurrencies[0].estimatedExchangeRate).toBeCloseTo(Number(snapshot.perUsd.MXN) / Number(snapshot.perUsd.EUR), 6);
    expect(body.lookupId).toMatch(/^Lookup:[0-9a-f-]{36}$/);
    const stored = await a.handle.db.selectFrom('uma_lookups').selectAll().where('id', '=', body.lookupId.slice('Lookup:'.length)).executeTakeFirstOrThrow();
    expect(stored.receiver_uma_address).toBe(bob.umaAddress.toLowerCase());
    expect(stored.expires_at.getTime() - stored.created_at.getTime()).toBe(900_000);
    // Each side kept the other's nonce, and marked the one it signed into the lnurlp exchange for
    // Bob's domain (the lookup, the answer): neither is a pay request from Bob.
    const nonces = async (ctx: TestContext, domain: string) => (await ctx.handle.db.selectFrom('uma_nonces').select('nonce').where('vasp_domain', '=', domain).execute()).map((row) => row.nonce);
    expect(await nonces(b, domainA)).toHaveLength(1);
    expect(await nonces(b, domainB)).toEqual([expect.stringMatching(/^signed-in-lnurlp:/)]);
    const kept = await nonces(a, domainB);
    expect(kept).toHaveLength(2);
    expect(kept.filter((nonce) => nonce.startsWith('signed-in-lnurlp:'))).toHaveLength(1);
  });

  it('keeps the lookup for the quote until it expires; then, or for an id it never made, LOOKUP_REQUEST_NOT_FOUND', async () => {
    const { lookupId } = (await lookup(bob.umaAddress)).json() as { lookupId: string };
    const found = await findUmaLookup(a.handle.db, a.clock, a.platform.uuid, lookupId);
    expect(found.response).toMatchObject({ callback: `http://${domainB}/uma/payreq/${encodeURIComponent(bob.umaAddress.split('@')[0]!)}`, senderCurrency: 'EUR' });
    const other = await a.newPlatform();
    await expect(findUmaLookup(a.handle.db, a.clock, other.uuid, lookupId)).rejects.toMatchObject({ code: 'LOOKUP_REQUEST_NOT_FOUND' });
    await expect(findUmaLookup(a.handle.db, a.clock, a.platform.uuid, 'Lookup:019542f5-b3e7-1d02-0000-000000000009')).rejects.toMatchObject({ code: 'LOOKUP_REQUEST_NOT_FOUND' });
    a.clock.advance(900_000);
    try {
      await expect(findUmaLookup(a.handle.db, a.clock, a.platform.uuid, lookupId)).rejects.toMatchObject({ code: 'LOOKUP_REQUEST_NOT_FOUND' });
    } finally {
      a.clock.advance(-900_000);
    }
  });

  it('names the sender by UMA address as well', async () => {
    const response = await lookup(bob.umaAddress, `senderUmaAddress=${encodeURIComponent(alice.umaAddress)}`);
    expect(response.statusCode, response.body).toBe(200);
  });

  it('takes user parts with a + on both sides, as the UMA SDK does (platform/uma-address.ts)', async () => {
    const plusSender = await customer(a, a.platform, 'ann-plus', { currencies: ['EUR'], umaAddress: `$ann+eur@${domainA}` });
    const plusReceiver = await customer(b, b.platform, 'bob-plus', { currencies: ['MXN'], umaAddress: `$bob+mx@${domainB}` });
    const response = await lookup(plusReceiver.umaAddress, `senderUmaAddress=${encodeURIComponent(plusSender.umaAddress)}`);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ receiverUmaAddress: plusReceiver.umaAddress });
  });

  it('UMA_NOT_FOUND for an address nobody has at the receiving VASP', async () => {
    expectEnvelope(await lookup(`$nobody@${domainB}`), 404, 'UMA_NOT_FOUND');
  });

  it('INVALID_UMA_ADDRESS for a malformed address', async () => {
    for (const address of ['bob@example.com', '$bob', '$bo b@example.com', '$a@b@c', '$bob@exa_mple.com', `$bob@${domainB}:1`, '$bob@host:70000']) {
      const refused = expectEnvelope(await lookup(address), 400, 'INVALID_UMA_ADDRESS');
      expect(refused.details).toEqual({ field: 'receiverUmaAddress', value: address });
    }
  });

  it('names the sender: none is 400 INVALID_INPUT, an unknown one 404 USER_NOT_FOUND', async () => {
    expectEnvelope(await lookup(bob.umaAddress, ''), 400, 'INVALID_INPUT');
    expectEnvelope(await lookup(bob.umaAddress, 'customerId=Customer:019542f5-b3e7-1d02-0000-000000000001'), 404, 'USER_NOT_FOUND');
  });

  it('LOOKUP_REQUEST_FAILED without a umaDomain for the sender, or when the receiving VASP does not answer', async () => {
    const other = await a.newPlatform();
    const sender = await customer(a, other, 'no-domain');
    const noDomain = await lookup(bob.umaAddress, `customerId=${sender.id}`, a, other);
    expect(expectEnvelope(noDomain, 400, 'LOOKUP_REQUEST_FAILED').details).toMatchObject({ reason: 'UMA_DOMAIN_NOT_SET' });
    const closed = new URL(`http://${fake.domain}`).port;
    const down = createServer();
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const port = (down.address() as { port: number }).port;
    await new Promise((resolve) => down.close(resolve));
    expect(closed).not.toBe(String(port));
    expectEnvelope(await lookup(`$bob@127.0.0.1:${port}`), 400, 'LOOKUP_REQUEST_FAILED');
  });

  it('production platforms never reach private addresses', async () => {
    const prod = await a.newPlatform('production');
    await call(a, prod, 'PATCH', '/config', { umaDomain: 'pay.example.com' });
    const sender = await customer(a, prod, 'prod-sender');
    const response = await lookup(bob.umaAddress, `customerId=${sender.id}`, a, prod);
    expect(expectEnvelope(response, 400, 'LOOKUP_REQUEST_FAILED').details!.reason).toMatch(/loopback/);
  });
});

describe("the receiving VASP's answer, checked by the sender", () => {
  const withFake = async (setup: () => void, run: () => Promise<void>) => {
    const saved = { signing: fake.signing, chainPem: fake.chainPem, lnurlp: fake.lnurlp };
    setup();
    try {
      await run();
    } finally {
      Object.assign(fake, saved);
    }
  };
  const carol = () => `$carol@${fake.domain}`;

  it("a VASP built on the SDK answers; the lookup carries its currencies and payer data", async () => {
    const response = await lookup(carol());
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      supportedCurrencies: [{ currency: { code: 'PHP' }, min: 100, max: 5_000_000 }],
      requiredPayerDataFields: expect.arrayContaining([{ name: 'FULL_NAME', mandatory: true }, { name: 'EMAIL', mandatory: false }]),
    });
  });

  it('leaves out currencies a quote could not use (fractional limits, unknown codes), never answering 500', async () => {
    await withFake(
      () =>
        (fake.lnurlp = async (url) => {
          const answer = JSON.parse((await signedLnurlpAnswer(url, fake.signing)).body);
          answer.currencies.push(
            { code: 'USD', name: 'US Dollar', symbol: '$', multiplier: 10, decimals: 2, convertible: { min: 1.5, max: 100 } },
            { code: 'ZZZ', name: 'Nothing', symbol: 'Z', multiplier: 10, decimals: 2, convertible: { min: 1, max: 100 } },
          );
          return { status: 200, body: JSON.stringify(answer) };
        }),
      async () => {
        const response = await lookup(carol());
        expect(response.statusCode, response.body).toBe(200);
        expect(response.json().supportedCurrencies.map((c: { currency: { code: string } }) => c.currency.code)).toEqual(['PHP']);
      },
    );
  });

  it('INVALID_SIGNATURE when the answer is signed by a key other than the published one', async () => {
    const stranger = newSecp256k1Key();
    await withFake(
      () => (fake.lnurlp = (url) => signedLnurlpAnswer(url, stranger)),
      async () => {
        expectEnvelope(await lookup(carol()), 401, 'INVALID_SIGNATURE');
      },
    );
  });

  it('INVALID_NONCE when the same signed answer comes twice', async () => {
    let first: { status: number; body: string } | undefined;
    await withFake(
      () => (fake.lnurlp = async (url) => (first ??= await signedLnurlpAnswer(url, fake.signing))),
      async () => {
        expect((await lookup(carol())).statusCode).toBe(200);
        expectEnvelope(await lookup(carol()), 400, 'INVALID_NONCE');
      },
    );
  });

  it('INVALID_TIMESTAMP when the answer is older than the window', async () => {
    a.clock.advance(10 * 60_000);
    try {
      expectEnvelope(await lookup(carol()), 400, 'INVALID_TIMESTAMP');
    } finally {
      a.clock.advance(-10 * 60_000);
    }
  });

  it('CERT_CHAIN_INVALID when the leaf is not issued by the root that follows it', async () => {
    const other = fakeChain();
    const leaf = fake.chainPem.split('-----END CERTIFICATE-----')[0] + '-----END CERTIFICATE-----\n';
    const foreignRoot = other.chainPem.slice(other.chainPem.indexOf('-----END CERTIFICATE-----') + '-----END CERTIFICATE-----\n'.length);
    await withFake(
      () => (fake.chainPem = leaf + foreignRoot),
      async () => {
        expectEnvelope(await lookup(carol()), 400, 'CERT_CHAIN_INVALID');
      },
    );
  });

  it('CERT_CHAIN_EXPIRED when a certificate of the chain has expired', async () => {
    const root = newSecp256k1Key();
    const leafKey = newSecp256k1Key();
    const notBefore = new Date(Date.now() - 400 * 86_400_000);
    const notAfter = new Date(Date.now() - 30 * 86_400_000);
    const rootDer = issueCertificate({ subject: 'old root', subjectKey: root.publicKeyObject, issuer: 'old root', issuerKey: root.keyObject, notBefore, notAfter, ca: true });
    const leafDer = issueCertificate({ subject: 'old leaf', subjectKey: leafKey.publicKeyObject, issuer: 'old root', issuerKey: root.keyObject, notBefore, notAfter, ca: false });
    await withFake(
      () => {
        fake.signing = leafKey;
        fake.chainPem = toPem(leafDer) + toPem(rootDer);
        fake.lnurlp = (url) => signedLnurlpAnswer(url, leafKey);
      },
      async () => {
        expectEnvelope(await lookup(carol()), 400, 'CERT_CHAIN_EXPIRED');
      },
    );
  });

  it('INVALID_PUBKEY_FORMAT when the leaf key is not on secp256k1', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const p256 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const der = issueCertificate({ subject: 'p256', subjectKey: p256.publicKey, issuer: 'p256', issuerKey: p256.privateKey, notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + 86_400_000), ca: true });
    await withFake(
      () => (fake.chainPem = toPem(der)),
      async () => {
        expectEnvelope(await lookup(carol()), 400, 'INVALID_PUBKEY_FORMAT');
      },
    );
  });

  it('PARSE_LNURLP_RESPONSE_ERROR for an answer that is not an lnurlp response; MISSING_REQUIRED_UMA_PARAMETERS for a plain LNURL one', async () => {
    await withFake(
      () => (fake.lnurlp = async () => ({ status: 200, body: '<html>not json</html>' })),
      async () => {
        expectEnvelope(await lookup(carol()), 400, 'PARSE_LNURLP_RESPONSE_ERROR');
      },
    );
    await withFake(
      () => (fake.lnurlp = async () => ({ status: 200, body: JSON.stringify({ tag: 'payRequest', callback: 'x', minSendable: 1, maxSendable: 2, metadata: '[]' }) })),
      async () => {
        expectEnvelope(await lookup(carol()), 400, 'MISSING_REQUIRED_UMA_PARAMETERS');
      },
    );
  });

  it('LOOKUP_REQUEST_FAILED with the counterparty code when it refuses; UMA_NOT_FOUND when it has no such receiver', async () => {
    await withFake(
      () => (fake.lnurlp = async () => ({ status: 400, body: JSON.stringify({ status: 'ERROR', reason: 'no', code: 'SENDER_NOT_ACCEPTED' }) })),
      async () => {
        const body = expectEnvelope(await lookup(carol()), 400, 'LOOKUP_REQUEST_FAILED');
        expect(body.details).toMatchObject({ counterpartyStatus: 400, counterpartyCode: 'SENDER_NOT_ACCEPTED' });
      },
    );
    await withFake(
      () => (fake.lnurlp = async () => ({ status: 404, body: '{}' })),
      async () => {
        expectEnvelope(await lookup(carol()), 404, 'UMA_NOT_FOUND');
      },
    );
  });
});

describe('GET /.well-known/lnurlp/{user}: the receiving side checks every request', () => {
  const bobUser = () => bob.umaAddress.split('@')[0]!;

  async function signedRequest(options: { signing?: Secp256k1Key; receiver?: string } = {}) {
    const url = await getSignedLnurlpRequestUrl({
      isSubjectToTravelRule: true,
      receiverAddress: options.receiver ?? bob.umaAddress,
      senderVaspDomain: fake.domain,
      signingPrivateKey: (options.signing ?? fake.signing).privateKey,
    });
    return url;
  }
  const send = (url: URL, host = domainB) => b.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host } });

  it('answers a signed request with a signed UMA response the SDK accepts', async () => {
    const response = await send(await signedRequest());
    expect(response.statusCode, response.body).toBe(200);
    const parsed = LnurlpResponse.fromJson(response.body);
    expect(parsed.isUma()).toBe(true);
    expect(parsed.compliance!.receiverIdentifier).toBe(bob.umaAddress.toLowerCase());
    expect(parsed.callback).toBe(`http://${domainB}/uma/payreq/${encodeURIComponent(bobUser())}`);
    expect(parsed.currencies!.map((c) => c.code)).toEqual(['MXN']);
    expect(parsed.payerData).toMatchObject({ identifier: { mandatory: true }, compliance: { mandatory: true }, name: { mandatory: true }, nationality: { mandatory: false } });
  });

  it('INVALID_NONCE for a replayed request', async () => {
    const url = await signedRequest();
    expect((await send(url)).statusCode).toBe(200);
    expectEnvelope(await send(url), 400, 'INVALID_NONCE');
  });

  it('INVALID_SIGNATURE for a tampered signature, a signature that does not parse, or a key other than the published one', async () => {
    const url = await signedRequest();
    const signature = url.searchParams.get('signature')!;
    const position = signature.length - 10;
    url.searchParams.set('signature', signature.slice(0, position) + (signature[position] === '0' ? '1' : '0') + signature.slice(position + 1));
    expectEnvelope(await send(url), 401, 'INVALID_SIGNATURE');
    const garbled = await signedRequest();
    garbled.searchParams.set('signature', 'zz');
    expectEnvelope(await send(garbled), 401, 'INVALID_SIGNATURE');
    expectEnvelope(await send(await signedRequest({ signing: newSecp256k1Key() })), 401, 'INVALID_SIGNATURE');
  });

  it('a refused signature does not use up its nonce', async () => {
    const url = await signedRequest();
    const real = url.searchParams.get('signature')!;
    url.searchParams.set('signature', (await signedRequest({ signing: newSecp256k1Key() })).searchParams.get('signature')!);
    expectEnvelope(await send(url), 401, 'INVALID_SIGNATURE');
    url.searchParams.set('signature', real);
    expect((await send(url)).statusCode).toBe(200);
  });

  it('INVALID_TIMESTAMP for a request outside the window, either way', async () => {
    for (const shift of [10 * 60_000, -10 * 60_000]) {
      b.clock.advance(shift);
      try {
        expectEnvelope(await send(await signedRequest()), 400, 'INVALID_TIMESTAMP');
      } finally {
        b.clock.advance(-shift);
      }
    }
  });

  it("CERT_CHAIN_INVALID / CERT_CHAIN_EXPIRED for the sender's certificates", async () => {
    const saved = fake.chainPem;
    try {
      const other = fakeChain();
      fake.chainPem = saved.split('-----END CERTIFICATE-----')[0] + '-----END CERTIFICATE-----\n' + other.chainPem.slice(other.chainPem.indexOf('-----END CERTIFICATE-----') + 26);
      expectEnvelope(await send(await signedRequest()), 400, 'CERT_CHAIN_INVALID');
      const expired = fakeChain(new Date(Date.now() - 4000 * 86_400_000));
      fake.chainPem = expired.chainPem;
      expectEnvelope(await send(await signedRequest({ signing: expired.key })), 400, 'CERT_CHAIN_EXPIRED');
    } finally {
      fake.chainPem = saved;
    }
  });

  it('MISSING_REQUIRED_UMA_PARAMETERS when some UMA parameters are left out, or all', async () => {
    const url = await signedRequest();
    url.searchParams.delete('nonce');
    expectEnvelope(await send(url), 400, 'MISSING_REQUIRED_UMA_PARAMETERS');
    expectEnvelope(await send(new URL(`http://${domainB}/.well-known/lnurlp/${bobUser()}`)), 400, 'MISSING_REQUIRED_UMA_PARAMETERS');
  });

  it("INVALID_SIGNATURE, saying nothing of the network, when the sender's keys cannot be fetched", async () => {
    // A port nothing listens on: one just freed (a fixed low port may be taken on a shared machine).
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const domain = `127.0.0.1:${(probe.address() as { port: number }).port}`;
    await new Promise((resolve) => probe.close(resolve));
    const url = await getSignedLnurlpRequestUrl({
      isSubjectToTravelRule: true,
      receiverAddress: bob.umaAddress,
      senderVaspDomain: domain,
      signingPrivateKey: fake.signing.privateKey,
    });
    const body = expectEnvelope(await send(url), 401, 'INVALID_SIGNATURE');
    expect(body.details, JSON.stringify(body)).toEqual({ vaspDomain: domain });
  });

  it('INVALID_REQUEST_FORMAT for a UMA version Corridor does not speak', async () => {
    const url = await signedRequest();
    url.searchParams.set('umaVersion', '99.0');
    const body = expectEnvelope(await send(url), 400, 'INVALID_REQUEST_FORMAT');
    expect(body.details).toMatchObject({ supportedMajorVersions: expect.arrayContaining([1]) });
  });

  it('UMA_NOT_FOUND for a user nobody is, or a domain no platform serves', async () => {
    expectEnvelope(await send(await signedRequest({ receiver: `$nobody@${domainB}` })), 404, 'UMA_NOT_FOUND');
    expectEnvelope(await send(await signedRequest(), 'elsewhere.example'), 404, 'UMA_NOT_FOUND');
    expectEnvelope(await send(await signedRequest(), 'bad host^'), 404, 'UMA_NOT_FOUND');
  });

  it('SENDER_NOT_ACCEPTED: a production receiver takes nothing from a local VASP', async () => {
    const prod = await b.newPlatform('production');
    await call(b, prod, 'PATCH', '/config', { umaDomain: 'receive.example.com' });
    const dave = await customer(b, prod, 'dave');
    expect(dave.umaAddress.endsWith('@receive.example.com')).toBe(true);
    const url = await signedRequest({ receiver: dave.umaAddress });
    expectEnvelope(await send(url, 'receive.example.com'), 400, 'SENDER_NOT_ACCEPTED');
  });
});

describe('POST /uma/payreq/{user}: the pay request', () => {
  async function bKeys() {
    return PubKeyResponse.fromJson((await b.app.inject({ method: 'GET', url: '/.well-known/lnurlpubkey' })).body);
  }
  async function payRequest(overrides: { amount?: number; currency?: string; payerData?: Body; requestedPayeeData?: Body } = {}) {
    const keys = await bKeys();
    return getPayRequest({
      receiverEncryptionPubKey: keys.getEncryptionPubKey(),
      sendingVaspPrivateKey: fake.signing.privateKey,
      receivingCurrencyCode: overrides.currency ?? 'MXN',
      amount: overrides.amount ?? 50_000,
      isAmountInReceivingCurrency: true,
      payerIdentifier: `$alice@${fake.domain}`,
      payerKycStatus: KycStatus.Verified,
      umaMajorVersion: 1,
      trInfo: JSON.stringify({ name: 'Alice' }),
      payerData: (overrides.payerData ?? { name: 'Alice Sender' }) as never,
      ...(overrides.requestedPayeeData ? { requestedPayeeData: overrides.requestedPayeeData as never } : {}),
    });
  }
  const post = (body: string) =>
    b.app.inject({
      method: 'POST',
      url: `/uma/payreq/${encodeURIComponent(bob.umaAddress.split('@')[0]!)}`,
      headers: { host: domainB, 'content-type': 'application/json' },
      payload: body,
    });

  it('answers with a BOLT 11 invoice for the converted amount and signed payee data, and records the pending payment', async () => {
    const request = await payRequest();
    const response = await post(request.toJsonString());
    expect(response.statusCode, response.body).toBe(200);
    const answer = PayReqResponse.fromJson(response.body);
    // B's rates module prices the conversion: msats per centavo at its current window's mid rates.
    const snapshot = await new ExchangeRates({ db: b.handle.db, clock: b.clock, sandbox: builtInRates }).snapshot('sandbox');
    const multiplier = msatsPerMinorUnit(snapshot, 'MXN')!;
    const expectedMsats = Math.round(50_000 * multiplier);
    expect(answer.converted).toMatchObject({ amount: 50_000, currencyCode: 'MXN', decimals: 2, fee: 0 });
    const invoice = bolt11.decode(answer.pr, { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] });
    expect(answer.pr.startsWith('lnbcrt')).toBe(true);
    expect(invoice.millisatoshis).toBe(String(expectedMsats));
    expect(invoice.complete).toBe(true);
    const valid = await verifyPayReqResponseSignature(answer, `$alice@${fake.domain}`, bob.umaAddress.toLowerCase(), await bKeys(), new InMemoryNonceValidator(0));
    expect(valid).toBe(true);
    const row = await b.handle.db.selectFrom('uma_incoming_payments').selectAll().where('payment_hash', '=', invoice.tagsObject.payment_hash!).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'PENDING', currency_code: 'MXN', amount: 50_000n, amount_msats: BigInt(expectedMsats), customer_id: bob.id.slice('Customer:'.length) });
    expect(row.invoice).toBe(answer.pr);
  });

  it('INVALID_NONCE for a replayed pay request', async () => {
    const body = (await payRequest()).toJsonString();
    expect((await post(body)).statusCode).toBe(200);
    expectEnvelope(await post(body), 400, 'INVALID_NONCE');
  });

  it('INVALID_SIGNATURE for tampered compliance data', async () => {
    const request = JSON.parse((await payRequest()).toJsonString());
    request.payerData.compliance.signatureNonce = `${request.payerData.compliance.signatureNonce}1`;
    expectEnvelope(await post(JSON.stringify(request)), 401, 'INVALID_SIGNATURE');
  });

  it('refuses a currency the receiver does not take, an amount outside its limits, a missing mandatory field and an unreadable request', async () => {
    expectEnvelope(await post((await payRequest({ currency: 'EUR' })).toJsonString()), 400, 'INVALID_CURRENCY');
    expectEnvelope(await post((await payRequest({ amount: 50 })).toJsonString()), 400, 'AMOUNT_OUT_OF_RANGE');
    expectEnvelope(await post((await payRequest({ payerData: {} })).toJsonString()), 400, 'MISSING_REQUIRED_UMA_PARAMETERS');
    expectEnvelope(await post('{"amount": "x"}'), 400, 'INVALID_REQUEST_FORMAT');
  });

  const bobBalance = async () => {
    const accounts = (await call(b, b.platform, 'GET', `/customers/internal-accounts?customerId=${bob.id}&currency=MXN`)).json() as { data: Body[] };
    return (accounts.data[0]!.balance as { amount: number }).amount;
  };
  const payInvoice = (invoice: string) =>
    b.app.inject({ method: 'POST', url: '/uma/lightning/pay', headers: { host: domainB, 'content-type': 'application/json' }, payload: { invoice } });
  const transactionOf = async (invoice: string) => {
    const hash = bolt11.decode(invoice, { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] }).tagsObject.payment_hash!;
    const row = await b.handle.db.selectFrom('uma_incoming_payments').selectAll().where('payment_hash', '=', hash).executeTakeFirstOrThrow();
    return `Transaction:${row.transaction_id}`;
  };

  it("asks B's platform first (INCOMING_PAYMENT.PENDING with the requested payee fields) and answers its receiverCustomerInfo as payee data", async () => {
    hooksB.answer = () => ({ status: 200, body: JSON.stringify({ receiverCustomerInfo: { FULL_NAME: 'Bob Receiver' } }) });
    const before = hooksB.of('INCOMING_PAYMENT.PENDING').length;
    const response = await post((await payRequest({ requestedPayeeData: { name: { mandatory: true }, compliance: { mandatory: true }, identifier: { mandatory: true } } })).toJsonString());
    expect(response.statusCode, response.body).toBe(200);
    const asked = hooksB.of('INCOMING_PAYMENT.PENDING').slice(before);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.body.data).toMatchObject({
      status: 'PENDING',
      type: 'INCOMING',
      source: { sourceType: 'UMA_ADDRESS', umaAddress: `$alice@${fake.domain}` },
      receivedAmount: { amount: 50_000, currency: { code: 'MXN' } },
      counterpartyInformation: { name: 'Alice Sender', identifier: `$alice@${fake.domain}` },
      requestedReceiverCustomerInfoFields: [{ name: 'FULL_NAME', mandatory: true }],
    });
    const answer = PayReqResponse.fromJson(response.body);
    expect(answer.payeeData).toMatchObject({ identifier: bob.umaAddress.toLowerCase(), name: 'Bob Receiver' });
  });

  it("B's platform refusing (its 403): SENDER_NOT_ACCEPTED, 422 MISSING_REQUIRED_UMA_PARAMETERS with its fields, no answer SERVICE_SWITCH_ERROR — no invoice, nothing credited", async () => {
    const balance = await bobBalance();
    hooksB.answer = () => ({ status: 403, body: '{"reason":"RISK"}' });
    expect(expectEnvelope(await post((await payRequest()).toJsonString()), 400, 'SENDER_NOT_ACCEPTED').details).toEqual({ reason: 'RISK' });
    hooksB.answer = () => ({ status: 422, body: '{"requiredFields":["NATIONALITY"]}' });
    expect(expectEnvelope(await post((await payRequest()).toJsonString()), 400, 'MISSING_REQUIRED_UMA_PARAMETERS').details).toEqual({ requiredFields: ['NATIONALITY'] });
    hooksB.answer = () => ({ status: 500 });
    expectEnvelope(await post((await payRequest()).toJsonString()), 500, 'SERVICE_SWITCH_ERROR');
    const failed = await b.handle.db.selectFrom('transactions').select(['status', 'failure_reason']).where('type', '=', 'INCOMING').orderBy('id', 'desc').limit(3).execute();
    expect(failed.map((t) => [t.status, t.failure_reason])).toEqual([
      ['FAILED', 'PAYMENT_APPROVAL_WEBHOOK_ERROR'],
      ['FAILED', 'PAY_REQUEST_FAILED'],
      ['REJECTED', 'COMPLIANCE_REJECTED'],
    ]);
    expect(await bobBalance()).toBe(balance);
  });

  it('paying the invoice at the node credits Bob once and releases the preimage of its payment hash', async () => {
    const balance = await bobBalance();
    const answer = PayReqResponse.fromJson((await post((await payRequest()).toJsonString())).body);
    const transactionId = await transactionOf(answer.pr);
    expect((await call(b, b.platform, 'GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'PENDING' });
    const paid = await payInvoice(answer.pr);
    expect(paid.statusCode, paid.body).toBe(200);
    const { preimage } = paid.json() as { preimage: string };
    const hash = bolt11.decode(answer.pr, { bech32: 'bcrt', pubKeyHash: 0x6f, scriptHash: 0xc4, validWitnessVersions: [0, 1] }).tagsObject.payment_hash;
    expect(createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex')).toBe(hash);
    expect(await bobBalance()).toBe(balance + 50_000);
    expect((await call(b, b.platform, 'GET', `/transactions/${transactionId}`)).json()).toMatchObject({ status: 'COMPLETED', receivedAmount: { amount: 50_000 } });
    // Paying again proves the payment again and moves nothing.
    expect((await payInvoice(answer.pr)).json()).toEqual({ preimage });
    expect(await bobBalance()).toBe(balance + 50_000);
    await expectLedgerConsistent(b.handle.db);
  });

  it('an expired invoice is refused 409 and its transaction fails QUOTE_EXPIRED; an unknown one is 404', async () => {
    const balance = await bobBalance();
    const answer = PayReqResponse.fromJson((await post((await payRequest()).toJsonString())).body);
    b.clock.advance(601_000);
    // The expiry job fails the unpaid payment without anyone presenting the invoice.
    while ((await b.jobs.runDue(50)) > 0);
    expect((await call(b, b.platform, 'GET', `/transactions/${await transactionOf(answer.pr)}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXPIRED' });
    expectEnvelope(await payInvoice(answer.pr), 409, 'CONFLICT');
    // Presented after expiry before the job ran, it expires then. (The SDK signs with the system time.)
    b.clock.set(new Date());
    const late = PayReqResponse.fromJson((await post((await payRequest()).toJsonString())).body);
    b.clock.advance(601_000);
    expectEnvelope(await payInvoice(late.pr), 409, 'CONFLICT');
    expect((await call(b, b.platform, 'GET', `/transactions/${await transactionOf(late.pr)}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXPIRED' });
    expectEnvelope(await payInvoice('lnbcrt1nothing'), 404, 'REFERENCE_NOT_FOUND');
    expect(await bobBalance()).toBe(balance);
    await expectLedgerConsistent(b.handle.db);
  });

  it("the sender's post-transaction callback (UMAD-07) is checked: signed by the sending VASP, fresh, once", async () => {
    const answer = PayReqResponse.fromJson((await post((await payRequest()).toJsonString())).body);
    const callbackUrl = new URL(answer.payeeData!.compliance!.utxoCallback as string);
    expect(callbackUrl.host).toBe(domainB);
    const send = (body: unknown) => b.app.inject({ method: 'POST', url: callbackUrl.pathname, headers: { host: domainB }, payload: body as object });
    const callback = JSON.parse(JSON.stringify(await getPostTransactionCallback({ utxos: [], vaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey })));
    expectEnvelope(await send({ ...callback, signature: callback.signature.replace(/^../, '00') }), 401, 'INVALID_SIGNATURE');
    expect((await send(callback)).statusCode).toBe(200);
    expectEnvelope(await send(callback), 400, 'INVALID_NONCE');
    const stale = JSON.parse(JSON.stringify(await getPostTransactionCallback({ utxos: [], vaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey })));
    b.clock.advance(3_600_000);
    expectEnvelope(await send(stale), 400, 'INVALID_TIMESTAMP');
    expectEnvelope(await send({ ...stale, vaspDomain: domainA }), 401, 'INVALID_SIGNATURE');
  });
});

describe('paying a UMA address: a quote on a lookupId, executed, both ledgers move', () => {
  const consent = () => ({ acceptedAt: a.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
  let anna: { id: string; umaAddress: string; accountId: string };
  const balanceOf = async (ctx: TestContext, p: TestPlatform, customerId: string, code: string) => {
    const accounts = (await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=${code}`)).json() as { data: Body[] };
    return { id: accounts.data[0]!.id as string, available: (accounts.data[0]!.balance as { amount: number }).amount };
  };
  const quoteTo = async (address: string, extra: Body = {}) => {
    const looked = await lookup(address, `customerId=${anna.id}`);
    expect(looked.statusCode, looked.body).toBe(200);
    return call(a, a.platform, 'POST', '/quotes', {
      lookupId: looked.json().lookupId,
      source: { sourceType: 'ACCOUNT', accountId: anna.accountId },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency: 'MXN' },
      lockedCurrencySide: 'RECEIVING',
      lockedCurrencyAmount: 50_000,
      ...extra,
    });
  };
  const drain = async (ctx: TestContext) => {
    for (let i = 0; i < 50; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
    throw new Error('jobs kept coming');
  };

  beforeAll(async () => {
    const created = await customer(a, a.platform, 'anna', { currencies: ['EUR'], endUserTermsConsent: consent() });
    const account = await balanceOf(a, a.platform, created.id, 'EUR');
    expect((await call(a, a.platform, 'POST', `/sandbox/internal-accounts/${account.id}/fund`, { amount: 1_000_000 })).statusCode).toBe(200);
    anna = { ...created, accountId: account.id };
  });

  it("a sandbox platform whose umaDomain a production platform has since taken sends nothing more as that domain's VASP", async () => {
    const looked = await lookup(bob.umaAddress, `customerId=${anna.id}`);
    expect(looked.statusCode, looked.body).toBe(200);
    // A production platform takes the domain (a sandbox holder does not block it); A keeps it.
    const prod = await a.newPlatform('production');
    await a.handle.db.updateTable('platform_configs').set({ uma_domain: domainA, uma_domain_claimed_at: a.clock.now() }).where('platform_id', '=', prod.uuid).execute();
    try {
      const quoted = await call(a, a.platform, 'POST', '/quotes', {
        lookupId: looked.json().lookupId,
        source: { sourceType: 'ACCOUNT', accountId: anna.accountId },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress, currency: 'MXN' },
        lockedCurrencySide: 'RECEIVING',
        lockedCurrencyAmount: 50_000,
      });
      expect(expectEnvelope(quoted, 400, 'QUOTE_REQUEST_FAILED').details).toEqual({ reason: 'UMA_DOMAIN_HELD_BY_ANOTHER_PLATFORM' });
      const again = await lookup(bob.umaAddress, `customerId=${anna.id}`);
      expect(expectEnvelope(again, 400, 'LOOKUP_REQUEST_FAILED').details).toEqual({ reason: 'UMA_DOMAIN_HELD_BY_ANOTHER_PLATFORM' });
    } finally {
      await a.handle.db.updateTable('platform_configs').set({ uma_domain: null, uma_domain_claimed_at: null }).where('platform_id', '=', prod.uuid).execute();
    }
    expect((await lookup(bob.umaAddress, `customerId=${anna.id}`)).statusCode).toBe(200);
  });

  it('EUR at A to MXN at B: the pay request prices the quote, the invoice is paid at execution, A debits Anna and B credits Bob', async () => {
    const annaBefore = (await balanceOf(a, a.platform, anna.id, 'EUR')).available;
    const bobBefore = (await balanceOf(b, b.platform, bob.id, 'MXN')).available;
    const asked = hooksB.of('INCOMING_PAYMENT.PENDING').length;
    const quoted = await quoteTo(bob.umaAddress);
    expect(quoted.statusCode, quoted.body).toBe(201);
    const quote = quoted.json();
    expect(quote).toMatchObject({
      status: 'PENDING',
      sendingCurrency: { code: 'EUR' },
      receivingCurrency: { code: 'MXN' },
      totalReceivingAmount: 50_000,
      feesIncluded: 0,
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress, currency: 'MXN' },
      rateDetails: { counterpartyFixedFee: 0 },
    });
    // B's platform was asked about the payment when the pay request arrived.
    expect(hooksB.of('INCOMING_PAYMENT.PENDING')).toHaveLength(asked + 1);
    // The sender pays the invoice's value at A's rate: 50,000 centavos in EUR cents, rounded up.
    const snapshot = await new ExchangeRates({ db: a.handle.db, clock: a.clock, sandbox: builtInRates }).snapshot('sandbox');
    const expectedCents = Math.ceil((50_000 * msatsPerMinorUnit(snapshot, 'MXN')!) / msatsPerMinorUnit(snapshot, 'EUR')!);
    expect(Math.abs(quote.totalSendingAmount - expectedCents)).toBeLessThanOrEqual(1);

    const executed = await call(a, a.platform, 'POST', `/quotes/${quote.id}/execute`, {});
    expect(executed.statusCode, executed.body).toBe(200);
    await drain(a);
    // Handed to the Lightning leg: B settled the invoice and credited Bob; A waits for the rail's settlement time.
    const incoming = await b.handle.db.selectFrom('transactions').selectAll().where('type', '=', 'INCOMING').orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow();
    expect(incoming).toMatchObject({ status: 'COMPLETED', receiving_currency: 'MXN' });
    expect((await balanceOf(b, b.platform, bob.id, 'MXN')).available).toBe(bobBefore + 50_000);
    a.clock.advance(61_000);
    await drain(a);
    const sent = (await call(a, a.platform, 'GET', `/transactions/${quote.transactionId}`)).json();
    expect(sent).toMatchObject({ type: 'OUTGOING', status: 'COMPLETED', destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress }, receivedAmount: { amount: 50_000 } });
    expect((await balanceOf(a, a.platform, anna.id, 'EUR')).available).toBe(annaBefore - quote.totalSendingAmount);
    // The post-transaction callback reached B, signed by A.
    const paid = await b.handle.db.selectFrom('uma_incoming_payments').selectAll().where('transaction_id', '=', incoming.id).executeTakeFirstOrThrow();
    expect(paid.status).toBe('COMPLETED');
    expect(paid.sender_confirmed_at).not.toBeNull();
    const events = await a.handle.db.selectFrom('events').select('type').where('resource_id', '=', quote.transactionId).orderBy('id').execute();
    expect(events.map((e) => e.type)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    await expectLedgerConsistent(a.handle.db);
    await expectLedgerConsistent(b.handle.db);
  });

  it('a retry with the same Idempotency-Key replays the quote without sending the pay request again', async () => {
    const looked = await lookup(bob.umaAddress, `customerId=${anna.id}`);
    expect(looked.statusCode, looked.body).toBe(200);
    const body = {
      lookupId: looked.json().lookupId,
      source: { sourceType: 'ACCOUNT', accountId: anna.accountId },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress, currency: 'MXN' },
      lockedCurrencySide: 'RECEIVING',
      lockedCurrencyAmount: 50_000,
    };
    const send = (payload: Body) =>
      a.app.inject({ method: 'POST', url: `${BASE}/quotes`, headers: { authorization: a.platform.auth, 'idempotency-key': `uma-retry-${anna.id}` }, payload });
    const asked = hooksB.of('INCOMING_PAYMENT.PENDING').length;
    const first = await send(body);
    expect(first.statusCode, first.body).toBe(201);
    expect(hooksB.of('INCOMING_PAYMENT.PENDING')).toHaveLength(asked + 1);
    const again = await send(body);
    expect(again.statusCode, again.body).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().id).toBe(first.json().id);
    // Another request under the same key is refused before anything reaches B.
    expectEnvelope(await send({ ...body, lockedCurrencyAmount: 60_000 }), 409, 'CONFLICT');
    expect(hooksB.of('INCOMING_PAYMENT.PENDING')).toHaveLength(asked + 1);
    expect(await a.handle.db.selectFrom('quotes').select('id').where('id', '=', first.json().id.slice('Quote:'.length)).execute()).toHaveLength(1);
  });

  it('REALTIME_FUNDING to a UMA address: the payment opens at creation (no execution), the platform pays in, B credits Bob', async () => {
    const bobBefore = (await balanceOf(b, b.platform, bob.id, 'MXN')).available;
    const quoted = await quoteTo(bob.umaAddress, { source: { sourceType: 'REALTIME_FUNDING', currency: 'EUR', customerId: anna.id } });
    expect(quoted.statusCode, quoted.body).toBe(201);
    const quote = quoted.json();
    expect(quote.status).toBe('PENDING');
    expect((await call(a, a.platform, 'GET', `/transactions/${quote.transactionId}`)).json()).toMatchObject({ status: 'PENDING', source: { sourceType: 'REALTIME_FUNDING' } });
    expectEnvelope(await call(a, a.platform, 'POST', `/quotes/${quote.id}/execute`, {}), 400, 'INVALID_INPUT');
    const sent = await call(a, a.platform, 'POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'EUR' });
    expect(sent.statusCode, sent.body).toBe(200);
    await drain(a);
    expect((await balanceOf(b, b.platform, bob.id, 'MXN')).available).toBe(bobBefore + 50_000);
    a.clock.advance(61_000);
    await drain(a);
    expect((await call(a, a.platform, 'GET', `/transactions/${quote.transactionId}`)).json()).toMatchObject({ status: 'COMPLETED' });
    await expectLedgerConsistent(a.handle.db);
    await expectLedgerConsistent(b.handle.db);
  });

  it('needs the lookupId, for the same address and sender; B refusing is INVALID_RECEIVER with its code; nothing moves', async () => {
    const annaBefore = (await balanceOf(a, a.platform, anna.id, 'EUR')).available;
    const body = { source: { sourceType: 'ACCOUNT', accountId: anna.accountId }, destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress }, lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 50_000 };
    expectEnvelope(await call(a, a.platform, 'POST', '/quotes', body), 400, 'INVALID_INPUT');
    expectEnvelope(await call(a, a.platform, 'POST', '/quotes', { ...body, lookupId: 'Lookup:00000000-0000-7000-8000-000000000000' }), 404, 'LOOKUP_REQUEST_NOT_FOUND');
    const looked = (await lookup(bob.umaAddress, `customerId=${anna.id}`)).json();
    const other = await customer(b, b.platform, `other-${Date.now()}`, { currencies: ['MXN'] });
    expectEnvelope(await call(a, a.platform, 'POST', '/quotes', { ...body, lookupId: looked.lookupId, destination: { destinationType: 'UMA_ADDRESS', umaAddress: other.umaAddress } }), 400, 'INVALID_RECEIVER');
    expectEnvelope(await quoteTo(bob.umaAddress, { lockedCurrencyAmount: 5 }), 400, 'AMOUNT_OUT_OF_RANGE');
    hooksB.answer = () => ({ status: 403, body: '{"reason":"RISK"}' });
    const refused = expectEnvelope(await quoteTo(bob.umaAddress), 400, 'INVALID_RECEIVER');
    expect(refused.details).toMatchObject({ counterpartyStatus: 400, counterpartyCode: 'SENDER_NOT_ACCEPTED' });
    expect((await balanceOf(a, a.platform, anna.id, 'EUR')).available).toBe(annaBefore);
    await expectLedgerConsistent(a.handle.db);
  });

  it('an answer that is not a pay-request response is PARSE_PAYREQ_RESPONSE_ERROR; one that does not hold together INVALID_PAYREQ_RESPONSE', async () => {
    const receiver = `$carol@${fake.domain}`;
    fake.lnurlp = async (url) => {
      const answer = await signedLnurlpAnswer(url, fake.signing);
      return { ...answer, body: answer.body.replace(/"PHP"/, '"MXN"') };
    };
    fake.payreq = async () => ({ status: 200, body: '{"hello":"world"}' });
    try {
      // UMA's lnurlp signature covers the receiver's identity and nonce, not the currencies: the edited answer still verifies.
      const looked = await lookup(receiver, `customerId=${anna.id}`);
      expect(looked.statusCode, looked.body).toBe(200);
      const body = {
        lookupId: looked.json().lookupId,
        source: { sourceType: 'ACCOUNT', accountId: anna.accountId },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: receiver, currency: 'MXN' },
        lockedCurrencySide: 'RECEIVING',
        lockedCurrencyAmount: 50_000,
      };
      expectEnvelope(await call(a, a.platform, 'POST', '/quotes', body), 400, 'PARSE_PAYREQ_RESPONSE_ERROR');
      // A plain LNURL answer (an invoice, no UMA conversion or payee compliance data).
      fake.payreq = async () => ({ status: 200, body: JSON.stringify({ pr: 'lnbcrt1invoice', routes: [] }) });
      expectEnvelope(await call(a, a.platform, 'POST', '/quotes', body), 400, 'INVALID_PAYREQ_RESPONSE');
      fake.payreq = async () => ({ status: 500, body: '{"code":"BOOM"}' });
      expectEnvelope(await call(a, a.platform, 'POST', '/quotes', body), 400, 'QUOTE_REQUEST_FAILED');
    } finally {
      fake.lnurlp = async (url) => signedLnurlpAnswer(url, fake.signing);
      fake.payreq = async () => ({ status: 404, body: '{}' });
    }
  });
});

