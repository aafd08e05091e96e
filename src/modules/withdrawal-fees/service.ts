import type { DbOrTx } from '../../platform/db/database.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { amountToWire, MAX_WIRE_AMOUNT } from '../../platform/money.js';
import { checkWithdrawalAddress } from '../external-accounts/index.js';
import { findInternalAccountRow } from '../internal-accounts/index.js';
import type { WithdrawalFeeModel } from './model.js';
import type { EstimateCryptoWithdrawalFeeRequest, EstimateCryptoWithdrawalFeeResponse } from './schemas.js';

/** `networkFee`'s bound (int64): outside 0…it the deployment's estimator is broken, not the request. */
const INT64_MAX = 2n ** 63n - 1n;

export interface FeeModels {
  sandbox: WithdrawalFeeModel;
  production: WithdrawalFeeModel;
}

/**
 * What a withdrawal of `amount` from a crypto account to `destinationAddress` would cost now.
 * Nothing is reserved or moved; the balance is not checked (a withdrawal is, when it is made).
 */
export async function estimateWithdrawalFee(
  db: DbOrTx,
  models: FeeModels,
  caller: { platformId: string; environment: 'sandbox' | 'production' },
  request: EstimateCryptoWithdrawalFeeRequest,
  now: Date,
): Promise<EstimateCryptoWithdrawalFeeResponse> {
  const account = await findInternalAccountRow(db, caller.platformId, request.internalAccountId);
  if (!account) throw new AppError('REFERENCE_NOT_FOUND', `Internal account ${request.internalAccountId} not found.`);
  const model = models[caller.environment];
  const problems: FieldError[] = [];
  if (account.currency !== request.currency) problems.push({ field: 'currency', message: `must be the account's currency, ${account.currency}` });
  if (!model.carries(request.cryptoNetwork).includes(request.currency)) {
    problems.push({ field: 'cryptoNetwork', message: `does not carry ${request.currency} (it carries ${model.carries(request.cryptoNetwork).join(', ')})` });
  }
  const addressProblem = checkWithdrawalAddress(request.cryptoNetwork, request.destinationAddress, caller.environment === 'production' ? 'mainnet' : 'any', now);
  if (addressProblem) problems.push({ field: 'destinationAddress', message: `${addressProblem} on ${request.cryptoNetwork}` });
  if (problems.length > 0) throw invalidInput(problems);

  const amount = BigInt(request.amount);
  const network = await model.estimate(request.cryptoNetwork, request.currency, amount);
  // Checked before either figure is used: a fee past what the wire carries, or below zero (a net
  // amount above the amount), is the estimator failing, not the request.
  if (network.networkFee < 0n || network.networkFee > INT64_MAX || network.networkFeeInCurrency < 0n || network.networkFeeInCurrency > MAX_WIRE_AMOUNT) {
    throw new AppError('SERVICE_UNAVAILABLE', `The network fee estimate for ${request.cryptoNetwork} is out of range; try again later.`);
  }
  const applicationFee = 0n;
  const totalFee = network.networkFeeInCurrency + applicationFee;
  if (amount <= totalFee) {
    throw new AppError('INVALID_AMOUNT', `The amount ${amount} does not cover the fee of ${totalFee} (${request.currency} minor units).`, {
      details: { amount: request.amount, totalFee: amountToWire(totalFee) },
    });
  }
  return {
    networkFee: network.networkFee,
    networkFeeAsset: network.networkFeeAsset,
    applicationFee: amountToWire(applicationFee),
    totalFee: amountToWire(totalFee),
    netAmount: amountToWire(amount - totalFee),
  };
}
