import {
  Currency,
  getLnurlpResponse,
  getPayReqResponse,
  isLnurlpRequestForUma,
  KycStatus,
  parseLnurlpRequest,
  PayRequest,
  UnsupportedVersionError,
  verifyPayReqSignature,
  verifyUmaLnurlpQuerySignature,
  type CounterPartyDataOptions,
  type LnurlpRequest,
} from '@uma-sdk/core';
import type { Config } from '../../config.js';
import type { Clock, PlatformClock } from '../../platform/clock.js';
import { currency } from '../../platform/currencies.js';
import type { Db } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import { withTx } from '../../platform/db/tx.js';
import { enqueueJob, RetryJobAt, type Job } from '../../platform/jobs/index.js';
import { parseUmaAddress, type UmaAddress } from '../../platform/uma-address.js';
import { INVOICE_EXPIRY_JOB } from './lightning.js';
import { CUSTOMER_INFO_FIELDS, getConfigRow, platformsWithUmaDomain, type PlatformCurrencyConfig } from '../config/index.js';
import { findCustomerByUmaAddress } from '../customers/index.js';
import { platformEnvironment, type Environment } from '../platforms/index.js';
import type { ExchangeRates, RateSnapshot } from '../rates/index.js';
import type { IncomingPayments } from '../transactions/index.js';
import type { Resolver } from '../../platform/address-guard.js';
import { APPROVAL_WINDOW_MS, type ApprovalDecision } from '../webhooks/index.js';
import { isLocalDomain, vaspOrigin } from './address.js';
import { counterpartyKeys } from './counterparty.js';
import { INVOICE_EXPIRY_SECONDS, type IssuedInvoice, type LightningNode } from './invoices.js';
import type { VaspKeySource } from './keys.js';
import { MAX_INVOICE_MSATS } from './amounts.js';
import { convertPayRequest, lnurlpSendableSats, withReceivingAmount, type PayConversion } from './pay-conversion.js';
import { fieldToPayerDataKey, payerDataKeyToField } from './payer-data.js';
import { msatsPerMinorUnit } from './rates.js';
import { findIncomingPayment, insertIncomingPayment, lockPayRequest } from './repo.js';
import { httpSend } from './transport.js';
import { checkTimestamp, fromSdkError, markSignedInLnurlp, NonceCheck, verifySigned } from './verification.js';

export interface ReceivingDeps {
  db: Db;
  clock: Clock;
  platformClock: PlatformClock;
  config: Config;
  keys: VaspKeySource;
  node: LightningNode;
  resolver: Resolver;
  incomingPayments: IncomingPayments;
  rates: ExchangeRates;
}

interface Receiver {
  platformId: string;
  environment: Environment;
  customerId: string;
  address: UmaAddress;
  /** The customer's KYC/KYB review (UNVERIFIED, PENDING, APPROVED, REJECTED, HOLD). */
  reviewStatus: string;
  currencies: Currency[];
  payerData: CounterPartyDataOptions;
}

/**
 * The customer `$user@host` names: of a platform whose umaDomain is `host`. The message from
 * `sender` (its VASP's domain, the time it signed it) is refused before the receiver's currencies
 * are priced, which asks the rate provider: a VASP the receiver does not take payments from, then
 * a message outside the timestamp window, is 400 whatever the deployment can price (a production
 * one without a rate provider answers anything else 503, which the sending VASP would retry).
 */
async function resolveReceiver(deps: ReceivingDeps, host: string, userPart: string, sender: { domain: string; signedAtSeconds: number }): Promise<Receiver> {
  const address = parseUmaAddress(`${userPart.startsWith('$') ? userPart : `$${userPart}`}@${host}`);
  if (!address) throw new AppError('UMA_NOT_FOUND', `No receiver ${userPart} at ${host}.`);
  for (const platformId of await platformsWithUmaDomain(deps.db, address.domain)) {
    const customer = await findCustomerByUmaAddress(deps.db, platformId, address.address);
    if (!customer) continue;
    const config = await getConfigRow(deps.db, platformId);
    const environment = await platformEnvironment(deps.db, platformId);
    // Refused senders and stale messages are refused before anything is priced.
    acceptSender(environment, sender.domain);
    checkTimestamp(sender.signedAtSeconds, deps.clock, deps.config.uma.timestampWindowSeconds);
    const offered = incomingCurrencies(await deps.rates.snapshot(environment), config.supported_currencies, customer.currencies);
    return {
      platformId,
      environment,
      customerId: customer.id,
      address,
      reviewStatus: customer.review_status,
      currencies: offered.map(({ config: c, multiplier }) => {
        const info = currency(c.currencyCode);
        return new Currency(c.currencyCode, info.name, info.symbol, multiplier, c.minAmount, c.maxAmount, info.decimals);
      }),
      payerData: payerDataOptions(offered.map((o) => o.config)),
    };
  }
  throw new AppError('UMA_NOT_FOUND', `No receiver ${address.address}.`);
}

