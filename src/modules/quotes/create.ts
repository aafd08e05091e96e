import { CRYPTO_CURRENCY_CODES, minorUnits } from '../../platform/currencies.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { inTransaction } from '../../platform/db/tx.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import type { StoredResponse } from '../../platform/idempotency.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { MAX_POSTING_AMOUNT } from '../ledger/index.js';
import type { PlatformConfig } from '../config/index.js';
import { checkExternalOwner, findExternalAccount, type DestinationNetwork, type ExternalAccountDestination } from '../external-accounts/index.js';
import { findInternalAccount, fundingInstructions, newFundingReference, type InternalAccountRef } from '../internal-accounts/index.js';
import {
  BOOK_TRANSFER,
  convertDown,
  corridorRate,
  formatRate,
  NETWORKS,
  NO_FEES,
  platformFeeOf,
  priceRequest,
  priceTransfer,
  RAILS,
  routeServes,
  UNIT_RATE,
  type PlatformFeeOverride,
  type Priced,
  type RateSnapshot,
  type RouteSpec,
} from '../rates/index.js';
import { networkFeeFor } from '../withdrawal-fees/index.js';
import { executeLocked, limitIn, QUOTE_EXECUTE_OPERATION, type Caller, type ExecutionContext, type Prefetched, type QuoteDeps } from './execute.js';
import { checkCreditable, checkDestination, checkSender, pullSource } from './payability.js';
import { insertQuote, type QuoteRow } from './repo.js';
import type { AccountDestinationT, QuoteRequest } from './schemas.js';
import type { UmaQuote } from '../uma/index.js';
import { toQuote } from './views.js';

const NETWORK_CURRENCIES: Record<string, readonly string[]> = {
  USDC: ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON'],
  USDT: ['ETHEREUM', 'SOLANA', 'TRON', 'PLASMA'],
  BTC: ['BITCOIN', 'SPARK', 'LIGHTNING'],
};
/** The deposit instruction type of each funding network (internal-accounts' funding instructions). */
const NETWORK_INSTRUCTION: Record<string, string> = {
  SOLANA: 'SOLANA_WALLET', ETHEREUM: 'ETHEREUM_WALLET', BASE: 'BASE_WALLET', POLYGON: 'POLYGON_WALLET', TRON: 'TRON_WALLET',
  PLASMA: 'PLASMA_WALLET', SPARK: 'SPARK_WALLET', LIGHTNING: 'LIGHTNING', BITCOIN: 'BITCOIN_L1',
};

interface ResolvedSource {
  kind: QuoteRow['source_kind'];
  currency: string;
  customerUuid: string | null;
  accountUuid: string | null;
  accountType: string | null;
  /** The account's API id, for SELF_PAYMENT. */
  accountId?: string;
}

interface ResolvedDestination {
  kind: QuoteRow['destination_kind'];
  accountUuid: string;
  accountId: string;
  currency: string;
  /** The rail (PaymentRail), crypto network or BOOK the payout travels on. */
  routeName: string;
  route: RouteSpec;
  external?: ExternalAccountDestination;
  /** An external wallet's: the payout goes onto this crypto network and pays its fee. */
  network?: DestinationNetwork;
}

const field = (name: string, message: string) => invalidInput([{ field: name, message }]);
const notFound = (id: string) => new AppError('REFERENCE_NOT_FOUND', `Account ${id} was not found.`);

async function internalAccountOrFail(trx: DbOrTx, platformId: string, accountId: string, at: string): Promise<InternalAccountRef> {
  const account = await findInternalAccount(trx, platformId, accountId);
  if (!account) throw notFound(accountId);
  if (account.status !== 'ACTIVE') throw field(at, `account ${accountId} is ${account.status}: only ACTIVE accounts move money`);
  return account;
}

