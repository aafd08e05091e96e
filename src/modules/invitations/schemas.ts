import Type, { type Static } from 'typebox';
import type { EventGroup } from '../../platform/outbox.js';
import { DateTime, PathParam, StringEnum } from '../../platform/http/schemas.js';

/** Invitation codes: 10 characters of Crockford's base32 alphabet in lower case (50 random bits). */
export const CODE_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const CODE_PATTERN = '^[0-9a-z]{10}$';

const UmaAddressField = (description: string) =>
  Type.String({ minLength: 1, maxLength: 320, description: `${description} Malformed: 400 INVALID_UMA_ADDRESS.`, examples: ['$inviter@pay.example.com'] });

export const InvitationStatus = StringEnum(['PENDING', 'CLAIMED', 'EXPIRED', 'CANCELLED'] as const, {
  description: 'EXPIRED: PENDING past `expiresAt`; it can no longer be claimed or cancelled.',
});

const CurrencyView = Type.Object({
  code: Type.String({ examples: ['USD'] }),
  name: Type.String({ examples: ['US Dollar'] }),
  symbol: Type.String({ examples: ['$'] }),
  decimals: Type.Integer({ minimum: 0, examples: [2] }),
});

export const UmaInvitation = Type.Object(
  {
    code: Type.String({ pattern: CODE_PATTERN, description: 'The unique code of the invitation.', examples: ['7k2m9q4xhd'] }),
    createdAt: DateTime(),
    claimedAt: Type.Optional(DateTime({ description: 'When it was claimed, once claimed.' })),
    url: Type.String({ description: "Where the invitation is claimed: `https://<the inviting platform's umaDomain>/i/<code>`.", examples: ['https://pay.example.com/i/7k2m9q4xhd'] }),
    expiresAt: Type.Optional(DateTime()),
    inviterUma: Type.String({ examples: ['$inviter@pay.example.com'] }),
    inviteeUma: Type.Optional(Type.String({ examples: ['$invitee@other.example.com'] })),
    status: InvitationStatus,
    firstName: Type.Optional(Type.String({ examples: ['Jane'] })),
    amountToSend: Type.Optional(
      Type.Object(
        { amount: Type.Integer({ description: "In the smallest unit of the inviter's currency." }), currency: CurrencyView },
        { description: 'Shown to the invitee; the inviting platform sends it after INVITATION.CLAIMED (Corridor moves no money for it).' },
      ),
    ),
  },
  { title: 'UmaInvitation' },
);

export const UmaInvitationCreateRequest = Type.Object(
  {
    inviterUma: UmaAddressField('The UMA address of one of your customers, the inviter.'),
    firstName: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'First name to show with the invitation.' })),
    amountToSend: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 9_007_199_254_740_991, description: "An amount to send when claimed, in the smallest unit of the inviter's currency (display only)." }),
    ),
    expiresAt: Type.Optional(DateTime({ description: 'When the invitation expires; must be in the future. Absent: never.' })),
  },
  { additionalProperties: false, title: 'UmaInvitationCreateRequest', examples: [{ inviterUma: '$inviter@pay.example.com', firstName: 'Alice', amountToSend: 12550 }] },
);

export const UmaInvitationClaimRequest = Type.Object(
  { inviteeUma: UmaAddressField('The UMA address of the customer claiming the invitation.') },
  { additionalProperties: false, title: 'UmaInvitationClaimRequest' },
);

export const InvitationParams = Type.Object(
  { invitationCode: PathParam(Type.String({ pattern: CODE_PATTERN, description: 'The invitation code.' }), 'INVITATION_NOT_FOUND', 'invitation') },
  { additionalProperties: false },
);

export const INVITATION_CLAIMED = 'INVITATION.CLAIMED';

/** Sent to the platform that created the invitation. */
export const INVITATION_EVENTS: EventGroup = {
  name: 'invitation',
  summary: 'Invitation claimed',
  description:
    'Sent to the platform that created an invitation when someone claims it (`POST /invitations/{code}/claim`), exactly once. `data` is the ' +
    'invitation as it is now: CLAIMED, with `inviteeUma` and `claimedAt`. When it carries `amountToSend`, this is the moment to send it.',
  payload: UmaInvitation,
  types: { [INVITATION_CLAIMED]: 'An invitation of yours was claimed.' },
};

export type UmaInvitation = Static<typeof UmaInvitation>;
export type UmaInvitationCreateRequest = Static<typeof UmaInvitationCreateRequest>;
export type UmaInvitationClaimRequest = Static<typeof UmaInvitationClaimRequest>;
