import Type from 'typebox';
import { DateTime } from '../../platform/http/schemas.js';
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
