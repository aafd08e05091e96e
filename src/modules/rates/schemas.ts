import Type, { type Static } from 'typebox';
import { CurrencyCode, DateTime, StringEnum } from '../../platform/http/schemas.js';
import { RAILS } from './rails.js';

export const PAYMENT_RAIL_NAMES = Object.keys(RAILS) as Array<keyof typeof RAILS>;

/** A currency as the API shows it (code, name, symbol, minor-unit digits). */
export const CurrencyView = Type.Object(
  {
    code: Type.String({ examples: ['USD'] }),
    name: Type.String({ examples: ['US Dollar'] }),
    symbol: Type.String({ examples: ['$'] }),
    decimals: Type.Integer({ minimum: 0, description: 'Digits after the decimal point of the minor unit.' }),
  },
  { title: 'Currency' },
);

export const PaymentRailSchema = StringEnum(PAYMENT_RAIL_NAMES, { description: 'The payment network a payout travels on.' });

export const ExchangeRatesQuery = Type.Object(
  {
    sourceCurrency: Type.Optional(CurrencyCode({ description: 'Only rates from this currency (one of the platform’s supportedCurrencies).' })),
    destinationCurrency: Type.Optional(
      Type.Array(CurrencyCode(), { maxItems: 50, description: 'Only rates to these currencies; repeat the parameter for several.' }),
    ),
    sendingAmount: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        format: 'int64',
        default: 10000,
        description: 'Amount the sender pays, in minor units of the source currency (fees included); default 10000.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ExchangeRate = Type.Object(
  {
    sourceCurrency: CurrencyView,
    sendingAmount: Type.Integer({ format: 'int64', minimum: 0, description: 'Echo of the request’s sendingAmount: what the sender pays, fees included.' }),
    minSendingAmount: Type.Integer({ format: 'int64', minimum: 0, description: 'The platform’s minimum for the source currency (supportedCurrencies).' }),
    maxSendingAmount: Type.Integer({ format: 'int64', minimum: 0, description: 'The platform’s maximum for the source currency (supportedCurrencies).' }),
    destinationCurrency: CurrencyView,
    destinationPaymentRail: PaymentRailSchema,
    receivingAmount: Type.Integer({ format: 'int64', minimum: 0, description: 'What the receiver gets for sendingAmount, in minor units of the destination currency.' }),
    exchangeRate: Type.Number({ exclusiveMinimum: 0, description: 'Destination currency units per source currency unit, spread included.' }),
    fees: Type.Object(
      {
        fixed: Type.Integer({ format: 'int64', minimum: 0, description: 'Fixed fees (service and platform), minor units of the source currency.' }),
        total: Type.Integer({ format: 'int64', minimum: 0, description: 'All fees on sendingAmount, the platform’s included.' }),
      },
      { title: 'ExchangeRateFees' },
    ),
    updatedAt: DateTime({ description: 'When the rate table in use was published (the provider’s as-of time).' }),
  },
  { title: 'ExchangeRate' },
);

export const ExchangeRateList = Type.Object({ data: Type.Array(ExchangeRate) }, { title: 'ExchangeRateListResponse' });

export type ExchangeRatesQuery = Static<typeof ExchangeRatesQuery>;
export type ExchangeRate = Static<typeof ExchangeRate>;