/** Whether `$user@host` is someone's, without pricing anything: UMA_NOT_FOUND otherwise. */
async function resolveReceiverPlatform(deps: ReceivingDeps, host: string, userPart: string): Promise<void> {
  const address = parseUmaAddress(`${userPart.startsWith('$') ? userPart : `$${userPart}`}@${host}`);
  if (address) {
    for (const platformId of await platformsWithUmaDomain(deps.db, address.domain)) {
      if (await findCustomerByUmaAddress(deps.db, platformId, address.address)) return;
    }
  }
  throw new AppError('UMA_NOT_FOUND', `No receiver ${userPart} at ${host}.`);
}

/** What the receiver takes: the platform's currencies enabled for INCOMING, narrowed to the customer's own, that the Lightning leg converts. */
function incomingCurrencies(snapshot: RateSnapshot, configs: PlatformCurrencyConfig[], customerCurrencies: string[] | null) {
  return configs
    .filter((c) => c.enabledTransactionTypes.includes('INCOMING') && (!customerCurrencies?.length || customerCurrencies.includes(c.currencyCode)))
    .flatMap((c) => {
      const multiplier = msatsPerMinorUnit(snapshot, c.currencyCode);
      return multiplier === undefined ? [] : [{ config: c, multiplier }];
    });
}

/** The platform's required counterparty fields, as UMA payer data; the identifier and compliance data always. */
function payerDataOptions(configs: PlatformCurrencyConfig[]): CounterPartyDataOptions {
  const options: CounterPartyDataOptions = { identifier: { mandatory: true }, compliance: { mandatory: true } };
  for (const config of configs) {
    for (const field of config.requiredCounterpartyFields) {
      const key = fieldToPayerDataKey(field.name);
      options[key] = { mandatory: Boolean(options[key]?.mandatory) || field.mandatory };
    }
  }
  return options;
}

/** Production receivers take payments only from VASPs on the public internet, whose keys are served over https. */
function acceptSender(environment: Environment, vaspDomain: string): void {
  if (environment === 'production' && isLocalDomain(vaspDomain)) {
    throw new AppError('SENDER_NOT_ACCEPTED', `A production receiver does not accept payments from ${vaspDomain}, a local VASP.`, { details: { vaspDomain } });
  }
}

function metadataOf(receiver: Receiver): string {
  return JSON.stringify([
    ['text/plain', `Pay ${receiver.address.address}`],
    ['text/identifier', receiver.address.address],
  ]);
}

function callbackOf(receiver: Receiver): string {
  return `${vaspOrigin(receiver.address.domain)}/uma/payreq/${encodeURIComponent(receiver.address.user)}`;
}

/**
 * The receiving VASP's answer to a signed lnurlp request (UMAD-02 → UMAD-04): the sender's
 * signature, nonce and timestamp are checked against the keys it publishes, then the receiver's
 * currencies, limits and required payer data are signed back.
 */
