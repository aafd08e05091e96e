import { PayReqResponse, type PayRequest } from '@uma-sdk/core';
import { exactDecimal, invoiceMsats, receivedFor } from './amounts.js';

/** What a pay request converts: the amount the receiver gets and the invoice the payer pays. */
export interface PayConversion {
  receivingAmount: bigint;
  invoiceMsats: bigint;
}

/**
 * A pay request's conversion at the receiver's published `multiplier`, exactly (the SDK's
 * getPayReqResponse rounds a float product to the nearest msat or minor unit): an amount in the
 * receiving currency is invoiced rounded up (`invoiceMsats`), an amount in msats converted
 * rounded down (`receivedFor`). `request.amount` must be a safe integer.
 */
export function convertPayRequest(request: PayRequest, multiplier: number, feeMsats: bigint): PayConversion {
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