async function resolveSource(trx: DbOrTx, platformId: string, body: QuoteRequest): Promise<ResolvedSource> {
  const source = body.source;
  const requested = source.customerId ? parseId('Customer', source.customerId)! : undefined;
  if (source.sourceType === 'REALTIME_FUNDING') {
    const crypto = CRYPTO_CURRENCY_CODES.has(source.currency);
    if (crypto && !source.cryptoNetwork) throw field('source.cryptoNetwork', `is required to fund in ${source.currency}`);
    if (!crypto && source.cryptoNetwork) throw field('source.cryptoNetwork', `applies to crypto currencies only, not ${source.currency}`);
    if (crypto && !NETWORK_CURRENCIES[source.currency]!.includes(source.cryptoNetwork!)) {
      throw field('source.cryptoNetwork', `${source.currency} is funded on ${NETWORK_CURRENCIES[source.currency]!.join(', ')}`);
    }
    return { kind: 'REALTIME_FUNDING', currency: source.currency, customerUuid: requested ?? null, accountUuid: null, accountType: null };
  }
  if (parseId('ExternalAccount', source.accountId)) {
    const account = await pullSource(trx, platformId, source.accountId);
    if (requested && account.customerUuid !== null && requested !== account.customerUuid) throw field('source.customerId', 'is not the owner of the source account');
    return { kind: 'EXTERNAL_ACCOUNT', currency: account.currency, customerUuid: account.customerUuid ?? requested ?? null, accountUuid: account.uuid, accountType: 'EXTERNAL', accountId: account.id };
  }
  const account = await internalAccountOrFail(trx, platformId, source.accountId, 'source.accountId');
  if (requested && account.customerUuid !== null && requested !== account.customerUuid) throw field('source.customerId', 'is not the owner of the source account');
  return {
    kind: 'INTERNAL_ACCOUNT',
    currency: account.currency,
    // A platform-owned (FBO) account may send on a customer's behalf: source.customerId names it.
    customerUuid: account.customerUuid ?? requested ?? null,
    accountUuid: account.uuid,
    accountType: account.type,
    accountId: account.id,
  };
}

/** `payer`: the sending customer, who pays to its own external accounts or the platform's. */
async function resolveDestination(trx: DbOrTx, platformId: string, body: QuoteRequest, payer: string | null): Promise<ResolvedDestination> {
  const destination = body.destination;
  if (destination.destinationType === 'UMA_ADDRESS') throw new Error('UMA destinations are quoted by createUmaQuote');
  const resolved = await destinationAccount(trx, platformId, destination, payer);
  if (destination.currency !== undefined && destination.currency !== resolved.currency) {
    throw field('destination.currency', `must be ${resolved.currency}, the destination account's currency (or be left out)`);
  }
  return resolved;
}

async function destinationAccount(trx: DbOrTx, platformId: string, destination: AccountDestinationT, payer: string | null): Promise<ResolvedDestination> {
  if (parseId('ExternalAccount', destination.accountId)) {
    const account = await findExternalAccount(trx, platformId, destination.accountId, { payer });
    let routeName: string;
    let route: RouteSpec;
    if (account.kind === 'bank') {
      // The account's rails that pay its currency (SWIFT accounts carry any fiat currency).
      const usable = account.rails.filter((r) => routeServes(RAILS[r], account.currency));
      const rail = destination.paymentRail ?? usable[0];
      if (!rail || !usable.includes(rail)) throw field('destination.paymentRail', `must be one of the rails that pay this account in ${account.currency}: ${usable.join(', ') || 'none'}`);
      routeName = rail;
      route = RAILS[rail];
    } else {
      if (destination.paymentRail) throw field('destination.paymentRail', `a ${account.network} wallet is paid on its network, not a payment rail`);
      routeName = account.network!;
      route = NETWORKS[account.network!];
    }
    await checkExternalOwner(trx, platformId, account, 'destination');
    return {
      kind: 'EXTERNAL_ACCOUNT',
      accountUuid: account.uuid,
      accountId: account.id,
      currency: account.currency,
      routeName,
      route,
      external: account,
      ...(account.network ? { network: account.network } : {}),
    };
  }
  const account = await internalAccountOrFail(trx, platformId, destination.accountId, 'destination.accountId');
  if (destination.paymentRail) throw field('destination.paymentRail', 'a transfer between internal accounts travels on no rail');
  await checkCreditable(trx, platformId, account);
  return { kind: 'INTERNAL_ACCOUNT', accountUuid: account.uuid, accountId: account.id, currency: account.currency, routeName: 'BOOK', route: BOOK_TRANSFER };
}

/**
 * The request field a side's currency came from, as INVALID_CURRENCY names it (a dot path, as
 * every field error): the currency itself where the request gave it, else the account it is the
 * currency of.
 */
function sourceCurrencyField(body: QuoteRequest): string {
  return body.source.sourceType === 'REALTIME_FUNDING' ? 'source.currency' : 'source.accountId';
}

function destinationCurrencyField(body: QuoteRequest): string {
  return body.destination.currency !== undefined ? 'destination.currency' : 'destination.accountId';
}

