import Type, { type Static } from 'typebox';
import { ResourceId } from '../../platform/http/schemas.js';
import { QuoteRequest } from '../quotes/index.js';
import { PaymentRailSchema } from '../rates/index.js';

// Upstream's request shapes (UPSTREAM-FACTS §5.5), unchanged: the deprecated endpoints must keep working for clients built against them.
// No whole-body examples: the OpenAPI replay test would send them, and their accounts exist nowhere.

const internalAccount = (description: string) =>
  Type.Object({ accountId: ResourceId('InternalAccount', { description }) }, { additionalProperties: false, title: 'InternalAccountReference' });

const Amount = Type.Integer({
  minimum: 1,
  maximum: 9_000_000_000_000_000,
  format: 'int64',
  description:
    'Minor units of the accounts’ currency: what the source pays, fees included (a quote’s `lockedCurrencySide: SENDING`). ' +
    'Optional in upstream’s shape, which says nothing of its absence: Corridor requires it (400 INVALID_INPUT without it).',
  examples: [12550],
});

export const TransferInRequest = Type.Object(
  {
    source: Type.Object(
      {
        accountId: ResourceId('ExternalAccount', {
          description: 'A first-party external bank account money can be pulled from (ACH debit for USD, SEPA Direct Debit for EUR).',
        }),
      },
      { additionalProperties: false, title: 'ExternalAccountReference' },
    ),
    destination: internalAccount('The internal account credited; its owner is the customer the transfer is for.'),
    amount: Type.Optional(Amount),
  },
  { additionalProperties: false, title: 'TransferInRequest' },
);
export type TransferInRequest = Static<typeof TransferInRequest>;

export const TransferOutRequest = Type.Object(
  {
    source: internalAccount('The internal account debited.'),
    destination: Type.Object(
      {
        accountId: ResourceId('ExternalAccount', { description: 'The external account paid.' }),
        paymentRail: Type.Optional(PaymentRailSchema),
      },
      { additionalProperties: false, title: 'ExternalAccountDestinationReference' },
    ),
    amount: Type.Optional(Amount),
    remittanceInformation: QuoteRequest.properties.remittanceInformation,
    purposeOfPayment: QuoteRequest.properties.purposeOfPayment,
  },
  { additionalProperties: false, title: 'TransferOutRequest' },
);
export type TransferOutRequest = Static<typeof TransferOutRequest>;
