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
