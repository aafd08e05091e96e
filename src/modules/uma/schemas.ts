import Type, { type Static } from 'typebox';
import { PathParam, ResourceId, StringEnum } from '../../platform/http/schemas.js';
import { CUSTOMER_INFO_FIELDS } from '../config/index.js';

export const LookupParams = Type.Object({
  receiverUmaAddress: PathParam(
    Type.String({ minLength: 1, maxLength: 400, description: 'UMA address of the intended recipient, `$user@domain`.', examples: ['$receiver@uma.domain'] }),
    'UMA_NOT_FOUND',
    'UMA address',
  ),
});

export const LookupQuery = Type.Object(
  {
    senderUmaAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 400, description: 'UMA address of the sender (optional if customerId is provided).' })),
    customerId: Type.Optional(ResourceId('Customer', { description: 'System ID of the sender (optional if senderUmaAddress is provided).' })),
  },
  { additionalProperties: false },
);

const LookupCurrency = Type.Object({
  code: Type.String({ examples: ['USD'] }),
  name: Type.String({ examples: ['United States Dollar'] }),
  symbol: Type.String({ examples: ['$'] }),
  decimals: Type.Integer({ minimum: 0, examples: [2] }),
});

export const CurrencyPreference = Type.Object(
  {
    currency: LookupCurrency,
    estimatedExchangeRate: Type.Number({
      exclusiveMinimum: 0,
      description: "Units of this currency per unit of the sender's currency, at the receiver's conversion rate and Corridor's own; not locked.",
      examples: [1.08],
    }),
    min: Type.Integer({ exclusiveMinimum: 0, description: 'Smallest amount the receiver takes in this currency, minor units.' }),
    max: Type.Integer({ exclusiveMinimum: 0, description: 'Largest amount the receiver takes in this currency, minor units.' }),
  },
  { title: 'CurrencyPreference' },
);

export const ReceiverUmaLookupResponse = Type.Object(
  {
    receiverUmaAddress: Type.String({ description: 'The UMA address that was looked up.', examples: ['$receiver@uma.domain'] }),
    supportedCurrencies: Type.Array(CurrencyPreference),
    requiredPayerDataFields: Type.Array(Type.Object({ name: StringEnum(CUSTOMER_INFO_FIELDS), mandatory: Type.Boolean() }), {
      description: 'What the receiving institution needs to know about the payer before it accepts the payment.',
    }),
    lookupId: ResourceId('Lookup', { description: 'Names this lookup in the quote that follows; it expires.' }),
  },
  { title: 'ReceiverUmaLookupResponse' },
);

export type LookupQuery = Static<typeof LookupQuery>;
export type ReceiverUmaLookupResponse = Static<typeof ReceiverUmaLookupResponse>;

/** What a lookup keeps of the receiving VASP's answer, for the quote and pay request that follow. */
export interface StoredLookup {
  callback: string;
  umaVersion: string;
  minSendable: number;
  maxSendable: number;
  currencies: Array<{ code: string; name: string; symbol: string; decimals: number; multiplier: number; min: number; max: number }>;
  payerData: Record<string, { mandatory: boolean }>;
  receiverKycStatus: string;
  encryptionPubKey: string;
  senderCurrency: string;
}
