import { getMajorVersion, getPayRequest, getPostTransactionCallback, KycStatus, PayReqResponse, verifyPayReqResponseSignature } from '@uma-sdk/core';
import type bolt11Module from 'bolt11';
import { createHash } from 'node:crypto';
import { currency } from '../../platform/currencies.js';
import { parseDateTime } from '../../platform/datetime.js';
import type { Tx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { MAX_WIRE_AMOUNT } from '../../platform/money.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import { parseId } from '../../platform/ids.js';
import { CUSTOMER_INFO_FIELDS, getConfigRow, senderUmaDomain } from '../config/index.js';
import { findCustomer } from '../customers/index.js';
import type { Payout, PayoutStatus, RailFailureReason, RailProvider, SubmitOutcome } from '../transactions/index.js';
import { counterpartyUrl, vaspOrigin } from './address.js';
import { counterpartyKeys } from './counterparty.js';
import { counterpartyCode } from './http-client.js';
import { bolt11, NETWORKS } from './invoices.js';
import { findUmaLookup, NO_SENDER_DOMAIN, type LookupDeps } from './lookup.js';
import { payerDataKeyToField } from './payer-data.js';
import { exactDecimal, feeInMinorUnits, invoiceCovers, msatsBought, rateToNumber, receivedFor, sendingCost, significant } from './amounts.js';
import { exactMsatsPerMinorUnit } from './rates.js';
import { findOutgoingPaymentByTransaction, insertOutgoingPayment, lockInvoiceHash, outgoingPaymentWithHash, setOutgoingPreimage, type OutgoingPaymentRow } from './repo.js';
import type { VaspSend } from './transport.js';
import { checkTimestamp, NonceCheck, verifySigned } from './verification.js';

/** The sender needs what the lookup needs: our keys, the counterparty's, rates and the clock. */
export type UmaSenderDeps = LookupDeps;

export interface UmaQuoteRequest {
  platformId: string;
  environment: 'sandbox' | 'production';
  lookupId: string;
  /** The quote source's customer (uuid): the lookup must have been made for it. */
  senderCustomerUuid: string | null;
  /** The quote's `senderCustomerInfo`: payer data the receiver asks for that the customer's record lacks. */
  senderCustomerInfo?: Record<string, unknown>;
  umaAddress: string;
  /** The receiving currency asked for; default the receiver's first. */
  currency?: string;
  sendingCurrency: string;
  lockedSide: 'SENDING' | 'RECEIVING';
  lockedAmount: bigint;
  /**
   * A SENDING lock's amount converted once the sender's fees for a payment into
   * `receivingCurrency` are taken out of it; undefined when the fees leave nothing. Absent: all of it.
   * Called once the receiving currency is chosen and before the pay request goes out, so it may
   * also refuse the payment (the quote's corridor maximum) without the receiver hearing of it.
   */
  sentOfLocked?: (receivingCurrency: string, lockedAmount: bigint) => bigint | undefined;
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
  /** How long the invoice stays payable from now (its expiry on the shared clock): the quote must not outlive it. */
  invoiceLifetimeSeconds: number;
  exchangeRate: string;
  rateDetails: Record<string, number>;
  postTransactionCallback: string | null;
}

/** The quote's rate (receiving major units per sending major unit) as a decimal string, 12 significant digits. */
function rateOf(sent: bigint, sendingCurrency: string, received: bigint, receivingCurrency: string): string {
  const ratio = { num: received * 10n ** BigInt(currency(sendingCurrency).decimals), den: sent * 10n ** BigInt(currency(receivingCurrency).decimals) };
  return significant(ratio, 12);
}

/** A customer as the pay request describes it. */
interface Payer {
  profile: Record<string, unknown>;
  email: string | null;
  phone_number: string | null;
}

/** The payer-data keys (UMAD-04, the SDK's CounterPartyDataKeys) a customer's own record holds. */
function fromRecord(customer: Payer, key: string): unknown {
  const profile = customer.profile as { fullName?: string; legalName?: string; birthDate?: string; nationality?: string; address?: { country?: string } };
  switch (key) {
    case 'name':
      return profile.fullName ?? profile.legalName;
    case 'email':
      return customer.email;
    case 'phoneNumber':
      return customer.phone_number;
    case 'birthDate':
      return profile.birthDate;
    case 'nationality':
      return profile.nationality;
    case 'countryOfResidence':
      return profile.address?.country;
    default:
      return undefined;
  }
}

/**
 * The payer data of the pay request (LUD-18): exactly the keys the receiver asked for in its
 * lnurlp answer (identifier and compliance are the SDK's), each from the customer's record or
 * else from `senderCustomerInfo` under upstream's field name (the lookup's
 * requiredPayerDataFields: FULL_NAME, NATIONALITY, …), as a string. Nothing it did not ask for
 * is disclosed. A mandatory field neither holds is refused here, before the receiver hears of
 * the payment (it would refuse it).
 */
function payerDataFor(customer: Payer, requested: Record<string, { mandatory: boolean }>, info: Record<string, unknown>): Record<string, string> {
  const data: Record<string, string> = {};
  const missing: string[] = [];
  for (const [key, option] of Object.entries(requested)) {
    if (key === 'identifier' || key === 'compliance') continue;
    const field = payerDataKeyToField(key, CUSTOMER_INFO_FIELDS) ?? key;
    const given = Object.hasOwn(info, field) ? info[field] : undefined;
    if (given !== undefined && (typeof given !== 'string' || given.length > 1000)) {
      throw invalidInput([{ field: `senderCustomerInfo.${field}`, message: 'must be a string of at most 1000 characters' }]);
    }
    const value = fromRecord(customer, key) ?? given;
    if (typeof value === 'string' && value !== '') data[key] = value;
    else if (option.mandatory) missing.push(field);
  }
  if (missing.length > 0) {
    throw new AppError('MISSING_MANDATORY_USER_INFO', `The receiver requires ${missing.join(', ')} of the sender, which the customer's record does not hold: give them in senderCustomerInfo.`, {
      details: { missingFields: missing },
    });
  }
  return data;
}

/** What the quote was asked to price, against which the receiving VASP's conversion is held. */
interface Asked {
  code: string;
  decimals: number;
  /** The invoice's amount. */
  amountMsats: bigint;
  /** RECEIVING: the amount the receiver must get; SENDING: the millisatoshis sent. */
  lock: { received: bigint } | { msats: bigint };
}

/**
 * The receiving VASP's `converted` block, held to what was asked (UMAD-05): the currency and its
 * decimals, a positive multiplier, a whole non-negative fee, a whole positive amount — the one
 * asked for on a RECEIVING lock — and an invoice for what that conversion costs,
 * `amount × multiplier + fee` msats computed exactly at the multiplier's decimal value
 * (`invoiceCovers`: within 1 msat on a RECEIVING lock, the receiver having rounded the invoice;
 * on a SENDING lock the invoice is exactly the msats sent and the receiver rounded the amount, so
 * within one minor unit's worth). Anything else is an invoice for another payment than the quote's.
 */
function checkConversion(
  converted: { amount?: number | undefined; currencyCode: string; decimals: number; multiplier: number; fee: number },
  asked: Asked,
  invalid: (why: string) => AppError,
): { received: bigint; feeInReceiving: bigint } {
  if (converted.currencyCode !== asked.code) throw invalid(`converts to ${converted.currencyCode}, not ${asked.code}`);
  if (converted.decimals !== asked.decimals) throw invalid(`counts ${asked.code} with ${converted.decimals} decimals, not ${asked.decimals}`);
  if (!Number.isFinite(converted.multiplier) || !(converted.multiplier > 0)) throw invalid('converts at no positive multiplier');
  if (!Number.isSafeInteger(converted.fee) || converted.fee < 0) throw invalid('charges a fee that is no whole, non-negative number of millisatoshis');
  if (converted.amount === undefined || !Number.isSafeInteger(converted.amount) || converted.amount <= 0) throw invalid('converts to no whole, positive amount');
  const received = BigInt(converted.amount);
  if ('received' in asked.lock && received !== asked.lock.received) throw invalid(`converts to ${received}, not the ${asked.lock.received} asked for`);
  if ('msats' in asked.lock && asked.amountMsats !== asked.lock.msats) throw invalid(`invoices ${asked.amountMsats} msats, not the ${asked.lock.msats} sent`);
  const multiplier = exactDecimal(converted.multiplier);
  const feeMsats = BigInt(converted.fee);
  if (!invoiceCovers(asked.amountMsats, received, multiplier, feeMsats, 'received' in asked.lock)) {
    throw invalid(`invoices ${asked.amountMsats} msats for ${received} ${asked.code} minor units, which cost ${significant({ num: received * multiplier.num + feeMsats * multiplier.den, den: multiplier.den }, 20)} msats at its multiplier and fee`);
  }
  // Shown as an integer (counterpartyFixedFee): a fee past 2^53 minor units is no fee a quote can show.
  const feeInReceiving = feeInMinorUnits(feeMsats, multiplier);
  if (feeInReceiving > MAX_WIRE_AMOUNT) throw invalid(`charges a fee of more than ${MAX_WIRE_AMOUNT} ${asked.code} minor units`);
  return { received, feeInReceiving };
}

/** A payment in flight at the receiver's node; `settlesAt` when its 202 answer names when it settles. */
interface InFlight {
  settlesAt?: Date;
}

/** The node's 202 answer: in flight, until its `settlesAt` (an RFC 3339 date-time) when it names one that reads as such. */
function inFlight(body: string): InFlight {
  let settlesAt: unknown;
  try {
    settlesAt = (JSON.parse(body) as { settlesAt?: unknown } | null)?.settlesAt;
  } catch {
    settlesAt = undefined;
  }
  const at = typeof settlesAt === 'string' ? parseDateTime(settlesAt) : undefined;
  return at ? { settlesAt: at } : {};
}

/**
 * The sending VASP (UMAD-05 → UMAD-07): the pay request to the receiver's VASP that a quote on a
 * `lookupId` prices, and the Lightning leg that pays its invoice when the quote's payment is
 * handed to its rail (`rails()`), followed by the post-transaction callback.
 */
export class UmaSender {
  constructor(private readonly deps: UmaSenderDeps) {}

  /**
   * Sends the signed pay request and checks the signed answer. Refused before anything is sent:
   * the lookup unknown or expired 404 LOOKUP_REQUEST_NOT_FOUND, made for another sender 400
   * INVALID_INPUT, for another address 400 INVALID_RECEIVER; an amount outside the receiver's
   * limits, or a SENDING lock buying more msats than a pay request carries (2^53 − 1), 400
   * AMOUNT_OUT_OF_RANGE; a payer-data field the receiver requires that neither the
   * customer's record nor `senderCustomerInfo` holds 400 MISSING_MANDATORY_USER_INFO. Then: the
   * receiving VASP unreachable or failing 400 QUOTE_REQUEST_FAILED (retryable), refusing 400
   * INVALID_RECEIVER (its code in `details.counterpartyCode`); an answer that does not parse 400
   * PARSE_PAYREQ_RESPONSE_ERROR, one that does not hold together or does not price what was
   * asked (currency, decimals, amount, an invoice for other than the converted amount and fee)
   * 400 INVALID_PAYREQ_RESPONSE; its signature, nonce, timestamp and certificates as for the lookup.
   */
  async quote(request: UmaQuoteRequest): Promise<UmaQuote> {
    const { deps } = this;
    const lookup = await findUmaLookup(deps.db, deps.clock, request.platformId, request.lookupId);
    if (lookup.customer_id !== request.senderCustomerUuid) throw invalidInput([{ field: 'lookupId', message: 'was made for another sender than the source’s customer' }]);
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
    const sendRate = exactMsatsPerMinorUnit(snapshot, request.sendingCurrency);
    if (sendRate === undefined) throw new AppError('INVALID_CURRENCY', `Corridor has no rate for ${request.sendingCurrency} over UMA.`);
    const inReceiving = request.lockedSide === 'RECEIVING';
    // SENDING: what of the locked amount the fees leave to convert (0: nothing).
    const sentOfLocked = inReceiving ? undefined : request.sentOfLocked ? (request.sentOfLocked(offered.code, request.lockedAmount) ?? 0n) : request.lockedAmount;
    if (sentOfLocked !== undefined && sentOfLocked <= 0n) {
      throw new AppError('INVALID_AMOUNT', `${request.lockedAmount} cannot make a transfer: after fees nothing would arrive.`, {
        details: { lockedCurrencySide: request.lockedSide, lockedCurrencyAmount: Number(request.lockedAmount) },
      });
    }
    // RECEIVING: receiving minor units; SENDING: the millisatoshis what is sent buys at Corridor's rate.
    const amount = sentOfLocked === undefined ? request.lockedAmount : msatsBought(sentOfLocked, sendRate);
    // Before the receiver names its fee, a SENDING lock's amount is estimated without one.
    const receivedEstimate = inReceiving ? amount : receivedFor(amount, exactDecimal(offered.multiplier), 0n);
    // The pay request carries the amount as a JSON number: one past 2^53 cannot be sent exactly.
    if (amount > MAX_WIRE_AMOUNT || receivedEstimate < BigInt(offered.min) || receivedEstimate > BigInt(offered.max)) {
      throw new AppError('AMOUNT_OUT_OF_RANGE', `${receiver.address} receives ${offered.min}–${offered.max} ${offered.code} minor units; this is ${receivedEstimate}.`, {
        details: { min: offered.min, max: offered.max, currency: offered.code },
      });
    }

    const customer = await findCustomer(deps.db, request.platformId, lookup.customer_id);
    if (!customer || customer.deleted_at) throw new AppError('USER_NOT_FOUND', 'The lookup’s sender no longer exists.');
    const payerData = payerDataFor(customer, lookup.response.payerData, request.senderCustomerInfo ?? {});
    const sending = await senderUmaDomain(deps.db, await getConfigRow(deps.db, request.platformId));
    if ('reason' in sending) throw new AppError('QUOTE_REQUEST_FAILED', NO_SENDER_DOMAIN[sending.reason], { details: { reason: sending.reason } });
    const profile = customer.profile as { fullName?: string; legalName?: string };
    const keys = await deps.keys();
    // Lookups are checked when made (lookup.ts); one stored before that rule is held to it here.
    const callbackUrl = counterpartyUrl(lookup.response.callback);
    if (!callbackUrl) {
      throw new AppError('INVALID_RECEIVER', `The receiving VASP ${lookup.counterparty_domain} gave no usable pay-request callback.`, { details: { vaspDomain: lookup.counterparty_domain } });
    }
    // The payer data is encrypted to the receiver's published encryption key: one that is not a secp256k1 point cannot be used.
    const payRequest = await getPayRequest({
      receiverEncryptionPubKey: Buffer.from(lookup.response.encryptionPubKey, 'hex'),
      sendingVaspPrivateKey: keys.signing.privateKey,
      receivingCurrencyCode: offered.code,
      amount: Number(amount),
      isAmountInReceivingCurrency: inReceiving,
      payerIdentifier: customer.uma_address,
      payerKycStatus: customer.review_status === 'APPROVED' ? KycStatus.Verified : KycStatus.Pending,
      umaMajorVersion: getMajorVersion(lookup.response.umaVersion),
      trInfo: JSON.stringify({ name: profile.fullName ?? profile.legalName ?? null, umaAddress: customer.uma_address }),
      payerData: payerData as never,
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
    if (response.payeeData?.identifier && String(response.payeeData.identifier).toLowerCase() !== receiver.address.toLowerCase()) throw invalid('names another payee');
    checkTimestamp(compliance.signatureTimestamp ?? Number.NaN, deps.clock, deps.config.uma.timestampWindowSeconds);
    const counterparty = await counterpartyKeys({ clock: deps.clock, config: deps.config.uma, send }, domain, {
      unreachable: 'QUOTE_REQUEST_FAILED',
      explain: true,
    });
    const nonces = new NonceCheck(deps.db, deps.clock, deps.config.uma.timestampWindowSeconds, domain);
    // The payee signs payer|payee as it names them: the payer as the pay request named it, itself as
    // its payee data says (checked above) or as it was looked up; a VASP that lower-cases addresses
    // (UMA's user part is case-insensitive) signs those. Any of these forms, with the same nonce.
    const payers = [...new Set([customer.uma_address, customer.uma_address.toLowerCase()])];
    const payees = [...new Set([...(response.payeeData?.identifier ? [String(response.payeeData.identifier)] : []), receiver.address, receiver.address.toLowerCase()])];
    await verifySigned(
      nonces,
      async (validator) => {
        for (const payer of payers) for (const payee of payees) if (await verifyPayReqResponseSignature(response, payer, payee, counterparty, validator)) return true;
        return false;
      },
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
    // BOLT 11: payable until its timestamp plus its expiry (3600 s when unsaid). One issued long
    // ago may have expired already: a quote on it could only fail at execution. Nor is one
    // stamped ahead of our clock payable for longer than it says.
    const expiresAt = decoded.timeExpireDate ?? 0;
    const payableSeconds = Math.min(expiresAt - Math.floor(deps.clock.now().getTime() / 1000), expiresAt - (decoded.timestamp ?? 0));
    if (payableSeconds <= 0) throw invalid('carries an invoice that has expired');
    const converted = checkConversion(response.converted, { code: offered.code, decimals: offered.decimals, amountMsats, lock: inReceiving ? { received: request.lockedAmount } : { msats: amount } }, invalid);
    let postTransactionCallback: string | null = null;
    if (compliance.utxoCallback) {
      const url = counterpartyUrl(compliance.utxoCallback);
      if (!url) throw invalid('names no usable post-transaction callback (an https URL, http only to a local domain)');
      postTransactionCallback = url.href;
    }
    const received = converted.received;
    // What the invoice costs the sender at Corridor's rate, rounded up (an invoice of at least 1 msat
    // costs at least one minor unit); a SENDING lock sends what its fees left of it.
    const sent = sentOfLocked ?? sendingCost(amountMsats, sendRate);
    return {
      customerUuid: lookup.customer_id,
      receiverUmaAddress: receiver.address,
      counterpartyDomain: domain,
      receivingCurrency: offered.code,
      receivedAmount: received,
      sentAmount: sent,
      amountMsats,
      invoice: response.pr,
      paymentHash,
      invoiceLifetimeSeconds: payableSeconds,
      exchangeRate: rateOf(sent, request.sendingCurrency, received, offered.code),
      rateDetails: {
        counterpartyMultiplier: response.converted.multiplier,
        // UMA's fee is in millisatoshis; the quote shows it in receiving minor units (upstream's
        // OutgoingRateDetails), rounded up: a fee is not shown smaller than it is.
        counterpartyFixedFee: Number(converted.feeInReceiving),
        gridApiMultiplier: rateToNumber(sendRate),
        gridApiFixedFee: 0,
        gridApiVariableFeeRate: 0,
        gridApiVariableFeeAmount: 0,
      },
      postTransactionCallback,
    };
  }

  /**
   * Keeps the quote's invoice for its execution, in the quote's transaction. One invoice is one
   * payment: an invoice another quote already holds (a receiving VASP handing the same one out
   * twice) is refused 400 INVALID_PAYREQ_RESPONSE, since paying it twice would debit two senders
   * for one payment — the second presentation only returns the first one's preimage.
   */
  async record(trx: Tx, platformId: string, quoteUuid: string, transactionUuid: string, quote: UmaQuote): Promise<void> {
    await lockInvoiceHash(trx, quote.paymentHash);
    if (await outgoingPaymentWithHash(trx, quote.paymentHash)) {
      throw new AppError('INVALID_PAYREQ_RESPONSE', `The pay-request answer of ${quote.counterpartyDomain} carries an invoice another quote already holds.`, {
        details: { vaspDomain: quote.counterpartyDomain },
      });
    }
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
   * other QUOTE_EXECUTION_FAILED). No answer, 5xx, a redirect, 408 or 429: thrown, so the
   * settlement job asks again (presenting a paid invoice again only returns its preimage).
   */
  private async present(payout: Payout, row: OutgoingPaymentRow, environment: 'sandbox' | 'production'): Promise<'PAID' | InFlight | RailFailureReason> {
    if (row.preimage) return 'PAID';
    const send = this.deps.vasps.for({ platformId: row.platform_id, environment });
    const answer = await send({ url: new URL(`${vaspOrigin(row.counterparty_domain)}/uma/lightning/pay`), method: 'POST', body: JSON.stringify({ invoice: row.invoice }) });
    // Only the node's own refusal (a 4xx) fails the payment. A redirect, 408 or 429 comes from
    // whatever stands before the node and says nothing of the invoice, which an earlier presentation
    // whose answer was lost may have paid: asked again, as when no answer comes, never refunded.
    if (!answer.ok || answer.status >= 500 || (answer.status >= 300 && answer.status < 400) || answer.status === 408 || answer.status === 429) {
      throw new Error(`the receiving node ${row.counterparty_domain} did not settle ${payout.transactionId}: ${answer.ok ? answer.status : answer.reason}`);
    }
    if (answer.status === 202) return inFlight(answer.body);
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
    const sending = await senderUmaDomain(this.deps.db, await getConfigRow(this.deps.db, row.platform_id));
    if ('reason' in sending) return;
    const callback = await getPostTransactionCallback({ utxos: [], vaspDomain: sending.domain, signingPrivateKey: (await this.deps.keys()).signing.privateKey });
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
        if (typeof outcome === 'object') return outcome.settlesAt ? { status: 'ACCEPTED', settlesAt: outcome.settlesAt } : { status: 'ACCEPTED' };
        return outcome === 'PAID' ? { status: 'ACCEPTED' } : { status: 'REJECTED', failureReason: outcome };
      },
      // A payment still in flight is presented again: the node answers how it stands now.
      status: async (payout: Payout): Promise<PayoutStatus> => {
        const row = await find(payout);
        if (!row) return others.status(payout);
        const outcome = await this.present(payout, row, environment);
        if (outcome === 'PAID') return { status: 'COMPLETED' };
        if (typeof outcome === 'object') return outcome.settlesAt ? { status: 'PENDING', settlesAt: outcome.settlesAt } : { status: 'PENDING' };
        return { status: 'FAILED', failureReason: outcome };
      },
      // Money paid in for REALTIME_FUNDING arrives on the other rails, whatever the destination.
      deposit: (expected) => others.deposit(expected),
      returnDeposit: (expected, amount) => others.returnDeposit(expected, amount),
      // Pulls (transfer-in) come from external accounts, never over UMA.
      ...(others.collect ? { collect: others.collect.bind(others) } : {}),
    };
  }
}
