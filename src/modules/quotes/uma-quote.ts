// A quote to a UMA address: priced by a pay request to the receiver's VASP before the quote's
// transaction opens (prefetchUmaQuote), then stored with the invoice it holds (createUmaQuote).
import type { Tx } from '../../platform/db/database.js';
import type { StoredResponse } from '../../platform/idempotency.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import type { PlatformConfig } from '../config/index.js';
import { MAX_POSTING_AMOUNT } from '../ledger/index.js';
import { NO_FEES, platformFeeOf, priceTransfer, UNIT_RATE, type Priced, type RateSnapshot } from '../rates/index.js';
import type { UmaQuote } from '../uma/index.js';
import { type Caller, type Prefetched, type QuoteDeps } from './execute.js';
import { checkSender } from './payability.js';
import { amountOutOfRange, currencyConfig, feeOverrideOf, refuseAboveSizeLimit, refuseOutsideRange } from './pricing.js';
import { insertQuote, type QuoteRow } from './repo.js';
import { resolveSource, sourceCurrencyField } from './resolve.js';
import type { QuoteRequest } from './schemas.js';
import { instructionsFor, newQuoteFields, openIfDue, refuseUnsignedWalletExecution } from './stored-quote.js';

/** How long a quote to a UMA address holds at most: as instant rails, and never past its invoice's own lifetime. */
const UMA_QUOTE_SECONDS = 120;

/**
 * Before the quote's transaction opens (an HTTP exchange with another VASP must not hold a
 * connection): a UMA_ADDRESS destination is priced by a pay request to the receiver's VASP on
 * the `lookupId` of GET /receiver/uma/{address}. Undefined for any other destination. Every
 * refusal the sender's side can decide on its own (the request's own, asked before: checkQuoteRequest;
 * the source, the sender's readiness, the currency, a SENDING lock's amount, the lookup's sender)
 * comes first: the pay request discloses the sender to the receiver's VASP and opens a payment there.
 */
export async function prefetchUmaQuote(deps: QuoteDeps, caller: Caller, body: QuoteRequest, snapshot: RateSnapshot): Promise<PricedUmaQuote | undefined> {
  const destination = body.destination;
  if (destination.destinationType !== 'UMA_ADDRESS') return undefined;
  const source = await resolveSource(deps.db, caller.platformId, body);
  refuseUnsignedWalletExecution(body, source);
  if (source.customerUuid) await checkSender(deps.db, caller.platformId, source.customerUuid);
  const config = await deps.configCache.get(caller.platformId);
  const sendingConfig = currencyConfig(config, source.currency, 'OUTGOING', sourceCurrencyField(body));
  // A SENDING lock's total is the locked amount itself: outside the platform's range it is refused
  // here, like the source and the sender, and above the corridor's maximum once the receiving
  // currency is chosen (the one named, else the receiver's first), not after the pay request has
  // disclosed the sender.
  if (body.lockedCurrencySide === 'SENDING') refuseOutsideRange(BigInt(body.lockedCurrencyAmount), sendingConfig, source.currency);
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
    // Required to a UMA address (checkQuoteRequest).
    lookupId: body.lookupId!,
    senderCustomerUuid: source.customerUuid,
    ...(body.senderCustomerInfo ? { senderCustomerInfo: body.senderCustomerInfo } : {}),
    umaAddress: destination.umaAddress,
    ...(destination.currency ? { currency: destination.currency } : {}),
    sendingCurrency: source.currency,
    lockedSide: body.lockedCurrencySide,
    lockedAmount: BigInt(body.lockedCurrencyAmount),
    sentOfLocked: (receivingCurrency, locked) => {
      refuseAboveSizeLimit(deps, locked, source.currency, receivingCurrency, snapshot);
      return (pricedSending = withFees('SENDING', locked, receivingCurrency))?.sent;
    },
  });
  // UmaSender refuses a SENDING lock its fees leave nothing of before it answers, and a RECEIVING lock's cost is at least one unit.
  const priced = body.lockedCurrencySide === 'SENDING' ? pricedSending : withFees('RECEIVING', uma.sentAmount, uma.receivingCurrency);
  if (!priced) throw new Error(`the UMA quote sending ${uma.sentAmount} was not priced`);
  return { ...uma, priced };
}

/** A UMA quote with the sender's fees: `priced.sent` is what the invoice costs, `priced.total` what the sender pays. */
export type PricedUmaQuote = UmaQuote & { priced: Priced };

/**
 * A quote to a UMA address: the receiver's VASP converted (its multiplier and fee, in
 * `rateDetails.counterparty*`) and issued the invoice; the sender pays the invoice's value at
 * Corridor's mid rate for the Lightning leg (`gridApiMultiplier`) and the platform's fee, with no
 * Corridor service fee on UMA payments. The invoice is kept for the execution (uma's `uma_outgoing_payments`).
 */
export async function createUmaQuote(trx: Tx, deps: QuoteDeps, caller: Caller, body: QuoteRequest, prefetched: Prefetched & { config: PlatformConfig; uma: PricedUmaQuote }): Promise<StoredResponse> {
  const { platformId } = caller;
  const { uma, config, snapshot } = prefetched;
  // The sender was checked before the pay request went out (prefetchUmaQuote, which also held the
  // lookup to the source's customer); again here, since an immediate execution relies on this transaction's check.
  const source = await resolveSource(trx, platformId, body);
  await checkSender(trx, platformId, uma.customerUuid);
  const sendingConfig = currencyConfig(config, source.currency, 'OUTGOING', sourceCurrencyField(body));
  const { priced } = uma;
  const total = priced.total;
  // What arrives is checked too: a posting carries at most MAX_POSTING_AMOUNT (the total is, by maxAmount).
  if (uma.receivedAmount > MAX_POSTING_AMOUNT) throw amountOutOfRange(total, sendingConfig, source.currency);
  refuseOutsideRange(total, sendingConfig, source.currency);
  refuseAboveSizeLimit(deps, total, source.currency, uma.receivingCurrency, snapshot);
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
    destination: { ...body.destination, currency: uma.receivingCurrency },
    source_kind: source.kind,
    source_account_id: source.accountUuid,
    source_account_type: source.accountType,
    destination_kind: 'UMA_ADDRESS',
    destination_account_id: null,
    payment_rail: 'UMA',
    sending_currency: source.currency,
    receiving_currency: uma.receivingCurrency,
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
    ...newQuoteFields(body, createdAt),
    expires_at: new Date(prefetched.now.getTime() + Math.max(0, Math.min(UMA_QUOTE_SECONDS, uma.invoiceLifetimeSeconds)) * 1000),
  };
  await insertQuote(trx, row);
  await deps.uma.record(trx, platformId, id, row.transaction_id, uma);
  return openIfDue(trx, deps, row, body, source, prefetched);
}