function currencyConfig(config: PlatformConfig, code: string, direction: 'INCOMING' | 'OUTGOING', at: string) {
  const entry = config.supportedCurrencies.find((c) => c.currencyCode === code);
  if (!entry) throw new AppError('INVALID_CURRENCY', `${code} is not one of the platform's supportedCurrencies (PATCH /config).`, { details: { field: at, currency: code } });
  if (!entry.enabledTransactionTypes.includes(direction)) {
    throw new AppError('INVALID_CURRENCY', `${direction} transfers are not enabled for ${code} (supportedCurrencies[].enabledTransactionTypes).`, {
      details: { field: at, currency: code, direction },
    });
  }
  return entry;
}

function paymentInstructionsFor(source: ResolvedSource, body: QuoteRequest, now: Date): unknown[] | null {
  if (source.kind !== 'REALTIME_FUNDING' || body.source.sourceType !== 'REALTIME_FUNDING') return null;
  const crypto = CRYPTO_CURRENCY_CODES.has(source.currency);
  const all = fundingInstructions({ type: crypto ? 'INTERNAL_CRYPTO' : 'INTERNAL_FIAT', currency: source.currency, reference: newFundingReference(), isPlatformAccount: true, now });
  if (!crypto) return all;
  const wanted = NETWORK_INSTRUCTION[body.source.cryptoNetwork!];
  return all.filter((i) => i.accountOrWalletInfo.accountType === wanted);
}

/**
 * An embedded wallet pays only with its session's stamp over the quote's payloadToSign, so no
 * path that executes at once (immediatelyExecute, a UMA quote's or a transfer's) may start from
 * one; executeLocked refuses it too, as the last line.
 */
function refuseUnsignedWalletExecution(body: QuoteRequest, source: ResolvedSource): void {
  if (body.immediatelyExecute && source.accountType === 'EMBEDDED_WALLET') {
    throw field('immediatelyExecute', 'is not available for EMBEDDED_WALLET sources: create the quote, then execute it with the wallet’s Service-Wallet-Signature');
  }
}

/**
 * The quote's paymentInstructions. From an embedded wallet they are the challenge its session
 * signs to execute (written in `trx`, the transaction the quote is stored in); otherwise what the
 * source's kind shows.
 */
async function instructionsFor(
  trx: DbOrTx,
  deps: QuoteDeps,
  caller: Caller,
  body: QuoteRequest,
  source: ResolvedSource,
  now: Date,
  quote: { quoteId: string; totalSendingAmount: bigint; receivingAmount: bigint; receivingCurrency: string; destination: string },
): Promise<{ paymentInstructions: QuoteRow['payment_instructions']; signedRequestId: string | null }> {
  if (source.accountType !== 'EMBEDDED_WALLET') return { paymentInstructions: paymentInstructionsFor(source, body, now), signedRequestId: null };
  const challenge = await inTransaction(trx, (wtx) =>
    deps.walletAuth.wallets.issueFor(wtx, {
      platformId: caller.platformId,
      accountUuid: source.accountUuid!,
      operation: QUOTE_EXECUTE_OPERATION,
      targetId: quote.quoteId,
      body: {},
      context: { environment: caller.environment },
      type: 'ACTIVITY_TYPE_EXECUTE_QUOTE',
      parameters: {
        quoteId: quote.quoteId,
        totalSendingAmount: String(quote.totalSendingAmount),
        sendingCurrency: source.currency,
        receivingAmount: String(quote.receivingAmount),
        receivingCurrency: quote.receivingCurrency,
        destination: quote.destination,
      },
    }),
  );
  return {
    signedRequestId: parseId('Request', challenge.requestId)!,
    paymentInstructions: [
      {
        instructionsNotes: 'Sign payloadToSign with an active session key of the wallet, then POST /quotes/{quoteId}/execute with the stamp in Service-Wallet-Signature.',
        isPlatformAccount: false,
        accountOrWalletInfo: { accountType: 'EMBEDDED_WALLET', payloadToSign: challenge.payloadToSign },
      },
    ],
  };
}

/**
 * POST /quotes: every refusal before anything is written (module README, "Refusals"), then the
 * price fixed in the current rate window and the quote stored; `immediatelyExecute` executes it
 * in the same transaction. `db` may be the root handle (no Idempotency-Key): a quote that is only
 * stored is one INSERT and needs no transaction; one that also writes a wallet challenge, a UMA
 * payment or its execution opens one (`inTransaction`).
 */
