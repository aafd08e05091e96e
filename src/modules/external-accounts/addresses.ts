import { validate as isBitcoinAddress, Network as BitcoinNetwork } from 'bitcoin-address-validation';
import {
  checkBolt11,
  checkBolt12,
  checkEvmAddress,
  checkLightningAddress,
  checkSolanaAddress,
  checkSparkAddress,
  checkTronAddress,
  type NetworkScope,
  type Problem,
} from './formats.js';
import type { DestinationNetwork } from './variants.js';

/** The networks money can be withdrawn on: every destination network, and bitcoin on chain. */
export type WithdrawalNetwork = DestinationNetwork | 'BITCOIN';

/**
 * Whether `address` can receive on `network`, by the same rules as external wallets: EVM chains
 * (EIP-55 when mixed case), Solana, Tron, Spark, a Lightning invoice (BOLT11 or BOLT12) or
 * address, and bitcoin addresses (mainnet for production platforms).
 */
export function checkWithdrawalAddress(network: WithdrawalNetwork, address: string, scope: NetworkScope, now: Date): Problem {
  switch (network) {
    case 'ETHEREUM':
    case 'BASE':
    case 'POLYGON':
    case 'PLASMA':
      return checkEvmAddress(address);
    case 'SOLANA':
      return checkSolanaAddress(address);
    case 'TRON':
      return checkTronAddress(address);
    case 'SPARK':
      return checkSparkAddress(address, scope);
    case 'LIGHTNING':
      if (/^ln(bc|tb|bcrt|tbs)/i.test(address)) return checkBolt11(address, scope, now);
      if (/^lno1/i.test(address)) return checkBolt12(address);
      return checkLightningAddress(address);
    case 'BITCOIN':
      if (isBitcoinAddress(address, BitcoinNetwork.mainnet)) return undefined;
      if (scope === 'any' && (isBitcoinAddress(address, BitcoinNetwork.testnet) || isBitcoinAddress(address, BitcoinNetwork.regtest))) return undefined;
      return scope === 'mainnet' && isBitcoinAddress(address) ? 'is a test-network address; production platforms pay on mainnet' : 'is not a bitcoin address';
  }
}