export async function answerLnurlp(deps: ReceivingDeps, url: URL): Promise<Record<string, unknown>> {
  let query: LnurlpRequest;
  try {
    query = parseLnurlpRequest(url);
  } catch (error) {
    if (error instanceof UnsupportedVersionError) {
      throw new AppError('INVALID_REQUEST_FORMAT', error.message, { details: { supportedMajorVersions: error.supportedMajorVersions } });
    }
    throw fromSdkError(error, 'INVALID_REQUEST_FORMAT');
  }
  // Corridor speaks UMA only: a plain LNURL request carries no travel-rule identity to check.
  if (!isLnurlpRequestForUma(query)) {
    throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', 'An UMA lnurlp request carries signature, vaspDomain, nonce, timestamp and umaVersion.');
  }
  const userPart = decodeURIComponent(url.pathname.split('/')[3] ?? '');
  if (!parseUmaAddress(`$x@${query.vaspDomain}`)) throw new AppError('INVALID_REQUEST_FORMAT', 'vaspDomain is not a domain.');
  // A stale request is refused before the receiver is priced and the sender's keys are fetched for it.
  const receiver = await resolveReceiver(deps, url.host, userPart, { domain: query.vaspDomain, signedAtSeconds: query.timestamp.getTime() / 1000 });

  const nonces = new NonceCheck(deps.db, deps.clock, deps.config.uma.timestampWindowSeconds, query.vaspDomain);
  const senderKeys = await counterpartyKeys(
    { clock: deps.clock, config: deps.config.uma, send: httpSend(deps.config.uma, deps.resolver, receiver.environment) },
    query.vaspDomain,
    { unreachable: 'INVALID_SIGNATURE', explain: false },
  );
  await verifySigned(nonces, (validator) => verifyUmaLnurlpQuerySignature(query, senderKeys, validator), 'lnurlp request');

  // LUD-06 limits: the widest the receiver's currencies allow.
  const sendable = lnurlpSendableSats(receiver.currencies);
  const response = await getLnurlpResponse({
    request: { ...query, receiverAddress: receiver.address.address },
    privateKeyBytes: (await deps.keys()).signing.privateKey,
    requiresTravelRuleInfo: true,
    callback: callbackOf(receiver),
    encodedMetadata: metadataOf(receiver),
    minSendableSats: sendable.min,
    maxSendableSats: sendable.max,
    payerDataOptions: receiver.payerData,
    currencyOptions: receiver.currencies,
    receiverKycStatus: kycStatusOf(receiver.reviewStatus),
  });
  const { signatureNonce, signatureTimestamp } = response.compliance!;
  await markSignedInLnurlp(deps.db, receiver.address.domain, signatureNonce, signatureTimestamp, deps.config.uma.timestampWindowSeconds);
  return response.toJsonSchemaObject() as Record<string, unknown>;
}

/** UMA's view of a review: it has nothing finer than verified, pending and not verified (REJECTED, HOLD, UNVERIFIED). */
function kycStatusOf(reviewStatus: string): KycStatus {
  return reviewStatus === 'APPROVED' ? KycStatus.Verified : reviewStatus === 'PENDING' ? KycStatus.Pending : KycStatus.NotVerified;
}

/** Beyond the approval round trip's longest wait, the time a pay request has to sign and record its invoice. */
const INVOICE_RECORDING_MARGIN_MS = 60_000;

/** Fails a pay request's INCOMING transaction whose invoice was never recorded (payload `UnansweredPayRequest`). */
export const UNANSWERED_PAY_REQUEST_JOB = 'uma.pay-request-unanswered';

interface UnansweredPayRequest {
  /** The id its invoice would be recorded under (`uma_incoming_payments`). */
  paymentId: string;
  /** The INCOMING transaction's uuid. */
  transactionId: string;
  /** ISO time after which the invoice is no longer recorded, and the job gives the pay request up. */
  answerBy: string;
}

/**
 * The pay request (UMAD-05 → UMAD-06): the sender's signed compliance data is checked, the
 * amount converted at the receiver's rate, and a BOLT 11 invoice of the simulated Lightning node
 * returned with the signed payee data. The payment is recorded as pending for the receiver;
 * crediting the receiver when it settles belongs to the incoming-payments flow. Refused before
 * anything is opened: a settlement other than Lightning in BTC, a receiver compliance rejected.
 * Once its INCOMING transaction is open, the pay request ends with the invoice recorded or the
 * transaction ended (refused by the platform, or PAY_REQUEST_FAILED: at once, else by the
 * UNANSWERED_PAY_REQUEST_JOB at `answerBy`).
 */
