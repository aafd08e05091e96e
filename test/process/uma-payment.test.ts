import { getPayRequest, KycStatus, PubKeyResponse } from '@uma-sdk/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, basic } from '../helpers/context.js';
import { createSandboxPlatform, processDatabase, runCli, startCorridor, type CorridorProcess, type ProcessDatabase } from '../helpers/process.js';
import { fakeChain, startFakeVasp, type FakeVasp } from '../helpers/uma.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

type Body = Record<string, any>;

/**
 * Issue 17's headline: two `corridor serve` processes, each its own VASP domain
 * (`127.0.0.1:<port>`) and its own database, pay each other over UMA end to end — Anna at A
 * sends EUR, Bob at B receives MXN. Both ledgers move, both platforms hear their webhooks, and
 * `corridor ledger verify` is clean on both. Then a VASP played by the test with the SDK sends B
 * a tampered, a replayed, a stale and a badly certified pay request: each refused with its code,
 * and nothing more reaches Bob.
 */
describe('two Corridor processes pay each other over UMA', () => {
  interface Side {
    database: ProcessDatabase;
    server: CorridorProcess;
    hooks: WebhookReceiver;
    domain: string;
    api: (method: string, path: string, body?: unknown) => Promise<Response>;
  }
  let a: Side;
  let b: Side;
  let fake: FakeVasp;

  async function start(prefix: string): Promise<Side> {
    const database = await processDatabase(prefix);
    const created = await createSandboxPlatform(database.env);
    const authorization = basic(created.clientId, created.clientSecret);
    const server = await startCorridor({ ...database.env, CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '50' });
    const hooks = await WebhookReceiver.start();
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${server.port}${BASE}${path}`, {
        method,
        headers: { authorization, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    return { database, server, hooks, domain: `127.0.0.1:${server.port}`, api };
  }

  async function json(response: Promise<Response>, status = 200): Promise<Body> {
    const r = await response;
    const text = await r.text();
    expect(r.status, text).toBe(status);
    return JSON.parse(text) as Body;
  }

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const consent = () => ({ acceptedAt: new Date().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
  const currency = (code: string, extra: Body = {}) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'], ...extra });
  const account = async (side: Side, customerId: string, code: string) => (await json(side.api('GET', `/customers/internal-accounts?customerId=${customerId}&currency=${code}`))).data[0] as Body;

  beforeAll(async () => {
    [a, b] = await Promise.all([start('umaa'), start('umab')]);
    fake = await startFakeVasp();
  }, 300_000);

  afterAll(async () => {
    await Promise.all([a?.server.stop(), b?.server.stop()]);
    await Promise.all([a?.hooks.close(), b?.hooks.close(), new Promise((resolve) => fake?.server.close(resolve))]);
    await Promise.all([a?.database.cleanup(), b?.database.cleanup()]);
  });

  it('Anna at A sends EUR, Bob at B receives MXN; both ledgers verify; forged messages move nothing', async () => {
    for (const [side, code, extra] of [
      [a, 'EUR', {}],
      [b, 'MXN', { requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: true }] }],
    ] as const) {
      await json(side.api('PATCH', '/config', { umaDomain: side.domain, webhookEndpoint: side.hooks.url, supportedCurrencies: [currency(code, extra)] }));
      const keys = await json(side.api('GET', '/webhooks/signing-keys'));
      side.hooks.trust((keys.data as Array<{ publicKey: string }>).map((k) => k.publicKey));
    }
    const anna = await json(a.api('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'anna', fullName: 'Anna Sender', currencies: ['EUR'], endUserTermsConsent: consent() }), 201);
    const bob = await json(b.api('POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'bob', fullName: 'Bob Receiver', currencies: ['MXN'] }), 201);
    expect(bob.umaAddress.endsWith(`@${b.domain}`)).toBe(true);
    const annaAccount = await account(a, anna.id, 'EUR');
    await json(a.api('POST', `/sandbox/internal-accounts/${annaAccount.id}/fund`, { amount: 1_000_000 }));

    // The lookup and the quote: A speaks UMA to B over HTTP (lnurlp, then the pay request, which B's platform approves).
    const lookup = await json(a.api('GET', `/receiver/uma/${encodeURIComponent(bob.umaAddress)}?customerId=${anna.id}`));
    expect(lookup.supportedCurrencies.map((c: Body) => c.currency.code)).toEqual(['MXN']);
    const quote = await json(
      a.api('POST', '/quotes', {
        lookupId: lookup.lookupId,
        source: { sourceType: 'ACCOUNT', accountId: annaAccount.id },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: bob.umaAddress, currency: 'MXN' },
        lockedCurrencySide: 'RECEIVING',
        lockedCurrencyAmount: 50_000,
        immediatelyExecute: true,
      }),
      201,
    );
    expect(quote).toMatchObject({ sendingCurrency: { code: 'EUR' }, receivingCurrency: { code: 'MXN' }, totalReceivingAmount: 50_000 });

    // A's job worker pays the invoice at B's node: B credits Bob.
    const incoming = await until(
      "B's incoming payment",
      async () => (await json(b.api('GET', '/transactions?type=INCOMING'))).data as Body[],
      (list) => list.length === 1 && list[0]!.status === 'COMPLETED',
    );
    expect(incoming[0]).toMatchObject({ direction: 'CREDIT', receivedAmount: { amount: 50_000, currency: { code: 'MXN' } }, source: { umaAddress: anna.umaAddress } });
    expect((await account(b, bob.id, 'MXN')).balance.amount).toBe(50_000);
    // A's payment completes at the rail's settlement time: A's platform moves its clock past it.
    await json(a.api('POST', '/sandbox/clock/advance', { seconds: 61 }));
    await until('A\'s payment', async () => (await json(a.api('GET', `/transactions/${quote.transactionId}`))).status as string, (s) => s === 'COMPLETED');
    expect((await account(a, anna.id, 'EUR')).balance.amount).toBe(1_000_000 - quote.totalSendingAmount);

    // Each platform heard its side.
    await until('A\'s webhooks', async () => a.hooks.of('OUTGOING_PAYMENT.COMPLETED').length, (n) => n === 1);
    await until('B\'s webhooks', async () => b.hooks.of('INCOMING_PAYMENT.COMPLETED').length, (n) => n === 1);
    expect(a.hooks.of('OUTGOING_PAYMENT.COMPLETED')[0]!.body.data).toMatchObject({ id: quote.transactionId, status: 'COMPLETED' });
    expect(b.hooks.of('INCOMING_PAYMENT.PENDING')[0]!.body.data).toMatchObject({ id: incoming[0]!.id, status: 'PENDING', counterpartyInformation: { name: 'Anna Sender' } });
    const paymentHooks = [...a.hooks.received, ...b.hooks.received].filter((w) => /^(OUTGOING|INCOMING)_PAYMENT\./.test(w.body.type as string));
    expect(paymentHooks.length).toBeGreaterThanOrEqual(4);
    expect(paymentHooks.every((w) => w.verified)).toBe(true);

    // A VASP played by the test pays Bob: B checks every pay request before anything is opened.
    const keysB = PubKeyResponse.fromJson(await (await fetch(`http://${b.domain}/.well-known/lnurlpubkey`)).text());
    const payRequest = async () =>
      JSON.parse(
        (
          await getPayRequest({
            receiverEncryptionPubKey: keysB.getEncryptionPubKey(),
            sendingVaspPrivateKey: fake.signing.privateKey,
            receivingCurrencyCode: 'MXN',
            amount: 10_000,
            isAmountInReceivingCurrency: true,
            payerIdentifier: `$mallory@${fake.domain}`,
            payerKycStatus: KycStatus.Verified,
            umaMajorVersion: 1,
            trInfo: '{}',
            payerData: { name: 'Mallory' } as never,
          })
        ).toJsonString(),
      ) as Body;
    const send = async (body: Body) => {
      const r = await fetch(`http://${b.domain}/uma/payreq/${encodeURIComponent(bob.umaAddress.split('@')[0])}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, code: ((await r.json()) as Body).code as string | undefined };
    };
    b.hooks.answer = () => ({ status: 403, body: '{}' });
    const tampered = await payRequest();
    tampered.payerData.compliance.signatureNonce += '1';
    expect(await send(tampered)).toEqual({ status: 401, code: 'INVALID_SIGNATURE' });
    const stale = await payRequest();
    stale.payerData.compliance.signatureTimestamp -= 3_600;
    expect(await send(stale)).toEqual({ status: 400, code: 'INVALID_TIMESTAMP' });
    const once = await payRequest();
    // Signed right, it reaches B's platform, which refuses it (403): still nothing for Bob.
    expect(await send(once)).toEqual({ status: 400, code: 'SENDER_NOT_ACCEPTED' });
    expect(await send(once)).toEqual({ status: 400, code: 'INVALID_NONCE' });
    const saved = { signing: fake.signing, chainPem: fake.chainPem };
    const expired = fakeChain(new Date(Date.now() - 4000 * 86_400_000));
    fake.signing = expired.key;
    fake.chainPem = expired.chainPem;
    expect(await send(await payRequest())).toEqual({ status: 400, code: 'CERT_CHAIN_EXPIRED' });
    const other = fakeChain();
    fake.signing = saved.signing;
    fake.chainPem = saved.chainPem.split('-----END CERTIFICATE-----')[0] + '-----END CERTIFICATE-----\n' + other.chainPem.slice(other.chainPem.indexOf('-----END CERTIFICATE-----') + 26);
    expect(await send(await payRequest())).toEqual({ status: 400, code: 'CERT_CHAIN_INVALID' });
    fake.chainPem = saved.chainPem;

    expect((await account(b, bob.id, 'MXN')).balance.amount).toBe(50_000);
    const after = (await json(b.api('GET', '/transactions?type=INCOMING'))).data as Body[];
    // Only the signed-right request opened a transaction, and B's platform rejected it.
    expect(after.map((t) => t.status).sort()).toEqual(['COMPLETED', 'REJECTED']);

    await Promise.all([a.server.stop(), b.server.stop()]);
    for (const side of [a, b]) {
      const verify = await runCli(side.database.env, 'ledger', 'verify');
      expect(verify.code, verify.output).toBe(0);
      expect(verify.stdout).toContain('ledger verify: OK');
    }
  }, 300_000);
});