export async function createQuote(
  db: DbOrTx,
  deps: QuoteDeps,
  caller: Caller,
  body: QuoteRequest,
  // Read before the transaction opens, so a request never waits for a second connection while holding one.
  prefetched: Prefetched & { config: PlatformConfig; uma?: PricedUmaQuote; networkFee?: PrefetchedNetworkFee },
): Promise<StoredResponse> {
  const { platformId } = caller;
  const uma = prefetched.uma;
  if (uma) return inTransaction(db, (trx) => createUmaQuote(trx, deps, caller, body, { ...prefetched, uma }));
  checkAccountLookupId(body);
  const source = await resolveSource(db, platformId, body);
  refuseUnsignedWalletExecution(body, source);
  const destination = await resolveDestination(db, platformId, body, source.customerUuid);
  if (source.accountId && source.accountId === destination.accountId) {
    throw new AppError('SELF_PAYMENT', 'The source and the destination are the same account.', { details: { accountId: destination.accountId } });
  }
  if (source.customerUuid) await checkSender(db, platformId, source.customerUuid);

  const { config, snapshot } = prefetched;
  const sendingConfig = currencyConfig(config, source.currency, 'OUTGOING', sourceCurrencyField(body));
  if (destination.kind === 'INTERNAL_ACCOUNT') currencyConfig(config, destination.currency, 'INCOMING', destinationCurrencyField(body));

  const override = feeOverrideOf(body, source.currency);
  // On the root handle (no Idempotency-Key) no transaction is open yet: the model is asked here; in one, it was asked before (prefetchNetworkFee).
  const networkFee = !destination.network
    ? undefined
    : db.isTransaction
      ? takeNetworkFee(prefetched.networkFee, source.currency, destination)
      : await payoutNetworkFee(deps, caller, body, snapshot, source.currency, destination.network, destination.currency);

  const pricing = priceRequest({
    snapshot,
    config,
    sendingCurrency: source.currency,
    receivingCurrency: destination.currency,
    route: destination.route,
    lockedSide: body.lockedCurrencySide,
    amount: BigInt(body.lockedCurrencyAmount),
    currencyFields: { from: sourceCurrencyField(body), to: destinationCurrencyField(body) },
    ...(override ? { platformFeeOverride: override } : {}),
    ...(networkFee !== undefined ? { networkFee } : {}),
  });
  const priced = pricing.priced;
  if (!priced) {
    throw new AppError('INVALID_AMOUNT', `${body.lockedCurrencyAmount} cannot make a transfer: after fees nothing would arrive.`, {
      details: { lockedCurrencySide: body.lockedCurrencySide, lockedCurrencyAmount: body.lockedCurrencyAmount },
    });
  }
  if (priced.total > MAX_POSTING_AMOUNT || priced.received > MAX_POSTING_AMOUNT) {
    throw new AppError('AMOUNT_OUT_OF_RANGE', 'The transfer’s amounts exceed what the API carries exactly (2^53 − 1 minor units).');
  }
  const min = BigInt(sendingConfig.minAmount);
  const max = BigInt(sendingConfig.maxAmount);
  if (priced.total < min || priced.total > max) {
    throw new AppError('AMOUNT_OUT_OF_RANGE', `The total sending amount ${priced.total} is outside the platform's range for ${source.currency}: ${min}–${max} minor units.`, {
      details: { totalSendingAmount: Number(priced.total), minAmount: Number(min), maxAmount: Number(max), currency: source.currency },
    });
  }
  const sizeLimit = limitIn(deps.config.quoteLimits.maxTransaction, [`${source.currency}:${destination.currency}`, source.currency], source.currency, snapshot);
  if (priced.total > sizeLimit) {
    throw new AppError('TRANSACTION_SIZE_LIMIT_EXCEEDED', `The total sending amount ${priced.total} is above the single-transaction maximum of ${sizeLimit} ${source.currency} minor units for this corridor.`, {
      details: { totalSendingAmount: Number(priced.total), limit: Number(sizeLimit), currency: source.currency, corridor: `${source.currency}:${destination.currency}` },
    });
  }
  if (destination.external) checkDestination(destination.external, priced.received, destination.currency, snapshot);

  const now = prefetched.now;
  const createdAt = deps.clock.now();
  const id = uuidv7(createdAt.getTime());
  const quoteId = formatId('Quote', id);
  // Stored and nothing else written: one INSERT, no transaction needed.
  const onlyStored = source.accountType !== 'EMBEDDED_WALLET' && !body.immediatelyExecute && source.kind !== 'REALTIME_FUNDING';
  const store = async (trx: DbOrTx): Promise<QuoteRow> => {
    const { paymentInstructions, signedRequestId } = await instructionsFor(trx, deps, caller, body, source, now, {
      quoteId,
      totalSendingAmount: priced.total,
      receivingAmount: priced.received,
      receivingCurrency: destination.currency,
      destination: destination.accountId,
    });
    const rate = pricing.corridor.rate;
    const row: QuoteRow = {
      id,
      platform_id: platformId,
      customer_id: source.customerUuid,
      source: body.source as Record<string, unknown>,
      destination: { ...body.destination, ...(destination.kind === 'EXTERNAL_ACCOUNT' && destination.external!.kind === 'bank' ? { paymentRail: destination.routeName } : {}) },
      source_kind: source.kind,
      source_account_id: source.accountUuid,
      source_account_type: source.accountType,
      destination_kind: destination.kind,
      destination_account_id: destination.accountUuid,
      payment_rail: destination.routeName,
      sending_currency: source.currency,
      receiving_currency: destination.currency,
      locked_side: body.lockedCurrencySide,
      locked_amount: BigInt(body.lockedCurrencyAmount),
      sent_amount: priced.sent,
      service_fees: priced.serviceFee,
      platform_fees: priced.platformFee,
      total_sending_amount: priced.total,
      received_amount: priced.received,
      exchange_rate: formatRate(rate),
      rate_details: {
        counterpartyMultiplier: Number(formatRate(pricing.corridor.mid)),
        counterpartyFixedFee: 0,
        gridApiMultiplier: Number(formatRate(rate)),
        gridApiFixedFee: Number(pricing.fees.serviceFixed),
        gridApiVariableFeeRate: Number(pricing.fees.serviceBps) / 10_000,
        gridApiVariableFeeAmount: Number(priced.serviceVariableFee),
      },
      rate_window_start: snapshot.windowStart,
      payment_instructions: paymentInstructions,
      signed_request_id: signedRequestId,
      // A receiver lookup binds nothing (checkAccountLookupId): only a UMA quote keeps the lookup it was priced on.
      lookup_id: null,
      ...carriedFromRequest(body),
      transaction_id: uuidv7(createdAt.getTime()),
      expires_at: new Date(now.getTime() + destination.route.quoteExpirySeconds * 1000),
      executed_at: null,
      volume_day: null,
      created_at: createdAt,
    };
    await insertQuote(trx, row);
    return row;
  };
  if (onlyStored) return { statusCode: 201, body: toQuote(await store(db), 'PENDING') };
  return inTransaction(db, async (trx) => openIfDue(trx, deps, await store(trx), body, source, prefetched));
}