export async function answerPayRequest(deps: ReceivingDeps, host: string, userPart: string, body: unknown): Promise<Record<string, unknown>> {
  // The receiver must exist before the request is read (an unknown one is UMA_NOT_FOUND whatever the body).
  await resolveReceiverPlatform(deps, host, userPart);
  let request: PayRequest;
  try {
    request = PayRequest.parse(body ?? {});
  } catch (error) {
    throw fromSdkError(error, 'INVALID_REQUEST_FORMAT', `The pay request cannot be read: ${error instanceof Error ? error.message.slice(0, 500) : 'invalid'}.`);
  }
  if (!request.isUma()) throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', 'An UMA pay request carries payerData.compliance and convert.');
  refuseUnofferedSettlement(request);
  const payer = parseUmaAddress(request.payerData.identifier ?? '');
  if (!payer) throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', 'payerData.identifier must be the sender\'s UMA address.');
  const receiver = await resolveReceiver(deps, host, userPart, { domain: payer.domain, signedAtSeconds: request.payerData.compliance?.signatureTimestamp ?? Number.NaN });

  const offered = receiver.currencies.find((c) => c.code === request.receivingCurrencyCode);
  if (!offered) {
    throw new AppError('INVALID_CURRENCY', `${receiver.address.address} does not receive ${request.receivingCurrencyCode}.`, {
      details: { currencies: receiver.currencies.map((c) => c.code) },
    });
  }
  if (request.sendingAmountCurrencyCode && request.sendingAmountCurrencyCode !== offered.code) {
    throw new AppError('INVALID_CURRENCY', 'The amount is in neither msats nor the receiving currency.');
  }
  // Receiver fees are 0. The receiver gets at least one minor unit, by an invoice Lightning can carry.
  const conversion = convertPayRequest(request, offered.multiplier, 0n);
  if (
    !conversion ||
    conversion.receivingAmount < BigInt(Math.max(1, offered.minSendable)) ||
    conversion.receivingAmount > BigInt(offered.maxSendable) ||
    conversion.invoiceMsats > MAX_INVOICE_MSATS
  ) {
    throw new AppError('AMOUNT_OUT_OF_RANGE', `${offered.code} ${conversion?.receivingAmount ?? request.amount} is outside ${offered.minSendable}–${offered.maxSendable}.`, {
      details: { min: offered.minSendable, max: offered.maxSendable, currency: offered.code },
    });
  }
  for (const [key, option] of Object.entries(receiver.payerData)) {
    if (option?.mandatory && (request.payerData as Record<string, unknown>)[key] === undefined) {
      throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', `payerData.${key} is required by the receiver.`, { details: { field: `payerData.${key}` } });
    }
  }

  const nonces = new NonceCheck(deps.db, deps.clock, deps.config.uma.timestampWindowSeconds, payer.domain, true);
  const senderKeys = await counterpartyKeys(
    { clock: deps.clock, config: deps.config.uma, send: httpSend(deps.config.uma, deps.resolver, receiver.environment) },
    payer.domain,
    { unreachable: 'INVALID_SIGNATURE', explain: false },
  );
  await verifySigned(nonces, (validator) => verifyPayReqSignature(request, senderKeys, validator), 'pay request');

  // Compliance has refused the receiver: nothing is opened for it, no invoice issued (after the
  // signature, so only a VASP that proved who it is learns it).
  if (receiver.reviewStatus === 'REJECTED') {
    throw new AppError('USER_NOT_READY', `${receiver.address.address} cannot receive payments.`);
  }

  // The receiving platform decides (INCOMING_PAYMENT.PENDING): the INCOMING transaction is
  // opened, the payer's request for payee data passed on as requested fields, and the invoice
  // issued only once approved. With the transaction, a job that fails it should its invoice not
  // be recorded by `answerBy` (this process dies, the database fails): never PENDING for ever.
  const { compliance: _compliance, ...told } = request.payerData as Record<string, unknown>;
  const paymentId = uuidv7(deps.clock.now().getTime());
  const answerBy = new Date(deps.clock.now().getTime() + deps.config.webhooks.timeoutMs + APPROVAL_WINDOW_MS + INVOICE_RECORDING_MARGIN_MS);
  const { opened, pending } = await withTx(deps.db, async (trx) => {
    const row = await deps.incomingPayments.open(trx, {
      platformId: receiver.platformId,
      customerId: formatId('Customer', receiver.customerId),
      senderUmaAddress: payer.address,
      receiverUmaAddress: receiver.address.address,
      currency: offered.code,
      amount: conversion.receivingAmount,
      counterpartyInformation: told,
      arrived: false,
    });
    const unanswered: UnansweredPayRequest = { paymentId, transactionId: row.id, answerBy: answerBy.toISOString() };
    await enqueueJob(trx, deps.clock, { kind: UNANSWERED_PAY_REQUEST_JOB, platformId: receiver.platformId, payload: unanswered, runAt: answerBy });
    return { opened: row, pending: unanswered };
  });
  try {
    return await approveAndInvoice(deps, { request, receiver, payer, offered, conversion, opened, pending });
  } catch (error) {
    // Refused (the transaction already ended) or failed on the way: a transaction still PENDING
    // without its invoice is failed now; if that fails too, the job does it at `answerBy`.
    await abandonPayRequest(deps, receiver.platformId, pending).catch(() => undefined);
    throw error;
  }
}

