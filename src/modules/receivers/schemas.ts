import Type, { type Static } from 'typebox';
import { IdParam, ResourceId } from '../../platform/http/schemas.js';

const CurrencyView = Type.Object({
  code: Type.String({ examples: ['MXN'] }),
  name: Type.String({ examples: ['Mexican Peso'] }),
  symbol: Type.String({ examples: ['$'] }),
  decimals: Type.Integer({ minimum: 0, examples: [2] }),
});

export const CurrencyPreference = Type.Object(
  {
    currency: CurrencyView,
    estimatedExchangeRate: Type.Number({
      exclusiveMinimum: 0,
      description: "From the sender's currency to this one, spread included; not locked (a quote locks a rate).",
      examples: [17.1],
    }),
    min: Type.Integer({ minimum: 1, description: 'The least that can be received in this currency.' }),
    max: Type.Integer({ minimum: 1, description: 'The most that can be received in this currency.' }),
  },
  { title: 'CurrencyPreference' },
);

export const ReceiverExternalAccountLookupResponse = Type.Object(
  {
    supportedCurrencies: Type.Array(CurrencyPreference),
    lookupId: Type.String({ description: 'Names this lookup; pass it to POST /quotes.', examples: ['LookupRequest:019542f5-b3e7-1d02-0000-000000000009'] }),
    accountId: ResourceId('ExternalAccount', { description: 'The external account looked up.' }),
  },
  { title: 'ReceiverExternalAccountLookupResponse' },
);

export const ReceiverExternalAccountParams = Type.Object(
  { accountId: IdParam('ExternalAccount', 'REFERENCE_NOT_FOUND', 'external account') },
  { additionalProperties: false },
);

export const ReceiverLookupQuery = Type.Object(
  {
    senderUmaAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: 'The sending customer by UMA address (or give customerId).' })),
    customerId: Type.Optional(ResourceId('Customer', { description: 'The sending customer (or give senderUmaAddress).' })),
  },
  { additionalProperties: false },
);

export type CurrencyPreference = Static<typeof CurrencyPreference>;
export type ReceiverExternalAccountLookupResponse = Static<typeof ReceiverExternalAccountLookupResponse>;
export type ReceiverLookupQuery = Static<typeof ReceiverLookupQuery>;
