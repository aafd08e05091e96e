import Type, { type Static } from 'typebox';
import { CurrencyCode, DateTime, IdParam, MinorAmount, ResourceId } from '../../platform/http/schemas.js';
import { MAX_ADVANCE_SECONDS } from '../../platform/platform-clock.js';

export const ClockAdvanceRequest = Type.Object(
  { seconds: Type.Integer({ minimum: 1, maximum: MAX_ADVANCE_SECONDS, description: 'How far to move the platform’s time forward (at most a year per call).' }) },
  { additionalProperties: false },
);

export const SandboxClock = Type.Object(
  {
    now: DateTime({ description: 'The platform’s current time: what quote expiry, settlement and every other time rule of this platform read.' }),
    offsetSeconds: Type.Integer({ minimum: 0, description: 'How far the platform’s time is ahead of the real clock.' }),
  },
  { title: 'SandboxClock' },
);

export const SandboxUmaReceiveRequest = Type.Object(
  {
    senderUmaAddress: Type.String({ minLength: 3, maxLength: 255, description: 'The UMA address of the simulated sender at an outside VASP.', examples: ['$success.usd@sandbox.uma.example'] }),
    receiverUmaAddress: Type.Optional(Type.String({ minLength: 3, maxLength: 255, description: 'The receiving customer’s UMA address (or give customerId).' })),
    customerId: Type.Optional(ResourceId('Customer', { description: 'The receiving customer (or give receiverUmaAddress).' })),
    receivingCurrencyCode: CurrencyCode({ description: 'The currency the customer receives.' }),
    receivingCurrencyAmount: MinorAmount({ minimum: 1, description: 'What the customer receives, in minor units of receivingCurrencyCode.' }),
  },
  { additionalProperties: false, title: 'SandboxUmaReceiveRequest' },
);
export type SandboxUmaReceiveRequest = Static<typeof SandboxUmaReceiveRequest>;

export const SandboxRefundParams = Type.Object({ transactionId: IdParam('Transaction', 'TRANSACTION_NOT_FOUND') });

const SenderText = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 256, description }));

export const SandboxDepositRequest = Type.Object(
  {
    reference: Type.String({
      minLength: 1,
      // A Lightning invoice with its description and signature runs to about 325 characters.
      maxLength: 2048,
      description: 'The `reference` of an internal account’s bank funding instructions, or the `address` (or Lightning `invoice`) of its crypto instructions.',
      examples: ['CDR7K2M9Q4T8V1XZ'],
    }),
    amount: MinorAmount({ minimum: 1, maximum: 100_000_000_000, description: 'What arrives, in minor units of the account’s currency.' }),
    currency: Type.Optional(CurrencyCode({ description: 'The currency sent; default the account’s. Another currency than the account’s is 400 INVALID_CURRENCY.' })),
    depositId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$', description: 'The rail’s id of the deposit: the same id again answers the first transaction and credits nothing more. Default: a new one.' }),
    ),
    rail: Type.Optional(
      Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Z][A-Z0-9_]*$', description: 'The rail it arrives on: one of the instructions’ `paymentRails`, or the network of a deposit address (SOLANA, BITCOIN, LIGHTNING, …). Default: the first.' }),
    ),
    sender: Type.Optional(
      Type.Object(
        {
          accountHolderName: SenderText('Who sent it.'),
          accountIdentifier: SenderText('The sending account (number, IBAN, address).'),
          bankName: SenderText('The sending bank.'),
          bankIdentifier: SenderText('The sending bank’s identifier (routing number, BIC).'),
          endToEndId: SenderText('The payment’s end-to-end id.'),
          traceNumber: SenderText('The payment’s trace number.'),
          remittanceInformation: SenderText('The remittance information it carried.'),
          transactionHash: SenderText('Crypto deposits: the on-chain transaction.'),
        },
        { additionalProperties: false, description: 'The sending bank or wallet, as far as the rail tells; shown in the transaction’s `source`.' },
      ),
    ),
  },
  { additionalProperties: false, title: 'SandboxDepositRequest' },
);
export type SandboxDepositRequest = Static<typeof SandboxDepositRequest>;