interface ApprovalRound {
  request: PayRequest;
  receiver: Receiver;
  payer: UmaAddress;
  offered: Currency;
  conversion: PayConversion;
  /** The INCOMING transaction `open` recorded. */
  opened: Awaited<ReturnType<IncomingPayments['open']>>;
  pending: UnansweredPayRequest;
}

/** Asks the platform, then signs the answer and records its invoice, with the expiry job, by `answerBy`. */
async function approveAndInvoice(deps: ReceivingDeps, round: ApprovalRound): Promise<Record<string, unknown>> {
  const { request, receiver, payer, offered, conversion, opened, pending } = round;
  const requested = Object.entries(request.requestedPayeeData ?? {}).flatMap(([key, option]) => {
    const field = key === 'compliance' || key === 'identifier' ? undefined : payerDataKeyToField(key, CUSTOMER_INFO_FIELDS);
    return field ? [{ name: field, mandatory: Boolean(option?.mandatory) }] : [];
  });
  const decided = await deps.incomingPayments.askPlatform(opened, requested);
  refuseUnlessApproved(decided.decision, receiver.address.address);
  // Approved for a receiver deleted (or whose account closed) while its platform decided: the
  // approval failed the payment (OFFRAMP_FAILED), and no invoice is issued for it.
  if (!(await deps.incomingPayments.isPending(receiver.platformId, opened.id))) {
    throw new AppError('USER_NOT_READY', `${receiver.address.address} cannot receive payments.`);
  }
  const payeeInfo = decided.decision.status === 'APPROVED' ? (decided.decision.receiverCustomerInfo ?? {}) : {};

  const { paymentId } = pending;
  let issued: IssuedInvoice | undefined;
  const signed = await getPayReqResponse({
    request,
    metadata: metadataOf(receiver),
    invoiceCreator: {
      // For the exact conversion's msats, not the SDK's float product.
      createUmaInvoice: async (_sdkMsats, metadata) => {
        issued = deps.node.issue(paymentId, conversion.invoiceMsats, metadata, deps.clock.now(), receiver.environment);
        return issued.invoice;
      },
    },
    conversionRate: offered.multiplier,
    receivingCurrencyCode: offered.code,
    receivingCurrencyDecimals: offered.decimals,
    receiverChannelUtxos: [],
    receiverFeesMillisats: 0,
    utxoCallback: `${vaspOrigin(receiver.address.domain)}/uma/utxo-callback/${paymentId}`,
    payeeData: payeeDataOf(receiver.address.address, payeeInfo),
    receivingVaspPrivateKey: (await deps.keys()).signing.privateKey,
    payeeIdentifier: receiver.address.address,
  });
  const response = withReceivingAmount(signed, conversion);
  await withTx(deps.db, async (trx) => {
    await lockPayRequest(trx, paymentId);
    // Past it, the job may have given the pay request up: an invoice now would be for a failed payment.
    if (deps.clock.now() >= new Date(pending.answerBy)) {
      throw new AppError('SERVICE_SWITCH_ERROR', `${receiver.address.address}'s invoice was not ready in time.`, { details: { reason: 'ANSWER_DEADLINE_PASSED' } });
    }
    // The payment's expiry is the receiving platform's (a sandbox test clock moves it); the
    // invoice itself is dated by the system clock, which the paying node reads.
    const platformNow = await deps.platformClock.now(receiver.platformId, trx);
    const expiryMs = INVOICE_EXPIRY_SECONDS * 1000;
    await insertIncomingPayment(trx, {
      platform_id: receiver.platformId,
      id: paymentId,
      customer_id: receiver.customerId,
      receiver_uma_address: receiver.address.address,
      sender_identifier: payer.address,
      sender_vasp_domain: payer.domain,
      currency_code: offered.code,
      amount: conversion.receivingAmount,
      amount_msats: issued!.amountMsats,
      fee_msats: 0n,
      payment_hash: issued!.paymentHash,
      invoice: issued!.invoice,
      payer_data: request.payerData,
      status: 'PENDING',
      created_at: deps.clock.now(),
      expires_at: new Date(platformNow.getTime() + expiryMs),
      transaction_id: opened.id,
      sender_confirmed_at: null,
    });
    // A platform job: advancing the platform's clock brings it forward with the expiry.
    const runAt = new Date(deps.clock.now().getTime() + expiryMs);
    await enqueueJob(trx, deps.clock, { kind: INVOICE_EXPIRY_JOB, platformId: receiver.platformId, payload: { paymentId }, runAt });
  });
  return response.toJsonSchemaObject() as Record<string, unknown>;
}

