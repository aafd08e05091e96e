import {
  encodeToUrl,
  getSignableLnurlpRequestPayload,
  getSupportedMajorVersions,
  isVersionSupported,
  LnurlpResponse,
  signPayload,
  UmaProtocolVersion,
  verifyUmaLnurlpResponseSignature,
  type LnurlpRequest,
} from '@uma-sdk/core';
import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { currency, isCurrency } from '../../platform/currencies.js';
import type { Db } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import type { Principal } from '../../platform/http/auth.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { CUSTOMER_INFO_FIELDS, getConfigRow, senderUmaDomain } from '../config/index.js';
import type { ExchangeRates } from '../rates/index.js';
import { findLookupSender } from '../receivers/index.js';
import { counterpartyUrl } from './address.js';
import { counterpartyCode } from './http-client.js';
import { counterpartyKeys } from './counterparty.js';
import type { VaspKeySource } from './keys.js';
import { payerDataKeyToField } from './payer-data.js';
import { exactDecimal, rateToNumber } from './amounts.js';
import { exactMsatsPerMinorUnit } from './rates.js';
import { findLookup, insertLookup, type LookupRow } from './repo.js';
import type { LookupQuery, ReceiverUmaLookupResponse, StoredLookup } from './schemas.js';
import { markSignedInLnurlp, NonceCheck, verifySigned } from './verification.js';
import type { VaspTransport } from './transport.js';

export interface LookupDeps {
  db: Db;
  clock: Clock;
  config: Config;
  keys: VaspKeySource;
  /** Where messages to the receiver's VASP go (the network, or a sandbox's simulated counterparty). */
  vasps: VaspTransport;
  rates: ExchangeRates;
}

/** Why a platform cannot send UMA messages, for LOOKUP_REQUEST_FAILED and QUOTE_REQUEST_FAILED. */
export const NO_SENDER_DOMAIN = {
  UMA_DOMAIN_NOT_SET: "Set the platform's umaDomain (PATCH /config) first: the receiving VASP fetches this platform's keys there.",
  UMA_DOMAIN_HELD_BY_ANOTHER_PLATFORM: "The platform's umaDomain is now a production platform's own; set a domain of this platform's (PATCH /config) to send UMA payments.",
} as const;

/**
 * The sender's side of UMAD-02/04: a signed lnurlp request to the receiver's VASP over HTTP,
 * its answer checked (signature, nonce, timestamp, certificate chain) and kept as a lookup the
 * quote can name.
 */
