import { Currency, getLnurlpResponse, getPayReqResponse, KycStatus, parseLnurlpRequest, PayRequest } from '@uma-sdk/core';
import { createECDH, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { PlatformClock } from '../../platform/clock.js';
import { currency } from '../../platform/currencies.js';
import type { ExchangeRates } from '../rates/index.js';
import { parseUmaAddress } from '../../platform/uma-address.js';
import { certificatesFromPem } from '../../platform/crypto/pem.js';
import { selfSignedChains, type SelfSignedChains } from './certificates.js';
import type { VaspResponse } from './http-client.js';
import { bolt11, INVOICE_EXPIRY_SECONDS, NETWORKS } from './invoices.js';
import { convertPayRequest, lnurlpSendableSats, withReceivingAmount } from './pay-conversion.js';
import { msatsPerMinorUnit } from './rates.js';
import type { InProcessVasp, VaspCaller, VaspExchange } from './transport.js';

/** The domains of the hosted sandbox's test VASP, which CI suites written against it pay. */
export const TEST_VASP_DOMAINS = ['sandbox.uma.money', 'sandbox.grid.uma.money'];

/** How long a `$pending.long.*` payment stays in flight, in the sending platform's time (its test clock skips it). */
export const LONG_PENDING_SECONDS = 3600;

type Outcome = 'SETTLES' | 'STAYS_PENDING' | 'FAILS_COMPLIANCE';

/** The test receivers, by user part: the currency each receives and how a payment to it ends. */
const TEST_RECEIVERS: Record<string, { currency: string; outcome: Outcome }> = {
  '$success.usd': { currency: 'USD', outcome: 'SETTLES' },
  '$success.eur': { currency: 'EUR', outcome: 'SETTLES' },
  '$success.mxn': { currency: 'MXN', outcome: 'SETTLES' },
  '$pending.long.usd': { currency: 'USD', outcome: 'STAYS_PENDING' },
  '$fail.compliance.usd': { currency: 'USD', outcome: 'FAILS_COMPLIANCE' },
};

/** What each test receiver takes, in minor units of its currency. */
const MIN_MINOR_UNITS = 1;
const MAX_MINOR_UNITS = 100_000_000;

/**
 * The user part a path names (`/.well-known/lnurlp/{user}`, `/uma/payreq/{user}`); undefined when
 * its escapes do not decode. The pay-request URL is whatever a counterparty's lnurlp answer named
 * as its callback, so it may be any text on this domain.
 */
function userPartOf(url: URL): string | undefined {
  try {
    return decodeURIComponent(url.pathname.split('/')[3] ?? '');
  } catch {
    return undefined;
  }
}

const json = (status: number, body: unknown): VaspResponse => ({ ok: true, status, body: JSON.stringify(body) });
const refuse = (status: number, code: string, message: string) => json(status, { code, message });

export interface SimulatedTestVaspDeps {
  masterKey: Buffer;
  platformClock: PlatformClock;
  rates: ExchangeRates;
}

/**
 * The hosted sandbox's test counterparty, played inside Corridor for sandbox platforms (the
 * transport hands it their messages to its domains; production platforms never reach it). It
 * answers as a receiving VASP built on the UMA SDK would — signed lnurlp and pay-request answers,
 * its published keys, BOLT 11 invoices of its own node — so the sending side runs its usual
 * checks on it. It does not check the sender's signatures: that would mean fetching the
 * platform's keys from its umaDomain, which a CI machine need not serve.
 *
 * Stateless across processes: an invoice names its receiver in its description and carries a
 * random payment secret; the preimage is HMAC(node key, secret), the node key derived from the
 * master key, so any process settles any process's invoice. Its signing keys are made once per
 * process; each message is checked against the keys of the process that signed it.
 */
export class SimulatedTestVasp implements InProcessVasp {
  private readonly nodeKey: Buffer;
  private readonly nodePublicKey: string;
  private chains: SelfSignedChains | undefined;

  constructor(private readonly deps: SimulatedTestVaspDeps) {
    this.nodeKey = Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'corridor/uma-test-vasp-node', 32));
    const ecdh = createECDH('secp256k1');
    ecdh.setPrivateKey(this.nodeKey);
    this.nodePublicKey = ecdh.getPublicKey('hex', 'compressed');
  }

  serves(domain: string): boolean {
    return TEST_VASP_DOMAINS.includes(domain);
  }

  async answer(caller: VaspCaller, exchange: VaspExchange): Promise<VaspResponse> {
    const path = exchange.url.pathname;
    if (exchange.method === 'GET' && path === '/.well-known/lnurlpubkey') {
      const chains = this.keys();
      const hex = (pem: string) => certificatesFromPem(pem).map((c) => c.raw.toString('hex'));
      return json(200, { signingCertChain: hex(chains.signing.chainPem), encryptionCertChain: hex(chains.encryption.chainPem) });
    }
    if (exchange.method === 'GET' && path.startsWith('/.well-known/lnurlp/')) return this.lnurlp(exchange.url);
    if (exchange.method === 'POST' && path.startsWith('/uma/payreq/')) return this.payRequest(caller, exchange.url, exchange.body ?? '');
    if (exchange.method === 'POST' && path === '/uma/lightning/pay') return this.pay(caller, exchange.body ?? '');
    // The post-transaction callback: heard, nothing to record.
    if (exchange.method === 'POST' && path === '/uma/utxo-callback') return json(200, {});
    return refuse(404, 'NOT_FOUND', `The test VASP has nothing at ${path}.`);
  }

  private keys(): SelfSignedChains {
    this.chains ??= selfSignedChains('UMA test VASP', new Date());
    return this.chains;
  }

  /** The receiver `$user@host` names, with the currency it takes priced at the sandbox rates. */
  private async receiver(host: string, userPart: string | undefined) {
    if (userPart === undefined) return undefined;
    const address = parseUmaAddress(`${userPart.startsWith('$') ? userPart : `$${userPart}`}@${host}`);
    const entry = address ? TEST_RECEIVERS[address.user.toLowerCase()] : undefined;
    if (!address || !entry) return undefined;
    const multiplier = msatsPerMinorUnit(await this.deps.rates.snapshot('sandbox'), entry.currency)!;
    const info = currency(entry.currency);
    const offered = new Currency(entry.currency, info.name, info.symbol, multiplier, MIN_MINOR_UNITS, MAX_MINOR_UNITS, info.decimals);
    return { address: address.address, outcome: entry.outcome, offered, metadata: JSON.stringify([['text/plain', `Pay ${address.address}`], ['text/identifier', address.address]]) };
  }

  private async lnurlp(url: URL): Promise<VaspResponse> {
    let query;
    try {
      query = parseLnurlpRequest(url);
    } catch {
      return refuse(400, 'INVALID_REQUEST_FORMAT', 'The lnurlp request cannot be read.');
    }
    const receiver = await this.receiver(url.host, userPartOf(url));
    if (!receiver) return refuse(404, 'UMA_NOT_FOUND', 'The test VASP has no such receiver.');
    const { offered } = receiver;
    const sendable = lnurlpSendableSats([offered]);
    const response = await getLnurlpResponse({
      request: { ...query, receiverAddress: receiver.address },
      privateKeyBytes: this.keys().signing.key.privateKey,
      requiresTravelRuleInfo: true,
      callback: `https://${url.host}/uma/payreq/${encodeURIComponent(receiver.address.split('@')[0]!)}`,
      encodedMetadata: receiver.metadata,
      minSendableSats: sendable.min,
      maxSendableSats: sendable.max,
      payerDataOptions: { identifier: { mandatory: true }, compliance: { mandatory: true }, name: { mandatory: false }, email: { mandatory: false } },
      currencyOptions: [offered],
      receiverKycStatus: KycStatus.Verified,
    });
    return { ok: true, status: 200, body: response.toJsonString() };
  }

  private async payRequest(caller: VaspCaller, url: URL, body: string): Promise<VaspResponse> {
    const receiver = await this.receiver(url.host, userPartOf(url));
    if (!receiver) return refuse(404, 'UMA_NOT_FOUND', 'The test VASP has no such receiver.');
    let request: PayRequest;
    try {
      request = PayRequest.parse(JSON.parse(body));
    } catch {
      return refuse(400, 'INVALID_REQUEST_FORMAT', 'The pay request cannot be read.');
    }
    const { offered } = receiver;
    if (!request.isUma() || !request.payerData.identifier) return refuse(400, 'MISSING_REQUIRED_UMA_PARAMETERS', 'An UMA pay request names its payer and carries compliance data.');
    if (request.receivingCurrencyCode !== offered.code) return refuse(400, 'INVALID_CURRENCY', `${receiver.address} receives ${offered.code} only.`);
    // Converted exactly, as Corridor's own receiving side does (receiver fees 0).
    const conversion = convertPayRequest(request, offered.multiplier, 0n);
    if (!conversion || conversion.receivingAmount < BigInt(offered.minSendable) || conversion.receivingAmount > BigInt(offered.maxSendable)) {
      return refuse(400, 'AMOUNT_OUT_OF_RANGE', `${receiver.address} receives ${offered.minSendable}–${offered.maxSendable} ${offered.code} minor units.`);
    }
    const issuedAt = await this.deps.platformClock.now(caller.platformId);
    const signed = await getPayReqResponse({
      request,
      metadata: receiver.metadata,
      invoiceCreator: { createUmaInvoice: async () => this.invoice(receiver.address, conversion.invoiceMsats, issuedAt) },
      conversionRate: offered.multiplier,
      receivingCurrencyCode: offered.code,
      receivingCurrencyDecimals: offered.decimals,
      receiverChannelUtxos: [],
      receiverFeesMillisats: 0,
      utxoCallback: `https://${url.host}/uma/utxo-callback`,
      payeeData: { identifier: receiver.address, name: 'UMA sandbox test receiver' },
      receivingVaspPrivateKey: this.keys().signing.key.privateKey,
      payeeIdentifier: receiver.address,
    });
    return { ok: true, status: 200, body: withReceivingAmount(signed, conversion).toJsonString() };
  }

  /** A BOLT 11 invoice of the test node: the receiver in its description, the preimage derivable from its payment secret. */
  private invoice(receiverAddress: string, amountMsats: bigint, issuedAt: Date): string {
    const secret = randomBytes(32).toString('hex');
    const unsigned = bolt11().encode({
      network: NETWORKS.sandbox,
      millisatoshis: String(amountMsats),
      timestamp: Math.floor(issuedAt.getTime() / 1000),
      tags: [
        { tagName: 'payment_hash', data: createHash('sha256').update(this.preimage(secret)).digest('hex') },
        { tagName: 'payment_secret', data: secret },
        { tagName: 'description', data: receiverAddress },
        { tagName: 'expire_time', data: INVOICE_EXPIRY_SECONDS },
        { tagName: 'min_final_cltv_expiry', data: 144 },
      ],
    });
    return bolt11().sign(unsigned, this.nodeKey).paymentRequest!;
  }

  private preimage(secret: string): Buffer {
    return createHmac('sha256', this.nodeKey).update(secret).digest();
  }

  /**
   * The node paid an invoice of its own: `$success.*` releases the preimage at once,
   * `$pending.long.*` holds the payment in flight (202) until LONG_PENDING_SECONDS after the
   * invoice on the sending platform's clock, `$fail.compliance.*` refuses it
   * (COMPLIANCE_REJECTED). Presented again, the same answer for the same moment.
   */
  private async pay(caller: VaspCaller, body: string): Promise<VaspResponse> {
    let decoded;
    try {
      decoded = bolt11().decode(String((JSON.parse(body) as { invoice?: unknown }).invoice), NETWORKS.sandbox);
    } catch {
      return refuse(404, 'REFERENCE_NOT_FOUND', 'Not an invoice of the test VASP.');
    }
    const { payment_hash: paymentHash, payment_secret: secret, description } = decoded.tagsObject;
    const receiver = description ? await this.receiver(description.split('@')[1] ?? '', description.split('@')[0] ?? '') : undefined;
    if (decoded.payeeNodeKey !== this.nodePublicKey || !secret || !receiver || createHash('sha256').update(this.preimage(secret)).digest('hex') !== paymentHash) {
      return refuse(404, 'REFERENCE_NOT_FOUND', 'Not an invoice of the test VASP.');
    }
    if (receiver.outcome === 'FAILS_COMPLIANCE') return refuse(403, 'COMPLIANCE_REJECTED', `${receiver.address} refuses the payment on its compliance check.`);
    if (receiver.outcome === 'STAYS_PENDING') {
      const settlesAt = (decoded.timestamp ?? 0) * 1000 + LONG_PENDING_SECONDS * 1000;
      if ((await this.deps.platformClock.now(caller.platformId)).getTime() < settlesAt) return json(202, { status: 'IN_FLIGHT', settlesAt: new Date(settlesAt).toISOString() });
    }
    return json(200, { preimage: this.preimage(secret).toString('hex') });
  }
}