/**
 * The fee of the network a payout to an external wallet goes onto, in the wallet's currency: the
 * withdrawal fee model's (the environment's; production without one is 503), called as
 * `POST /crypto/estimate-withdrawal-fee` calls it, on the amount the request names in that
 * currency — a RECEIVING lock's amount, a SENDING lock's converted at the quote's rate (rounded
 * down; the same currency: the amount itself, as the estimate is asked). Fixed here with every
 * other fee: the execution never asks again.
 */
async function payoutNetworkFee(
  deps: QuoteDeps,
  caller: Caller,
  body: QuoteRequest,
  snapshot: RateSnapshot,
  sendingCurrency: string,
  network: DestinationNetwork,
  currency: string,
): Promise<bigint> {
  if (!deps.feeModels[caller.environment].carries(network).includes(currency)) {
    throw new AppError('SERVICE_UNAVAILABLE', `The withdrawal fee estimator prices no ${currency} on ${network}: a payout there cannot be quoted.`);
  }
  const locked = BigInt(body.lockedCurrencyAmount);
  const amount =
    body.lockedCurrencySide === 'RECEIVING'
      ? locked
      : convertDown(locked, corridorRate(snapshot, sendingCurrency, currency, { from: sourceCurrencyField(body), to: destinationCurrencyField(body) }).rate, minorUnits(sendingCurrency), minorUnits(currency));
  return (await networkFeeFor(deps.feeModels, caller.environment, network, currency, amount)).networkFeeInCurrency;
}

/**
 * A payout's network fee, asked before the quote's transaction opens (`prefetchNetworkFee`): the
 * destination account and sending currency it was asked for, and the fee or the refusal the
 * quote answers in its place.
 */
export type PrefetchedNetworkFee = { accountUuid: string; sendingCurrency: string } & ({ fee: bigint } | { refusal: AppError });

/**
 * The network fee of a payout to an external wallet, asked of the withdrawal fee model before
 * any transaction opens: a deployment's model may ask a gas oracle over HTTP, which must hold no
 * transaction (on the embedded engine, every other request's) nor the Idempotency-Key's row. Both
 * sides are read here without the quote's rules; createQuote resolves them again and refuses what
 * they refuse first, so a refusal of the model is kept and answered where the fee is charged.
 * Undefined when the destination is no external wallet (or either side is not found: the quote
 * refuses that).
 */