export async function lookupReceiver(deps: LookupDeps, principal: Principal, rawAddress: string, query: LookupQuery): Promise<ReceiverUmaLookupResponse> {
  const receiver = requireUmaAddress('receiverUmaAddress', rawAddress);
  const sender = await findLookupSender(deps.db, principal.platformId, query);
  const config = await getConfigRow(deps.db, principal.platformId);
  const sending = await senderUmaDomain(deps.db, config);
  if ('reason' in sending) throw new AppError('LOOKUP_REQUEST_FAILED', NO_SENDER_DOMAIN[sending.reason], { details: { reason: sending.reason } });
  const send = deps.vasps.for({ platformId: principal.platformId, environment: principal.environment });
  const now = deps.clock.now();

  // The request is signed here (not by the SDK's one-call helper) so its timestamp is the Clock's.
  const nonce = randomBytes(16).toString('hex');
  const unsigned: LnurlpRequest = {
    receiverAddress: receiver.address,
    nonce,
    timestamp: now,
    isSubjectToTravelRule: true,
    vaspDomain: sending.domain,
    umaVersion: UmaProtocolVersion,
    signature: '',
  };
  const signed = { ...unsigned, signature: await signPayload(getSignableLnurlpRequestPayload(unsigned), (await deps.keys()).signing.privateKey) };
  // Sent to the receiver's domain, whoever holds it: its signature is no pay request from the receiver (markSignedInLnurlp).
  await markSignedInLnurlp(deps.db, receiver.domain, nonce, Math.floor(now.getTime() / 1000), deps.config.uma.timestampWindowSeconds);
  const answer = await send({ url: encodeToUrl(signed), method: 'GET' });
  if (!answer.ok) {
    throw new AppError('LOOKUP_REQUEST_FAILED', `The receiving VASP ${receiver.domain} did not answer: ${answer.reason}.`, { details: { vaspDomain: receiver.domain, reason: answer.reason } });
  }
  if (answer.status === 404) throw new AppError('UMA_NOT_FOUND', `${receiver.domain} has no receiver ${receiver.address}.`, { details: { umaAddress: receiver.address } });
  if (answer.status !== 200) {
    const code = counterpartyCode(answer.body);
    throw new AppError('LOOKUP_REQUEST_FAILED', `The receiving VASP ${receiver.domain} refused the lookup (${answer.status}${code ? ` ${code}` : ''}).`, {
      details: { vaspDomain: receiver.domain, counterpartyStatus: answer.status, ...(code ? { counterpartyCode: code } : {}) },
    });
  }
  let response: LnurlpResponse;
  try {
    response = LnurlpResponse.fromJson(answer.body);
  } catch {
    throw new AppError('PARSE_LNURLP_RESPONSE_ERROR', `The answer of ${receiver.domain} is not an lnurlp response.`, { details: { vaspDomain: receiver.domain } });
  }
  if (!response.isUma()) throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', `The answer of ${receiver.domain} lacks UMA's compliance, currencies or payer data.`);
  if (response.compliance.receiverIdentifier.toLowerCase() !== receiver.address.toLowerCase()) {
    throw new AppError('PARSE_LNURLP_RESPONSE_ERROR', `${receiver.domain} answered for ${response.compliance.receiverIdentifier}, not ${receiver.address}.`);
  }
  if (!isVersionSupported(response.umaVersion)) {
    throw new AppError('PARSE_LNURLP_RESPONSE_ERROR', `${receiver.domain} answered in UMA ${response.umaVersion}, a version Corridor does not speak.`, {
      details: { vaspDomain: receiver.domain, umaVersion: response.umaVersion.slice(0, 20), supportedMajorVersions: [...getSupportedMajorVersions()] },
    });
  }
  // The pay request goes where this says: only where the receiver's own domain would be reached (https; http to a local one).
  if (!counterpartyUrl(response.callback)) {
    throw new AppError('PARSE_LNURLP_RESPONSE_ERROR', `${receiver.domain} names no usable pay-request callback: an https URL (http only to a local domain).`, {
      details: { vaspDomain: receiver.domain },
    });
  }

  const keys = await counterpartyKeys({ clock: deps.clock, config: deps.config.uma, send }, receiver.domain, { unreachable: 'LOOKUP_REQUEST_FAILED', explain: true });
  const nonces = new NonceCheck(deps.db, deps.clock, deps.config.uma.timestampWindowSeconds, receiver.domain);
  await verifySigned(nonces, (validator) => verifyUmaLnurlpResponseSignature(response, keys, validator), 'lnurlp response');

  const snapshot = await deps.rates.snapshot(principal.environment);
  const senderCurrency = [...(sender.currencies ?? []), ...config.supported_currencies.map((c) => c.currencyCode)].find((code) => exactMsatsPerMinorUnit(snapshot, code) !== undefined) ?? 'USD';
  const senderRate = exactMsatsPerMinorUnit(snapshot, senderCurrency);
  // Receiving major units per sending major unit (msats per sending major unit ÷ msats per
  // receiving major unit), shown as a number; NaN without a sending rate, which offers nothing.
  const rateTo = (c: { multiplier: number; decimals: number }) => {
    if (!senderRate) return Number.NaN;
    const multiplier = exactDecimal(c.multiplier);
    return rateToNumber({
      num: senderRate.num * 10n ** BigInt(currency(senderCurrency).decimals) * multiplier.den,
      den: senderRate.den * multiplier.num * 10n ** BigInt(c.decimals),
    });
  };
  const offered = response.currencies
    // What another VASP sends is only offered when it is something Corridor can quote on: a currency
    // it knows, counted in that currency's own minor units (amounts in the quote are Corridor's minor
    // units: another `decimals` would make every amount off by a power of ten), at a usable rate.
    .filter(
      (c) =>
        isCurrency(c.code) &&
        c.decimals === currency(c.code).decimals &&
        Number.isFinite(c.multiplier) &&
        c.multiplier > 0 &&
        Number.isSafeInteger(c.minSendable) &&
        Number.isSafeInteger(c.maxSendable) &&
        c.maxSendable >= Math.max(1, c.minSendable),
    )
    .flatMap((c) => {
      const estimatedExchangeRate = rateTo(c);
      if (!(Number.isFinite(estimatedExchangeRate) && estimatedExchangeRate > 0)) return [];
      const kept = { code: c.code, name: c.name.slice(0, 100), symbol: c.symbol.slice(0, 20), decimals: c.decimals, multiplier: c.multiplier, min: Math.max(1, c.minSendable), max: Math.max(1, c.maxSendable) };
      return [{ kept, estimatedExchangeRate }];
    });
  const stored: StoredLookup = {
    callback: response.callback,
    umaVersion: response.umaVersion,
    minSendable: response.minSendable,
    maxSendable: response.maxSendable,
    currencies: offered.map((o) => o.kept),
    payerData: Object.fromEntries(Object.entries(response.payerData).map(([key, option]) => [key, { mandatory: Boolean(option?.mandatory) }])),
    receiverKycStatus: response.compliance.kycStatus,
    encryptionPubKey: Buffer.from(keys.getEncryptionPubKey()).toString('hex'),
    senderCurrency,
  };
  const id = uuidv7(now.getTime());
  await insertLookup(deps.db, {
    platform_id: principal.platformId,
    id,
    customer_id: sender.id,
    receiver_uma_address: receiver.address,
    counterparty_domain: receiver.domain,
    response: stored,
    created_at: now,
    expires_at: new Date(now.getTime() + deps.config.uma.lookupTtlSeconds * 1000),
  });

  return {
    receiverUmaAddress: receiver.address,
    supportedCurrencies: offered.map(({ kept: c, estimatedExchangeRate }) => ({
      currency: { code: c.code, name: c.name, symbol: c.symbol, decimals: c.decimals },
      estimatedExchangeRate,
      min: c.min,
      max: c.max,
    })),
    requiredPayerDataFields: Object.entries(stored.payerData).flatMap(([key, option]) => {
      const field = key === 'compliance' ? undefined : payerDataKeyToField(key, CUSTOMER_INFO_FIELDS);
      return field ? [{ name: field as (typeof CUSTOMER_INFO_FIELDS)[number], mandatory: option.mandatory }] : [];
    }),
    lookupId: formatId('Lookup', id),
  };
}

/** A lookup of this platform that has not expired, for the quote that names it; else LOOKUP_REQUEST_NOT_FOUND. */
export async function findUmaLookup(db: Db, clock: Clock, platformId: string, lookupId: string): Promise<LookupRow & { response: StoredLookup }> {
  const uuid = parseId('Lookup', lookupId);
  const row = uuid ? await findLookup(db, platformId, uuid) : undefined;
  if (!row || row.expires_at <= clock.now()) throw new AppError('LOOKUP_REQUEST_NOT_FOUND', `Lookup ${lookupId} not found or expired; look the receiver up again.`);
  return row as LookupRow & { response: StoredLookup };
}
