import type { DbOrTx } from '../../platform/db/database.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { amountToWire, MAX_WIRE_AMOUNT } from '../../platform/money.js';
import type { PlatformConfigCache } from '../config/index.js';
import { checkWithdrawalAddress, type DestinationNetwork, type WithdrawalNetwork } from '../external-accounts/index.js';
import { findInternalAccountRow } from '../internal-accounts/index.js';
import { NETWORKS, priceRequest, type ExchangeRates } from '../rates/index.js';
import type { NetworkFeeEstimate, WithdrawalFeeModel } from './model.js';
import type { EstimateCryptoWithdrawalFeeRequest, EstimateCryptoWithdrawalFeeResponse } from './schemas.js';

/** `networkFee`'s bound (int64): outside 0…it the deployment's estimator is broken, not the request. */
const INT64_MAX = 2n ** 63n - 1n;

export interface FeeModels {
  sandbox: WithdrawalFeeModel;
  production: WithdrawalFeeModel;
}

/**
 * The network fee of withdrawing `amount` of `currency` on `network`, from the environment's model
 * (a production platform without one: 503). The one figure the estimate and a quote paying out
 * onto the network both charge. A fee past what the wire carries, or below zero (a net amount
 * above the amount), is the estimator failing, not the request: 503, before either is used.
 */
export async function networkFeeFor(models: FeeModels, environment: 'sandbox' | 'production', network: WithdrawalNetwork, currency: string, amount: bigint): Promise<NetworkFeeEstimate> {
  const estimate = await models[environment].estimate(network, currency, amount);
  if (estimate.networkFee < 0n || estimate.networkFee > INT64_MAX || estimate.networkFeeInCurrency < 0n || estimate.networkFeeInCurrency > MAX_WIRE_AMOUNT) {
    throw new AppError('SERVICE_UNAVAILABLE', `The network fee estimate for ${network} is out of range; try again later.`);
  }
  return estimate;
}

export interface EstimateDeps {
  feeModels: FeeModels;
  rates: ExchangeRates;
  configCache: PlatformConfigCache;
}

/**
 * What a withdrawal of `amount` from a crypto account to `destinationAddress` would cost now:
 * priced as a quote from the account to a wallet on the network locking `amount` on the SENDING
 * side (the same `priceRequest`, network fee included), so `totalFee` is that quote's
 * `feesIncluded`. Nothing is reserved or moved; the balance is not checked (a withdrawal is).
 */
export async function estimateWithdrawalFee(
  db: DbOrTx,
  deps: EstimateDeps,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  request: EstimateCryptoWithdrawalFeeRequest,
  now: Date,
): Promise<EstimateCryptoWithdrawalFeeResponse> {
  const account = await findInternalAccountRow(db, caller.platformId, request.internalAccountId);
  if (!account) throw new AppError('REFERENCE_NOT_FOUND', `Internal account ${request.internalAccountId} not found.`);
  const model = deps.feeModels[caller.environment];
  const problems: FieldError[] = [];
  if (account.currency !== request.currency) problems.push({ field: 'currency', message: `must be the account's currency, ${account.currency}` });
  if (!model.carries(request.cryptoNetwork).includes(request.currency)) {
    problems.push({ field: 'cryptoNetwork', message: `does not carry ${request.currency} (it carries ${model.carries(request.cryptoNetwork).join(', ')})` });
  }
  const addressProblem = checkWithdrawalAddress(request.cryptoNetwork, request.destinationAddress, caller.environment === 'production' ? 'mainnet' : 'any', now);
  if (addressProblem) problems.push({ field: 'destinationAddress', message: `${addressProblem} on ${request.cryptoNetwork}` });
  if (problems.length > 0) throw invalidInput(problems);

  const amount = BigInt(request.amount);
  const network = await networkFeeFor(deps.feeModels, caller.environment, request.cryptoNetwork, request.currency, amount);
  const fees = await feesOf(deps, caller, request, amount, network.networkFeeInCurrency);
  if (!fees.netAmount) {
    throw new AppError('INVALID_AMOUNT', `The amount ${amount} does not cover the fee of ${fees.totalFee} (${request.currency} minor units).`, {
      details: { amount: request.amount, totalFee: amountToWire(fees.totalFee) },
    });
  }
  return {
    networkFee: network.networkFee,
    networkFeeAsset: network.networkFeeAsset,
    applicationFee: amountToWire(fees.totalFee - network.networkFeeInCurrency),
    totalFee: amountToWire(fees.totalFee),
    netAmount: amountToWire(fees.netAmount),
  };
}

const isDestinationNetwork = (network: WithdrawalNetwork): network is DestinationNetwork => network in NETWORKS;

/**
 * Every fee of the withdrawal and what arrives (undefined: the fees take it all; `totalFee` then
 * the fixed fees, what any withdrawal there costs). A network external wallets are paid on is
 * priced by the quote's pricing; BITCOIN (on-chain) is no such network — no quote pays out there —
 * so only its network fee counts.
 */
async function feesOf(
  deps: EstimateDeps,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  request: EstimateCryptoWithdrawalFeeRequest,
  amount: bigint,
  networkFee: bigint,
): Promise<{ totalFee: bigint; netAmount: bigint | undefined }> {
  if (!isDestinationNetwork(request.cryptoNetwork)) return { totalFee: networkFee, netAmount: amount > networkFee ? amount - networkFee : undefined };
  const [snapshot, config] = await Promise.all([deps.rates.snapshot(caller.environment), deps.configCache.get(caller.platformId)]);
  const pricing = priceRequest({
    snapshot,
    config,
    sendingCurrency: request.currency,
    receivingCurrency: request.currency,
    route: NETWORKS[request.cryptoNetwork],
    lockedSide: 'SENDING',
    amount,
    networkFee,
  });
  const priced = pricing.priced;
  if (!priced) return { totalFee: pricing.fees.serviceFixed + pricing.fees.platformFixed, netAmount: undefined };
  return { totalFee: priced.serviceFee + priced.platformFee, netAmount: priced.received };
}