export async function prefetchNetworkFee(deps: QuoteDeps, caller: Caller, body: QuoteRequest, snapshot: RateSnapshot): Promise<PrefetchedNetworkFee | undefined> {
  const destination = body.destination;
  if (destination.destinationType !== 'ACCOUNT' || !parseId('ExternalAccount', destination.accountId)) return undefined;
  // The source is read only for a wallet: most payouts go to bank accounts, and pay for no second read.
  const account = await unlessRefused(findExternalAccount(deps.db, caller.platformId, destination.accountId));
  if (!account?.network) return undefined;
  const sendingCurrency = await sendingCurrencyOf(deps, caller, body);
  if (!sendingCurrency) return undefined;
  const asked = { accountUuid: account.uuid, sendingCurrency };
  try {
    return { ...asked, fee: await payoutNetworkFee(deps, caller, body, snapshot, sendingCurrency, account.network, account.currency) };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { ...asked, refusal: error };
  }
}

/** Undefined for a refusal (an unknown account): the quote resolves the account again and refuses it itself. */
const unlessRefused = <T>(read: Promise<T>): Promise<T | undefined> =>
  read.catch((error: unknown) => {
    if (error instanceof AppError) return undefined;
    throw error;
  });

/** The currency the request's source sends, as resolveSource finds it (undefined: no such account). */
async function sendingCurrencyOf(deps: QuoteDeps, caller: Caller, body: QuoteRequest): Promise<string | undefined> {
  const source = body.source;
  if (source.sourceType === 'REALTIME_FUNDING') return source.currency;
  if (parseId('ExternalAccount', source.accountId)) return (await unlessRefused(findExternalAccount(deps.db, caller.platformId, source.accountId)))?.currency;
  return (await findInternalAccount(deps.db, caller.platformId, source.accountId))?.currency;
}

/** The prefetched network fee of the destination the quote resolved (its refusal thrown here, in the order of creation's refusals). */
function takeNetworkFee(prefetched: PrefetchedNetworkFee | undefined, sendingCurrency: string, destination: ResolvedDestination): bigint {
  // An account's currency and network never change: a fee for another account or currency is a caller that did not prefetch this request's.
  if (!prefetched || prefetched.accountUuid !== destination.accountUuid || prefetched.sendingCurrency !== sendingCurrency) {
    throw new Error(`the network fee of a payout to ${destination.accountId} was not asked before the quote's transaction (prefetchNetworkFee)`);
  }
  if ('refusal' in prefetched) throw prefetched.refusal;
  return prefetched.fee;
}

/**
 * `lookupId` to an account destination: a receiver lookup's (GET /receiver/external-account/
 * {accountId}, `LookupRequest:<uuid>`). Upstream needs it for UMA destinations only, and a
 * receiver lookup is an estimate that binds nothing — the quote's own rules decide who may pay
 * the account, at what rate and between which limits — so it is neither read nor kept. An id of
 * any other shape (a UMA lookup's `Lookup:<uuid>` among them) is the caller's mistake: 400.
 */
function checkAccountLookupId(body: QuoteRequest): void {
  if (body.lookupId === undefined || parseId('LookupRequest', body.lookupId)) return;
  throw field('lookupId', 'to an ACCOUNT destination must be the lookupId of GET /receiver/external-account/{accountId} (LookupRequest:…), or be left out; a UMA lookup prices a UMA_ADDRESS destination only');
}

/** What the request hands through to the quote unchanged. */
function carriedFromRequest(body: QuoteRequest) {
  return {
    description: body.description ?? null,
    remittance_information: body.remittanceInformation ?? null,
    purpose_of_payment: body.purposeOfPayment ?? null,
    sender_customer_info: body.senderCustomerInfo ?? null,
  };
}

/**
 * The answer to a stored quote. A REALTIME_FUNDING quote is paid by the platform sending money to
 * its paymentInstructions, not executed (upstream's execute takes account sources only): its
 * payment opens now and waits for that money until expiresAt, `immediatelyExecute` or not.
 */
async function openIfDue(trx: Tx, deps: QuoteDeps, row: QuoteRow, body: QuoteRequest, source: ResolvedSource, context: ExecutionContext): Promise<StoredResponse> {
  if (body.immediatelyExecute || source.kind === 'REALTIME_FUNDING') {
    const executed = await executeLocked(trx, deps, row, context, { createdNow: true });
    return { statusCode: executed.statusCode === 200 ? 201 : executed.statusCode, body: executed.body };
  }
  return { statusCode: 201, body: toQuote(row, 'PENDING') };
}


