import { getPayRequest, getPostTransactionCallback, KycStatus, PayReqResponse, verifyPayReqResponseSignature } from '@uma-sdk/core';
import type bolt11Module from 'bolt11';
import { createHash } from 'node:crypto';
import { currency } from '../../platform/currencies.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import { parseId } from '../../platform/ids.js';
import { getConfigRow } from '../config/index.js';
import { findCustomer } from '../customers/index.js';
import type { Payout, PayoutStatus, RailFailureReason, RailProvider, SubmitOutcome } from '../transactions/index.js';
import { vaspOrigin } from './address.js';
import { counterpartyKeys } from './counterparty.js';
import { bolt11, NETWORKS } from './invoices.js';
import { findUmaLookup, type LookupDeps } from './lookup.js';
import { msatsPerMinorUnit } from './rates.js';
import { findOutgoingPaymentByTransaction, insertOutgoingPayment, setOutgoingPreimage, type OutgoingPaymentRow } from './repo.js';
import type { VaspSend } from './transport.js';
import { checkTimestamp, NonceCheck, verifySigned } from './verification.js';

/** The sender needs what the lookup needs: our keys, the counterparty's, rates and the clock. */
export type UmaSenderDeps = LookupDeps;

export interface UmaQuoteRequest {
  platformId: string;
  environment: 'sandbox' | 'production';
  lookupId: string;
  umaAddress: string;
  /** The receiving currency asked for; default the receiver's first. */
  currency?: string;
  sendingCurrency: string;
  lockedSide: 'SENDING' | 'RECEIVING';
  lockedAmount: bigint;
}

/** The receiving VASP's answer to our pay request, as a quote prices it. */
export interface UmaQuote {
  /** The lookup's sending customer (uuid): the quote's source must be this customer's. */
  customerUuid: string;
  receiverUmaAddress: string;
  counterpartyDomain: string;
  receivingCurrency: string;
  receivedAmount: bigint;
  sentAmount: bigint;
  amountMsats: bigint;
  invoice: string;
  paymentHash: string;
  exchangeRate: string;
  rateDetails: Record<string, number>;
  postTransactionCallback: string | null;
}

function counterpartyCode(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { code?: unknown };
    return typeof parsed.code === 'string' && /^[A-Z_]{1,64}$/.test(parsed.code) ? parsed.code : undefined;
  } catch {
    return undefined;
  }
}

/** A decimal rate string (receiving major units per sending major unit), 12 significant digits. */
function rateOf(sent: bigint, sendingCurrency: string, received: bigint, receivingCurrency: string): string {
  const value = Number(received) / 10 ** currency(receivingCurrency).decimals / (Number(sent) / 10 ** currency(sendingCurrency).decimals);
  return String(Number(value.toPrecision(12)));
}

/**
 * The sending VASP (UMAD-05 → UMAD-07): the pay request to the receiver's VASP that a quote on a
 * `lookupId` prices, and the Lightning leg that pays its invoice when the quote's payment is
 * handed to its rail (`rails()`), followed by the post-transaction callback.
 */
export class UmaSender {
  constructor(private readonly deps: UmaSenderDeps) {}

