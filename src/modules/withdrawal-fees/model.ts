import { AppError } from '../../platform/errors.js';
import type { WithdrawalNetwork } from '../external-accounts/index.js';

/** One network's fee for one withdrawal, before the platform's application fee. */
export interface NetworkFeeEstimate {
  /** In the smallest unit of `networkFeeAsset` (wei, lamports, sun, satoshis). */
  networkFee: bigint;
  networkFeeAsset: string;
  /** The network fee in the smallest unit of the withdrawal currency, rounded up. */
  networkFeeInCurrency: bigint;
}

/** Estimates network fees; the sandbox table below, or a deployment's own (gas oracles, mempool). */
export interface WithdrawalFeeModel {
  /** Currencies each network carries; a pair outside it is refused before `estimate` is asked. */
  carries(network: WithdrawalNetwork): readonly string[];
  estimate(network: WithdrawalNetwork, currency: string, amount: bigint): Promise<NetworkFeeEstimate>;
}

interface NetworkRow {
  asset: string;
  assetDecimals: number;
  /** Fixed network fee in the asset's smallest unit. */
  fee: bigint;
  /** Lightning routing: parts per million of the amount, on top of `fee`. */
  ppm?: bigint;
  /** Sandbox price of one unit of the asset, in millionths of a US dollar (unused when the asset is the currency). */
  usdMicrosPerAsset?: bigint;
  carries: readonly string[];
}

const GWEI = 1_000_000_000n;

/**
 * The sandbox fee model, per network (modules/withdrawal-fees/README.md explains each figure):
 * a typical transfer's gas or size at a typical price, valued at a fixed sandbox price of the
 * network's asset. USDC and USDT count as one US dollar each.
 */
export const SANDBOX_NETWORK_FEES: Readonly<Record<WithdrawalNetwork, NetworkRow>> = {
  BITCOIN: { asset: 'BTC', assetDecimals: 8, fee: 141n * 10n, carries: ['BTC'] },
  LIGHTNING: { asset: 'BTC', assetDecimals: 8, fee: 1n, ppm: 1_000n, carries: ['BTC'] },
  SPARK: { asset: 'BTC', assetDecimals: 8, fee: 0n, carries: ['BTC'] },
  ETHEREUM: { asset: 'ETH', assetDecimals: 18, fee: 65_000n * 20n * GWEI, usdMicrosPerAsset: 3_000_000_000n, carries: ['USDC', 'USDT'] },
  BASE: { asset: 'ETH', assetDecimals: 18, fee: (65_000n * GWEI) / 100n, usdMicrosPerAsset: 3_000_000_000n, carries: ['USDC'] },
  POLYGON: { asset: 'POL', assetDecimals: 18, fee: 65_000n * 50n * GWEI, usdMicrosPerAsset: 500_000n, carries: ['USDC'] },
  PLASMA: { asset: 'XPL', assetDecimals: 18, fee: 65_000n * GWEI, usdMicrosPerAsset: 500_000n, carries: ['USDT'] },
  SOLANA: { asset: 'SOL', assetDecimals: 9, fee: 5_000n, usdMicrosPerAsset: 150_000_000n, carries: ['USDC', 'USDT'] },
  TRON: { asset: 'TRX', assetDecimals: 6, fee: 13_400_000n, usdMicrosPerAsset: 250_000n, carries: ['USDT'] },
};

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

export const sandboxFeeModel: WithdrawalFeeModel = {
  carries: (network) => SANDBOX_NETWORK_FEES[network].carries,
  async estimate(network, currency, amount) {
    const row = SANDBOX_NETWORK_FEES[network];
    const networkFee = row.fee + (row.ppm ? ceilDiv(amount * row.ppm, 1_000_000n) : 0n);
    if (currency === row.asset) return { networkFee, networkFeeAsset: row.asset, networkFeeInCurrency: networkFee };
    // USDC and USDT have 6 decimals at one dollar each: their smallest unit is a micro-dollar.
    const usdMicros = ceilDiv(networkFee * row.usdMicrosPerAsset!, 10n ** BigInt(row.assetDecimals));
    return { networkFee, networkFeeAsset: row.asset, networkFeeInCurrency: usdMicros };
  },
};

/** Production platforms without a deployment model: no estimate from a sandbox table. */
export const noProductionModel: WithdrawalFeeModel = {
  carries: (network) => SANDBOX_NETWORK_FEES[network].carries,
  async estimate() {
    throw new AppError('SERVICE_UNAVAILABLE', 'No withdrawal fee estimator is configured for production platforms.', { retryable: true });
  },
};