/** How long a quote to a UMA address holds at most: as instant rails, and never past its invoice's own lifetime. */
const UMA_QUOTE_SECONDS = 120;

/**
 * Before the quote's transaction opens (an HTTP exchange with another VASP must not hold a
 * connection): a UMA_ADDRESS destination is priced by a pay request to the receiver's VASP on
 * the `lookupId` of GET /receiver/uma/{address}. Undefined for any other destination. Every
 * refusal the sender's side can decide on its own (the source, the sender's readiness, the
 * currency, the lookup's sender) comes first: the pay request discloses the sender to the
 * receiver's VASP and opens a payment there.
 */
export async function prefetchUmaQuote(deps: QuoteDeps, caller: Caller, body: QuoteRequest): Promise<PricedUmaQuote | undefined> {
  const destination = body.destination;
  if (destination.destinationType !== 'UMA_ADDRESS') return undefined;
  if (!body.lookupId) throw field('lookupId', 'is required to pay a UMA address: look the receiver up first (GET /receiver/uma/{receiverUmaAddress})');
  if (body.source.sourceType === 'ACCOUNT' && parseId('ExternalAccount', body.source.accountId)) {
    throw field('source.accountId', 'a UMA payment is sent from an internal account or real-time funding');
  }
  const source = await resolveSource(deps.db, caller.platformId, body);
  refuseUnsignedWalletExecution(body, source);
  if (source.customerUuid) await checkSender(deps.db, caller.platformId, source.customerUuid);
  const config = await deps.configCache.get(caller.platformId);
  currencyConfig(config, source.currency, 'OUTGOING', sourceCurrencyField(body));
  // The platform's fee, as on any transfer: on what is converted, out of a SENDING lock (before
  // the pay request asks for what is left), on top of a RECEIVING lock's cost. Corridor's own
  // service fee on UMA is 0; a SENDING lock's rounding remainder goes to it, as on any route.
  const override = feeOverrideOf(body, source.currency);
  const feesOf = (receivingCurrency: string) => {
    const platform = platformFeeOf(config, source.currency, receivingCurrency, override);
    return { ...NO_FEES, platformFixed: platform.fixed, platformBps: platform.variableBps };
  };
  const withFees = (lockedSide: 'SENDING' | 'RECEIVING', amount: bigint, receivingCurrency: string) =>
    priceTransfer({ lockedSide, amount, rate: UNIT_RATE, sendingDecimals: 0, receivingDecimals: 0, fees: feesOf(receivingCurrency) });
  // A SENDING lock is priced once, before the pay request, and that pricing is the quote's.
  let pricedSending: Priced | undefined;
  const uma = await deps.uma.quote({
    platformId: caller.platformId,
    environment: caller.environment,
    lookupId: body.lookupId,
    senderCustomerUuid: source.customerUuid,
    ...(body.senderCustomerInfo ? { senderCustomerInfo: body.senderCustomerInfo } : {}),
    umaAddress: destination.umaAddress,
    ...(destination.currency ? { currency: destination.currency } : {}),
    sendingCurrency: source.currency,
    lockedSide: body.lockedCurrencySide,
    lockedAmount: BigInt(body.lockedCurrencyAmount),
    sentOfLocked: (receivingCurrency, locked) => (pricedSending = withFees('SENDING', locked, receivingCurrency))?.sent,
  });
  // UmaSender refuses a SENDING lock its fees leave nothing of before it answers, and a RECEIVING lock's cost is at least one unit.
  const priced = body.lockedCurrencySide === 'SENDING' ? pricedSending : withFees('RECEIVING', uma.sentAmount, uma.receivingCurrency);
  if (!priced) throw new Error(`the UMA quote sending ${uma.sentAmount} was not priced`);
  return { ...uma, priced };
}

/** A UMA quote with the sender's fees: `priced.sent` is what the invoice costs, `priced.total` what the sender pays. */
export type PricedUmaQuote = UmaQuote & { priced: Priced };

/** `platformFeeOverride` as pricing takes it: USD sources only (spec §4.6), its fixed fee in USD. */
function feeOverrideOf(body: QuoteRequest, sendingCurrency: string): PlatformFeeOverride | undefined {
  const override = body.platformFeeOverride;
  if (!override) return undefined;
  if (sendingCurrency !== 'USD') throw new AppError('NOT_IMPLEMENTED', `platformFeeOverride is available for USD sources only, not ${sendingCurrency}.`);
  if (override.platformFixedFee.currency !== 'USD') throw field('platformFeeOverride.platformFixedFee.currency', 'must be the source currency, USD');
  return { fixed: BigInt(override.platformFixedFee.amount), variableBps: BigInt(override.platformVariableFeeBps) };
}