  /**
   * Sends the signed pay request and checks the signed answer. Errors: the lookup unknown or
   * expired 404 LOOKUP_REQUEST_NOT_FOUND; for another address 400 INVALID_RECEIVER; an amount
   * outside the receiver's limits 400 AMOUNT_OUT_OF_RANGE; the receiving VASP unreachable or
   * failing 400 QUOTE_REQUEST_FAILED (retryable), refusing 400 INVALID_RECEIVER (its code in
   * `details.counterpartyCode`); an answer that does not parse 400 PARSE_PAYREQ_RESPONSE_ERROR,
   * one that does not hold together 400 INVALID_PAYREQ_RESPONSE; its signature, nonce,
   * timestamp and certificates as for the lookup.
   */
  async quote(request: UmaQuoteRequest): Promise<UmaQuote> {
    const { deps } = this;
    const lookup = await findUmaLookup(deps.db, deps.clock, request.platformId, request.lookupId);
    const receiver = requireUmaAddress('destination.umaAddress', request.umaAddress);
    if (receiver.address.toLowerCase() !== lookup.receiver_uma_address.toLowerCase()) {
      throw new AppError('INVALID_RECEIVER', `Lookup ${request.lookupId} was for ${lookup.receiver_uma_address}, not ${receiver.address}.`, {
        details: { lookupReceiver: lookup.receiver_uma_address },
      });
    }
    const offered = request.currency ? lookup.response.currencies.find((c) => c.code === request.currency) : lookup.response.currencies[0];
    if (!offered) {
      throw new AppError('INVALID_CURRENCY', `${receiver.address} does not receive ${request.currency ?? 'any currency Corridor can quote'}.`, {
        details: { currencies: lookup.response.currencies.map((c) => c.code) },
      });
    }
    const snapshot = await deps.rates.snapshot(request.environment);
    const sendMsats = msatsPerMinorUnit(snapshot, request.sendingCurrency);
    if (sendMsats === undefined) throw new AppError('INVALID_CURRENCY', `Corridor has no rate for ${request.sendingCurrency} over UMA.`);
    const inReceiving = request.lockedSide === 'RECEIVING';
    const amount = inReceiving ? Number(request.lockedAmount) : Math.floor(Number(request.lockedAmount) * sendMsats);
    const receivedEstimate = inReceiving ? amount : Math.floor(amount / offered.multiplier);
    if (receivedEstimate < offered.min || receivedEstimate > offered.max) {
      throw new AppError('AMOUNT_OUT_OF_RANGE', `${receiver.address} receives ${offered.min}–${offered.max} ${offered.code} minor units; this is ${receivedEstimate}.`, {
        details: { min: offered.min, max: offered.max, currency: offered.code },
      });
    }

    const customer = await findCustomer(deps.db, request.platformId, lookup.customer_id);
    if (!customer || customer.deleted_at) throw new AppError('USER_NOT_FOUND', 'The lookup’s sender no longer exists.');
    const config = await getConfigRow(deps.db, request.platformId);
    if (!config.uma_domain) throw new AppError('QUOTE_REQUEST_FAILED', "Set the platform's umaDomain (PATCH /config) first.", { details: { reason: 'UMA_DOMAIN_NOT_SET' } });
    const profile = customer.profile as { fullName?: string; legalName?: string };
    const name = profile.fullName ?? profile.legalName;
    const keys = await deps.keys();
    let callbackUrl: URL;
    try {
      callbackUrl = new URL(lookup.response.callback);
    } catch {
      throw new AppError('INVALID_RECEIVER', `The receiving VASP ${lookup.counterparty_domain} gave no usable pay-request callback.`, { details: { vaspDomain: lookup.counterparty_domain } });
    }
    // The payer data is encrypted to the receiver's published encryption key: one that is not a secp256k1 point cannot be used.
    const payRequest = await getPayRequest({
      receiverEncryptionPubKey: Buffer.from(lookup.response.encryptionPubKey, 'hex'),
      sendingVaspPrivateKey: keys.signing.privateKey,
      receivingCurrencyCode: offered.code,
      amount,
      isAmountInReceivingCurrency: inReceiving,
      payerIdentifier: customer.uma_address,
      payerKycStatus: customer.review_status === 'APPROVED' ? KycStatus.Verified : KycStatus.Pending,
      umaMajorVersion: Number(lookup.response.umaVersion.split('.')[0]) || 1,
      trInfo: JSON.stringify({ name: name ?? null, umaAddress: customer.uma_address }),
      payerData: { ...(name ? { name } : {}), ...(customer.email ? { email: customer.email } : {}) } as never,
      requestedPayeeData: { identifier: { mandatory: true }, name: { mandatory: false } } as never,
    }).catch(() => {
      throw new AppError('INVALID_PUBKEY_FORMAT', `The encryption key ${lookup.counterparty_domain} publishes is not usable.`, { details: { vaspDomain: lookup.counterparty_domain } });
    });
    const send = deps.vasps.for({ platformId: request.platformId, environment: request.environment });
    const answer = await send({ url: callbackUrl, method: 'POST', body: payRequest.toJsonString() });
    const domain = lookup.counterparty_domain;
    if (!answer.ok) throw new AppError('QUOTE_REQUEST_FAILED', `The receiving VASP ${domain} did not answer the pay request: ${answer.reason}.`, { details: { vaspDomain: domain, reason: answer.reason } });
    if (answer.status !== 200) {
      const code = counterpartyCode(answer.body);
      const details = { vaspDomain: domain, counterpartyStatus: answer.status, ...(code ? { counterpartyCode: code } : {}) };
      if (answer.status >= 500) throw new AppError('QUOTE_REQUEST_FAILED', `The receiving VASP ${domain} failed on the pay request (${answer.status}${code ? ` ${code}` : ''}).`, { details });
      throw new AppError('INVALID_RECEIVER', `The receiving VASP ${domain} refused the payment (${answer.status}${code ? ` ${code}` : ''}).`, { details });
    }
    let response: PayReqResponse;
    try {
      response = PayReqResponse.fromJson(answer.body);
    } catch {
      throw new AppError('PARSE_PAYREQ_RESPONSE_ERROR', `The answer of ${domain} is not a pay-request response.`, { details: { vaspDomain: domain } });
    }
    const invalid = (why: string) => new AppError('INVALID_PAYREQ_RESPONSE', `The pay-request answer of ${domain} ${why}.`, { details: { vaspDomain: domain } });
    const compliance = response.payeeData?.compliance as { signatureTimestamp?: number; utxoCallback?: string } | undefined;
    if (!response.isUma() || !response.converted || !compliance) throw invalid('lacks UMA’s converted amount or payee compliance data');
    if (response.converted.currencyCode !== offered.code) throw invalid(`converts to ${response.converted.currencyCode}, not ${offered.code}`);
    if (response.payeeData?.identifier && String(response.payeeData.identifier).toLowerCase() !== receiver.address.toLowerCase()) throw invalid('names another payee');
    checkTimestamp(compliance.signatureTimestamp ?? Number.NaN, deps.clock, deps.config.uma.timestampWindowSeconds);
    const counterparty = await counterpartyKeys({ clock: deps.clock, config: deps.config.uma, send }, domain, {
      unreachable: 'QUOTE_REQUEST_FAILED',
      explain: true,
    });
    const nonces = new NonceCheck(deps.db, deps.clock, deps.config.uma.timestampWindowSeconds, domain);
    await verifySigned(
      nonces,
      (validator) => verifyPayReqResponseSignature(response, customer.uma_address.toLowerCase(), receiver.address.toLowerCase(), counterparty, validator),
      'pay-request response',
    );

    let decoded: ReturnType<typeof bolt11Module.decode>;
    try {
      decoded = bolt11().decode(response.pr, NETWORKS[request.environment]);
    } catch {
      throw invalid('carries no BOLT 11 invoice of this network');
    }
    const paymentHash = decoded.tagsObject.payment_hash;
    const amountMsats = BigInt(decoded.millisatoshis ?? '0');
    if (!paymentHash || amountMsats <= 0n) throw invalid('carries an invoice without an amount or payment hash');
    const convertedAmount = response.converted.amount;
    if (convertedAmount === undefined || !Number.isSafeInteger(convertedAmount)) throw invalid('converts to no whole amount');
    const received = BigInt(convertedAmount);
    if (received <= 0n || (inReceiving && received !== request.lockedAmount)) throw invalid(`converts to ${received}, not the ${request.lockedAmount} asked for`);
    // What the invoice costs the sender at Corridor's rate, rounded up; a SENDING lock pays what it locked.
    const sent = inReceiving ? (amountMsats * 1000n + BigInt(Math.round(sendMsats * 1000)) - 1n) / BigInt(Math.round(sendMsats * 1000)) : request.lockedAmount;
    return {
      customerUuid: lookup.customer_id,
      receiverUmaAddress: receiver.address,
      counterpartyDomain: domain,
      receivingCurrency: offered.code,
      receivedAmount: received,
      sentAmount: sent > 0n ? sent : 1n,
      amountMsats,
      invoice: response.pr,
      paymentHash,
      exchangeRate: rateOf(sent > 0n ? sent : 1n, request.sendingCurrency, received, offered.code),
      rateDetails: {
        counterpartyMultiplier: response.converted.multiplier,
        counterpartyFixedFee: response.converted.fee,
        gridApiMultiplier: sendMsats,
        gridApiFixedFee: 0,
        gridApiVariableFeeRate: 0,
        gridApiVariableFeeAmount: 0,
      },
      postTransactionCallback: compliance.utxoCallback ?? null,
    };
  }