/**
 * Gives up a pay request whose invoice was not recorded: its INCOMING transaction, if still
 * PENDING, fails PAY_REQUEST_FAILED (INCOMING_PAYMENT.FAILED). Nothing once the invoice is
 * recorded (its expiry job governs it then); under the pay request's lock, so an invoice being
 * recorded at the same moment is either seen here or refused there.
 */
async function abandonPayRequest(deps: ReceivingDeps, platformId: string, pending: UnansweredPayRequest): Promise<void> {
  await withTx(deps.db, async (trx) => {
    await lockPayRequest(trx, pending.paymentId);
    if (await findIncomingPayment(trx, platformId, pending.paymentId)) return;
    await deps.incomingPayments.fail(trx, platformId, pending.transactionId, 'PAY_REQUEST_FAILED');
  });
}

/** The UNANSWERED_PAY_REQUEST_JOB: at `answerBy` (on this process's clock too), the pay request is given up unless its invoice was recorded. */
export async function failUnansweredPayRequest(deps: ReceivingDeps, job: Job): Promise<void> {
  const pending = job.payload as UnansweredPayRequest;
  const answerBy = new Date(pending.answerBy);
  if (answerBy > deps.clock.now()) throw new RetryJobAt(answerBy, 'the pay request may still record its invoice');
  await abandonPayRequest(deps, job.platform_id!, pending);
}

/** The settlement this node offers, UMA 1.x's default when a pay request names none: Lightning, in BTC. */
const LIGHTNING_SETTLEMENT = { layer: 'ln', assetIdentifier: 'BTC' } as const;

/**
 * UMA 1.x lets a pay request name its settlement layer and asset (`settlement`), one of those
 * the receiver's lnurlp answer offered. Ours offers no `settlementOptions`, which means
 * Lightning in BTC: any other choice is refused, not answered with an invoice on a layer the
 * sender did not choose. (UMA 0.x has no such field.)
 */
function refuseUnofferedSettlement(request: PayRequest): void {
  const settlement = request.settlement;
  if (!settlement) return;
  if (settlement.layer.toLowerCase() === LIGHTNING_SETTLEMENT.layer && settlement.assetIdentifier.toUpperCase() === LIGHTNING_SETTLEMENT.assetIdentifier) return;
  throw new AppError('INVALID_REQUEST_FORMAT', 'This receiver settles on Lightning (layer ln) in BTC only; settlement names another layer or asset.', {
    details: { field: 'settlement', supportedSettlement: [LIGHTNING_SETTLEMENT] },
  });
}

/**
 * The payee data answered: the platform's receiverCustomerInfo under UMA's keys, and the
 * receiver's own identifier. The SDK lays payee data over the compliance data it signs, so
 * nothing the platform sends may stand for `identifier` or `compliance` (UMAD-06: the payee
 * named in the signature, the VASP's own signed data).
 */
function payeeDataOf(identifier: string, info: Record<string, unknown>): Record<string, unknown> {
  const told = Object.entries(info)
    .map(([field, value]) => [fieldToPayerDataKey(field), value] as const)
    .filter(([key]) => key !== 'identifier' && key !== 'compliance');
  return { ...Object.fromEntries(told), identifier };
}

/**
 * The platform's refusal, told to the sending VASP in Corridor's envelope: rejected 403
 * SENDER_NOT_ACCEPTED; more information wanted 400 MISSING_REQUIRED_UMA_PARAMETERS with the
 * fields (send again with them); no usable answer in time 500 SERVICE_SWITCH_ERROR (the
 * receiving side failed, not the request).
 */
function refuseUnlessApproved(decision: ApprovalDecision, receiver: string): void {
  switch (decision.status) {
    case 'APPROVED':
      return;
    case 'REJECTED':
      throw new AppError('SENDER_NOT_ACCEPTED', `${receiver} does not accept this payment.`, { details: decision.reason ? { reason: decision.reason } : {} });
    case 'INFO_REQUIRED':
      throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', `${receiver} needs more about the payer: ${decision.requiredFields.join(', ') || 'unspecified'}.`, {
        details: { requiredFields: decision.requiredFields },
      });
    default:
      throw new AppError('SERVICE_SWITCH_ERROR', `${receiver}'s platform did not decide on the payment (${decision.status}).`, { details: { reason: decision.status } });
  }
}