/**
 * A quote to a UMA address: the receiver's VASP converted (its multiplier and fee, in
 * `rateDetails.counterparty*`) and issued the invoice; the sender pays the invoice's value at
 * Corridor's mid rate for the Lightning leg (`gridApiMultiplier`) and the platform's fee, with no
 * Corridor service fee on UMA payments. The invoice is kept for the execution (uma's `uma_outgoing_payments`).
 */
async function createUmaQuote(trx: Tx, deps: QuoteDeps, caller: Caller, body: QuoteRequest, prefetched: Prefetched & { config: PlatformConfig; uma: PricedUmaQuote }): Promise<StoredResponse> {
  const { platformId } = caller;
  const { uma, config, snapshot } = prefetched;
  // The sender was checked before the pay request went out (prefetchUmaQuote, which also held the
  // lookup to the source's customer); again here, since an immediate execution relies on this transaction's check.
  const source = await resolveSource(trx, platformId, body);
  await checkSender(trx, platformId, uma.customerUuid);
  const sendingConfig = currencyConfig(config, source.currency, 'OUTGOING', sourceCurrencyField(body));
  const { priced } = uma;
  const total = priced.total;
  const min = BigInt(sendingConfig.minAmount);
  const max = BigInt(sendingConfig.maxAmount);
  if (total > MAX_POSTING_AMOUNT || uma.receivedAmount > MAX_POSTING_AMOUNT || total < min || total > max) {
    throw new AppError('AMOUNT_OUT_OF_RANGE', `The total sending amount ${total} is outside the platform's range for ${source.currency}: ${min}–${max} minor units.`, {
      details: { totalSendingAmount: Number(total), minAmount: Number(min), maxAmount: Number(max), currency: source.currency },
    });
  }
  const sizeLimit = limitIn(deps.config.quoteLimits.maxTransaction, [`${source.currency}:${uma.receivingCurrency}`, source.currency], source.currency, snapshot);
  if (total > sizeLimit) {
    throw new AppError('TRANSACTION_SIZE_LIMIT_EXCEEDED', `The total sending amount ${total} is above the single-transaction maximum of ${sizeLimit} ${source.currency} minor units for this corridor.`, {
      details: { totalSendingAmount: Number(total), limit: Number(sizeLimit), currency: source.currency, corridor: `${source.currency}:${uma.receivingCurrency}` },
    });
  }
  const createdAt = deps.clock.now();
  const id = uuidv7(createdAt.getTime());
  const { paymentInstructions, signedRequestId } = await instructionsFor(trx, deps, caller, body, source, prefetched.now, {
    quoteId: formatId('Quote', id),
    totalSendingAmount: total,
    receivingAmount: uma.receivedAmount,
    receivingCurrency: uma.receivingCurrency,
    destination: uma.receiverUmaAddress,
  });
  const row: QuoteRow = {
    id,
    platform_id: platformId,
    customer_id: uma.customerUuid,
    source: body.source as Record<string, unknown>,
    destination: { ...body.destination, currency: uma.receivingCurrency },
    source_kind: source.kind,
    source_account_id: source.accountUuid,
    source_account_type: source.accountType,
    destination_kind: 'UMA_ADDRESS',
    destination_account_id: null,
    payment_rail: 'UMA',
    sending_currency: source.currency,
    receiving_currency: uma.receivingCurrency,
    locked_side: body.lockedCurrencySide,
    locked_amount: BigInt(body.lockedCurrencyAmount),
    sent_amount: priced.sent,
    service_fees: priced.serviceFee,
    platform_fees: priced.platformFee,
    total_sending_amount: total,
    received_amount: uma.receivedAmount,
    exchange_rate: uma.exchangeRate,
    rate_details: uma.rateDetails,
    rate_window_start: snapshot.windowStart,
    payment_instructions: paymentInstructions,
    signed_request_id: signedRequestId,
    // The lookup the pay request was sent on (UmaSender checked it: this platform's, the sender's, the address's, not expired).
    lookup_id: body.lookupId ?? null,
    ...carriedFromRequest(body),
    transaction_id: uuidv7(createdAt.getTime()),
    expires_at: new Date(prefetched.now.getTime() + Math.max(0, Math.min(UMA_QUOTE_SECONDS, uma.invoiceLifetimeSeconds)) * 1000),
    executed_at: null,
    volume_day: null,
    created_at: createdAt,
  };
  await insertQuote(trx, row);
  await deps.uma.record(trx, platformId, id, row.transaction_id, uma);
  return openIfDue(trx, deps, row, body, source, prefetched);
}
