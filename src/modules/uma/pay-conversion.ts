import { PayReqResponse, type Currency, type PayRequest } from '@uma-sdk/core';
import { exactDecimal, invoiceMsats, receivedFor, sendableSats } from './amounts.js';

/** What a pay request converts: the amount the receiver gets and the invoice the payer pays. */
export interface PayConversion {
  receivingAmount: bigint;
  invoiceMsats: bigint;
}

/**
 * A receiver's LUD-06 `minSendable`/`maxSendable` in whole sats (`sendableSats`) for the
 * currencies its lnurlp answer offers, each at the `multiplier` it publishes.
 */
export function lnurlpSendableSats(currencies: ReadonlyArray<Pick<Currency, 'minSendable' | 'maxSendable' | 'multiplier'>>): { min: number; max: number } {
  return sendableSats(currencies.map((c) => ({ min: BigInt(c.minSendable), max: BigInt(c.maxSendable), multiplier: exactDecimal(c.multiplier) })));
}

/**
 * A pay request's conversion at the receiver's published `multiplier`, exactly (the SDK's
 * getPayReqResponse rounds a float product to the nearest msat or minor unit): an amount in the
 * receiving currency is invoiced rounded up (`invoiceMsats`), an amount in msats converted
 * rounded down (`receivedFor`). Undefined when `request.amount` is not a positive safe integer,
 * which converts to nothing a receiver takes.
 */
export function convertPayRequest(request: PayRequest, multiplier: number, feeMsats: bigint): PayConversion | undefined {
  if (!Number.isSafeInteger(request.amount) || request.amount <= 0) return undefined;
  const amount = BigInt(request.amount);
  const rate = exactDecimal(multiplier);
  return request.sendingAmountCurrencyCode
    ? { receivingAmount: amount, invoiceMsats: invoiceMsats(amount, rate, feeMsats) }
    : { receivingAmount: receivedFor(amount, rate, feeMsats), invoiceMsats: amount };
}

/**
 * The SDK's signed answer with `converted.amount` set to the exact conversion's. UMA signs payer,
 * payee, nonce and timestamp only, so the signature still holds.
 */
export function withReceivingAmount(response: PayReqResponse, conversion: PayConversion): PayReqResponse {
  if (!response.converted) return response;
  const converted = { ...response.converted, amount: Number(conversion.receivingAmount) };
  return new PayReqResponse(response.pr, response.payeeData, converted, response.disposable, response.successAction, response.umaMajorVersion, response.routes);
}
