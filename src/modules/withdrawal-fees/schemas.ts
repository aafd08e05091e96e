import Type, { type Static } from 'typebox';
import { CurrencyCode, MinorAmount, ResourceId, StringEnum } from '../../platform/http/schemas.js';

export const WITHDRAWAL_NETWORKS = ['BITCOIN', 'ETHEREUM', 'SOLANA', 'BASE', 'POLYGON', 'TRON', 'PLASMA', 'SPARK', 'LIGHTNING'] as const;

export const EstimateCryptoWithdrawalFeeRequest = Type.Object(
  {
    internalAccountId: ResourceId('InternalAccount', { description: 'The crypto internal account (or embedded wallet) to withdraw from.' }),
    currency: CurrencyCode({ description: 'The asset withdrawn: the account\'s currency (USDC, USDT or BTC).' }),
    cryptoNetwork: StringEnum(WITHDRAWAL_NETWORKS, { description: 'The network to withdraw on; it must carry `currency`.' }),
    amount: Type.Integer({ minimum: 1, maximum: 9_007_199_254_740_991, description: 'The amount withdrawn, in the smallest unit of `currency`.' }),
    destinationAddress: Type.String({ minLength: 1, maxLength: 7089, description: 'Where the funds go; checked for the network.' }),
  },
  {
    additionalProperties: false,
    title: 'EstimateCryptoWithdrawalFeeRequest',
    examples: [
      {
        internalAccountId: 'InternalAccount:019542f5-b3e7-1d02-0000-000000000001',
        currency: 'USDC',
        cryptoNetwork: 'SOLANA',
        amount: 1000000,
        destinationAddress: '7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU',
      },
    ],
  },
);

export const EstimateCryptoWithdrawalFeeResponse = Type.Object(
  {
    // Wei pass 2^53 at ordinary gas prices (65,000 gas above 139 gwei): the exact integer is written,
    // up to int64, where every other amount stops at 2^53 − 1 (docs/conventions.md).
    networkFee: Type.Unsafe<bigint>({
      type: 'integer',
      minimum: 0,
      format: 'int64',
      description:
        'The network (gas) fee in the smallest unit of `networkFeeAsset` (wei, lamports, sun, satoshis); informational. In wei it may exceed 2^53 − 1: read it with a big-integer-aware JSON parser to keep it exact.',
    }),
    networkFeeAsset: Type.String({ examples: ['SOL'] }),
    applicationFee: MinorAmount({
      description:
        'Every fee besides the network\'s, in the withdrawal currency: Corridor\'s service fee for the network (what a quote to a wallet on it charges; 0 on BITCOIN, which no quote pays out on). The platform\'s own fee applies to cross-currency transfers only.',
    }),
    totalFee: MinorAmount({ description: 'The network fee converted to the withdrawal currency (rounded up) plus the application fee: the `feesIncluded` of a quote withdrawing `amount` (SENDING side) to the address.' }),
    netAmount: MinorAmount({ description: 'What the destination receives: `amount - totalFee`.' }),
  },
  { title: 'EstimateCryptoWithdrawalFeeResponse' },
);

export type EstimateCryptoWithdrawalFeeRequest = Static<typeof EstimateCryptoWithdrawalFeeRequest>;
export type EstimateCryptoWithdrawalFeeResponse = Static<typeof EstimateCryptoWithdrawalFeeResponse>;