  /** Keeps the quote's invoice for its execution, in the quote's transaction. */
  async record(trx: DbOrTx, platformId: string, quoteUuid: string, transactionUuid: string, quote: UmaQuote): Promise<void> {
    await insertOutgoingPayment(trx, {
      platform_id: platformId,
      quote_id: quoteUuid,
      transaction_id: transactionUuid,
      receiver_uma_address: quote.receiverUmaAddress,
      counterparty_domain: quote.counterpartyDomain,
      invoice: quote.invoice,
      payment_hash: quote.paymentHash,
      amount_msats: quote.amountMsats,
      receiving_currency: quote.receivingCurrency,
      received_amount: quote.receivedAmount,
      post_transaction_callback: quote.postTransactionCallback,
      preimage: null,
      created_at: this.deps.clock.now(),
    });
  }

  /**
   * The Lightning leg, simulated: the invoice is presented to the receiving VASP's node
   * (`POST {receiver origin}/uma/lightning/pay`). It answers 200 with the preimage once paid —
   * proven when SHA-256(preimage) is the invoice's payment hash — after which the signed
   * post-transaction callback (UMAD-07) is sent, its failure changing nothing paid; 202 while
   * the payment is in flight (asked again at settlement); 4xx when it refuses (expired, no
   * longer pending, or its compliance check: `code` COMPLIANCE_REJECTED is that reason, any
   * other QUOTE_EXECUTION_FAILED). No answer or 5xx: thrown, so the settlement job asks again
   * (presenting a paid invoice again only returns its preimage).
   */
  private async present(payout: Payout, row: OutgoingPaymentRow, environment: 'sandbox' | 'production'): Promise<'PAID' | 'IN_FLIGHT' | RailFailureReason> {
    if (row.preimage) return 'PAID';
    const send = this.deps.vasps.for({ platformId: row.platform_id, environment });
    const answer = await send({ url: new URL(`${vaspOrigin(row.counterparty_domain)}/uma/lightning/pay`), method: 'POST', body: JSON.stringify({ invoice: row.invoice }) });
    if (!answer.ok || answer.status >= 500) throw new Error(`the receiving node ${row.counterparty_domain} did not settle ${payout.transactionId}: ${answer.ok ? answer.status : answer.reason}`);
    if (answer.status === 202) return 'IN_FLIGHT';
    if (answer.status !== 200) return counterpartyCode(answer.body) === 'COMPLIANCE_REJECTED' ? 'COMPLIANCE_REJECTED' : 'QUOTE_EXECUTION_FAILED';
    let preimage: string | undefined;
    try {
      preimage = (JSON.parse(answer.body) as { preimage?: unknown }).preimage as string | undefined;
    } catch {
      preimage = undefined;
    }
    if (typeof preimage !== 'string' || !/^[0-9a-f]{64}$/.test(preimage) || createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex') !== row.payment_hash) {
      throw new Error(`the receiving node ${row.counterparty_domain} answered no valid preimage for ${payout.transactionId}`);
    }
    await setOutgoingPreimage(this.deps.db, row.platform_id, row.quote_id, preimage);
    if (row.post_transaction_callback) await this.notifyReceiver(row, send);
    return 'PAID';
  }

