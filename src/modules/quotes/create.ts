// POST /quotes: the order of a quote's refusals and its storing. Its sides are resolved in
// resolve.ts, its price in pricing.ts, what every stored quote shares in stored-quote.ts; a quote
// to a UMA address is uma-quote.ts's.
import type { DbOrTx } from '../../platform/db/database.js';
import { inTransaction } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import type { StoredResponse } from '../../platform/idempotency.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import type { PlatformConfig } from '../config/index.js';
import { formatRate } from '../rates/index.js';
import type { Caller, Prefetched, QuoteDeps } from './execute.js';
import { checkSender } from './payability.js';
import { priceAccountQuote, type PrefetchedNetworkFee } from './pricing.js';
import { insertQuote, type QuoteRow } from './repo.js';
import { checkAccountLookup, resolveDestination, resolveSource } from './resolve.js';
import type { QuoteRequest } from './schemas.js';
import { instructionsFor, newQuoteFields, openIfDue, refuseUnsignedWalletExecution } from './stored-quote.js';
import { createUmaQuote, type PricedUmaQuote } from './uma-quote.js';
import { toQuote } from './views.js';

/**
 * POST /quotes: every refusal before anything is written (module README, "Refusals"; those of
 * the request alone were asked before anything was read, checkQuoteRequest), then the
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
  const source = await resolveSource(db, platformId, body);
  refuseUnsignedWalletExecution(body, source);
  const destination = await resolveDestination(db, platformId, body, source.customerUuid);
  await checkAccountLookup(db, deps, platformId, body, source, destination);
  if (source.accountId && source.accountId === destination.accountId) {
    throw new AppError('SELF_PAYMENT', 'The source and the destination are the same account.', { details: { accountId: destination.accountId } });
  }
  if (source.customerUuid) await checkSender(db, platformId, source.customerUuid);

  const { pricing, priced } = await priceAccountQuote(db, deps, caller, body, prefetched, source, destination);

  const { snapshot, now } = prefetched;
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
      destination: { ...body.destination, ...(destination.kind === 'EXTERNAL_ACCOUNT' && destination.external!.kind === 'bank' ? { paymentRail: destination.routeName } : {}) },
      source_kind: source.kind,
      source_account_id: source.accountUuid,
      source_account_type: source.accountType,
      destination_kind: destination.kind,
      destination_account_id: destination.accountUuid,
      payment_rail: destination.routeName,
      sending_currency: source.currency,
      receiving_currency: destination.currency,
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
      ...newQuoteFields(body, createdAt),
      expires_at: new Date(now.getTime() + destination.route.quoteExpirySeconds * 1000),
    };
    await insertQuote(trx, row);
    return row;
  };
  if (onlyStored) return { statusCode: 201, body: toQuote(await store(db), 'PENDING') };
  return inTransaction(db, async (trx) => openIfDue(trx, deps, await store(trx), body, source, prefetched));
}
