// The quote's two sides, resolved from the request with the refusals that belong to them: the
// source (an account or real-time funding), the destination account and the rail it is paid on,
// the request field each side's currency came from, and the receiver lookup a quote to an
// account may name.
import { CRYPTO_CURRENCY_CODES } from '../../platform/currencies.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { parseId } from '../../platform/ids.js';
import { requireUmaAddress } from '../../platform/uma-address.js';
import { checkExternalOwner, findExternalAccount, type DestinationNetwork, type ExternalAccountDestination } from '../external-accounts/index.js';
import { findInternalAccount, type InternalAccountRef } from '../internal-accounts/index.js';
import { BOOK_TRANSFER, NETWORKS, RAILS, routeServes, type RouteSpec } from '../rates/index.js';
import { findReceiverLookup } from '../receivers/index.js';
import type { QuoteDeps } from './execute.js';
import { checkCreditable, pullSource } from './payability.js';
import type { QuoteRow } from './repo.js';
import type { AccountDestinationT, QuoteRequest } from './schemas.js';

const NETWORK_CURRENCIES: Record<string, readonly string[]> = {
  USDC: ['SOLANA', 'ETHEREUM', 'BASE', 'POLYGON'],
  USDT: ['ETHEREUM', 'SOLANA', 'TRON', 'PLASMA'],
  BTC: ['BITCOIN', 'SPARK', 'LIGHTNING'],
};

export interface ResolvedSource {
  kind: QuoteRow['source_kind'];
  currency: string;
  customerUuid: string | null;
  accountUuid: string | null;
  accountType: string | null;
  /** The account's API id, for SELF_PAYMENT. */
  accountId?: string;
}

export interface ResolvedDestination {
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

export const field = (name: string, message: string) => invalidInput([{ field: name, message }]);
const notFound = (id: string) => new AppError('REFERENCE_NOT_FOUND', `Account ${id} was not found.`);

async function internalAccountOrFail(trx: DbOrTx, platformId: string, accountId: string, at: string): Promise<InternalAccountRef> {
  const account = await findInternalAccount(trx, platformId, accountId);
  if (!account) throw notFound(accountId);
  if (account.status !== 'ACTIVE') throw field(at, `account ${accountId} is ${account.status}: only ACTIVE accounts move money`);
  return account;
}

export async function resolveSource(trx: DbOrTx, platformId: string, body: QuoteRequest): Promise<ResolvedSource> {
  const source = body.source;
  const requested = source.customerId ? parseId('Customer', source.customerId)! : undefined;
  if (source.sourceType === 'REALTIME_FUNDING') {
    // Its cryptoNetwork was held to the currency before anything was read (checkQuoteRequest).
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
export async function resolveDestination(trx: DbOrTx, platformId: string, body: QuoteRequest, payer: string | null): Promise<ResolvedDestination> {
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
export function sourceCurrencyField(body: QuoteRequest): string {
  return body.source.sourceType === 'REALTIME_FUNDING' ? 'source.currency' : 'source.accountId';
}

export function destinationCurrencyField(body: QuoteRequest): string {
  return body.destination.currency !== undefined ? 'destination.currency' : 'destination.accountId';
}

/**
 * The refusals POST /quotes decides from the request alone, asked before anything is read — the
 * rates included, so a deployment that cannot price (a production one without a rate provider,
 * 503 for a priced request) still answers a malformed request 400 — and, to a UMA address, before
 * the Idempotency-Key's claim and the pay request. To a UMA address: the `lookupId` of
 * GET /receiver/uma/{address}, a source that is not an external account. To an account: a
 * `lookupId` that is a receiver lookup's (GET /receiver/external-account/{accountId},
 * `LookupRequest:<uuid>`) or left out — upstream needs it for UMA destinations only, and an id of
 * any other shape (a UMA lookup's `Lookup:<uuid>` among them) is the caller's mistake. Real-time
 * funding: `cryptoNetwork` for a crypto currency only, one that carries it. Then a UMA address's
 * form.
 */
export function checkQuoteRequest(body: QuoteRequest): void {
  const { source, destination } = body;
  if (destination.destinationType === 'UMA_ADDRESS') {
    if (!body.lookupId) throw field('lookupId', 'is required to pay a UMA address: look the receiver up first (GET /receiver/uma/{receiverUmaAddress})');
    if (source.sourceType === 'ACCOUNT' && parseId('ExternalAccount', source.accountId)) {
      throw field('source.accountId', 'a UMA payment is sent from an internal account or real-time funding');
    }
  } else if (body.lookupId !== undefined && !parseId('LookupRequest', body.lookupId)) {
    throw field('lookupId', 'to an ACCOUNT destination must be the lookupId of GET /receiver/external-account/{accountId} (LookupRequest:…), or be left out; a UMA lookup prices a UMA_ADDRESS destination only');
  }
  if (source.sourceType === 'REALTIME_FUNDING') {
    const crypto = CRYPTO_CURRENCY_CODES.has(source.currency);
    if (crypto && !source.cryptoNetwork) throw field('source.cryptoNetwork', `is required to fund in ${source.currency}`);
    if (!crypto && source.cryptoNetwork) throw field('source.cryptoNetwork', `applies to crypto currencies only, not ${source.currency}`);
    if (crypto && !NETWORK_CURRENCIES[source.currency]!.includes(source.cryptoNetwork!)) {
      throw field('source.cryptoNetwork', `${source.currency} is funded on ${NETWORK_CURRENCIES[source.currency]!.join(', ')}`);
    }
  }
  if (destination.destinationType === 'UMA_ADDRESS') requireUmaAddress('destination.umaAddress', destination.umaAddress);
}

/**
 * The receiver lookup the quote names, as the UMA path holds its lookup: this platform's and not
 * expired (else 404 LOOKUP_REQUEST_NOT_FOUND, another platform's answering as an unknown one),
 * made for the destination account (else 400 INVALID_RECEIVER, as a UMA lookup of another
 * address) and for the source's customer (else 400 INVALID_INPUT, as a UMA lookup made for
 * another sender). Its rate and limits were an estimate: the quote prices and applies its own rules.
 * Read on the quote's handle, before its own transaction opens.
 */
export async function checkAccountLookup(db: DbOrTx, deps: QuoteDeps, platformId: string, body: QuoteRequest, source: ResolvedSource, destination: ResolvedDestination): Promise<void> {
  if (body.lookupId === undefined) return;
  // The clock the lookup's expiry was set by (receivers' route), not the platform's.
  const lookup = await findReceiverLookup(db, platformId, body.lookupId, deps.clock.now());
  if (lookup.accountUuid !== destination.accountUuid) {
    throw new AppError('INVALID_RECEIVER', `Lookup ${body.lookupId} was for ${lookup.accountId ?? 'another account'}, not ${destination.accountId}.`, {
      details: { lookupAccountId: lookup.accountId },
    });
  }
  if (lookup.senderUuid !== source.customerUuid) throw field('lookupId', 'was made for another sender than the source’s customer');
}