  private async notifyReceiver(row: OutgoingPaymentRow, send: VaspSend): Promise<void> {
    const config = await getConfigRow(this.deps.db, row.platform_id);
    if (!config.uma_domain) return;
    const callback = await getPostTransactionCallback({ utxos: [], vaspDomain: config.uma_domain.toLowerCase(), signingPrivateKey: (await this.deps.keys()).signing.privateKey });
    await send({ url: new URL(row.post_transaction_callback!), method: 'POST', body: JSON.stringify(callback) });
  }

  /** A rail provider that pays UMA payouts over the Lightning leg and hands every other payout to `others`. */
  rails(others: RailProvider, environment: 'sandbox' | 'production'): RailProvider {
    const find = async (payout: Payout) => {
      const uuid = parseId('Transaction', payout.transactionId);
      return payout.rail === 'UMA' && uuid ? findOutgoingPaymentByTransaction(this.deps.db, payout.platformId, uuid) : undefined;
    };
    return {
      submit: async (payout: Payout): Promise<SubmitOutcome> => {
        const row = await find(payout);
        if (!row) return others.submit(payout);
        const outcome = await this.present(payout, row, environment);
        return outcome === 'PAID' || outcome === 'IN_FLIGHT' ? { status: 'ACCEPTED' } : { status: 'REJECTED', failureReason: outcome };
      },
      // A payment still in flight is presented again: the node answers how it stands now.
      status: async (payout: Payout): Promise<PayoutStatus> => {
        const row = await find(payout);
        if (!row) return others.status(payout);
        const outcome = await this.present(payout, row, environment);
        if (outcome === 'PAID') return { status: 'COMPLETED' };
        return outcome === 'IN_FLIGHT' ? { status: 'PENDING' } : { status: 'FAILED', failureReason: outcome };
      },
      // Money paid in for REALTIME_FUNDING arrives on the other rails, whatever the destination.
      deposit: (expected) => others.deposit(expected),
      returnDeposit: (expected, amount) => others.returnDeposit(expected, amount),
      // Pulls (transfer-in) come from external accounts, never over UMA.
      ...(others.collect ? { collect: others.collect.bind(others) } : {}),
    };
  }
}
