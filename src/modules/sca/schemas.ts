import Type, { type TSchema } from 'typebox';
import { IdParam, Nullable, PathParam, ResourceId, StringEnum, TaggedUnion } from '../../platform/http/schemas.js';

// The upstream's request bodies of the contact-verification and SCA operations, field for field
// (reference/upstream-openapi.yaml, the component named in each `title`): an upstream SDK's
// request is taken as it is sent, then answered 409 (README.md). Unknown fields are refused, as
// everywhere; lengths bound what is never stored.

const SCA_FACTORS = ['SMS_OTP', 'TOTP', 'PASSKEY'] as const;
const SECURITY_EVENT_TYPES = ['RESET_PASSWORD_COMPLETED', 'FAILED_LOGIN_ATTEMPT'] as const;

const ScaFactor = (description: string) => StringEnum(SCA_FACTORS, { description });
const Code = (description: string) => Type.String({ maxLength: 64, description, examples: ['123456'] });
const Origin = (description: string) => Type.String({ maxLength: 2048, description, examples: ['https://app.example.com'] });
/** An opaque WebAuthn object (assertion, credential), relayed by the upstream and never read here. */
const WebAuthnObject = (description: string) => Type.Object({}, { additionalProperties: true, description });
const ChallengeId = (description: string) => Nullable(Type.String({ maxLength: 255 }), { description });

/** Upstream's `anyOf`: a one-time code, or a passkey assertion with its origin. */
const CODE_OR_PASSKEY = [{ required: ['code'] }, { required: ['passkeyAssertion', 'origin'] }];

/** The proof of ScaAuthorization, repeated by the login-complete and trust-confirm bodies. */
const proofFields = {
  code: Type.Optional(Nullable(Code('The one-time code from SMS or the authenticator app (SMS_OTP / TOTP).'))),
  passkeyAssertion: Type.Optional(Nullable(WebAuthnObject('The WebAuthn assertion produced by the device (PASSKEY).'))),
  origin: Type.Optional(Nullable(Origin('The WebAuthn origin the passkeyAssertion was produced against; required alongside it.'))),
};

const EndUserIpAddress = (description: string) => Type.String({ maxLength: 64, description, examples: ['203.0.113.42'] });

/** `?customerId=` of every /sca operation: required, as upstream declares it. */
export const ScaCustomerQuery = Type.Object(
  { customerId: ResourceId('Customer', { description: 'The customer the SCA operation is for.' }) },
  { additionalProperties: false },
);

export const CustomerParams = Type.Object({ customerId: IdParam('Customer', 'USER_NOT_FOUND') }, { additionalProperties: false });
export const ExternalAccountParams = Type.Object({ externalAccountId: IdParam('ExternalAccount', 'REFERENCE_NOT_FOUND', 'external account') }, { additionalProperties: false });
export const QuoteParams = Type.Object({ quoteId: IdParam('Quote', 'QUOTE_NOT_FOUND') }, { additionalProperties: false });
export const FactorParams = Type.Object(
  { credentialId: PathParam(Type.String({ minLength: 1, maxLength: 1024, description: 'The enrolled factor’s credential id.' }), 'REFERENCE_NOT_FOUND', 'SCA factor') },
  { additionalProperties: false },
);
export const ResetParams = Type.Object(
  { resetId: PathParam(Type.String({ minLength: 1, maxLength: 255, description: 'The reset handle of the start call.' }), 'REFERENCE_NOT_FOUND', '2FA reset') },
  { additionalProperties: false },
);

export const ContactVerificationConfirmRequest = Type.Object(
  { code: Code('The one-time code the customer received by e-mail or SMS.') },
  { additionalProperties: false, title: 'ContactVerificationConfirmRequest', examples: [{ code: '123456' }] },
);

const closed = (title: string, properties: Record<string, TSchema>, options: Record<string, unknown> = {}) =>
  Type.Object(properties, { additionalProperties: false, title, ...options });

export const ScaFactorEnrollRequest = TaggedUnion(
  'type',
  [
    closed('TotpFactorEnrollRequest', { type: StringEnum(['TOTP'] as const) }),
    closed('PasskeyFactorEnrollRequest', { type: StringEnum(['PASSKEY'] as const) }),
  ],
  { title: 'ScaFactorEnrollRequestOneOf', description: 'The factor to enrol: TOTP or PASSKEY (SMS_OTP is not enrolled).', examples: [{ type: 'TOTP' }] },
);

export const ScaFactorConfirmRequest = TaggedUnion(
  'type',
  [
    closed('TotpEnrollmentConfirmRequest', {
      type: StringEnum(['TOTP'] as const),
      secret: Type.String({ maxLength: 1024, description: 'The shared secret of the enrolment start.' }),
      code: Code('The first code of the authenticator app.'),
    }),
    closed('PasskeyEnrollmentConfirmRequest', {
      type: StringEnum(['PASSKEY'] as const),
      origin: Origin('The WebAuthn origin the credential was produced against.'),
      credential: WebAuthnObject('The WebAuthn credential the device produced.'),
    }),
  ],
  { title: 'ScaFactorConfirmRequestOneOf', examples: [{ type: 'TOTP', secret: 'JBSWY3DPEHPK3PXP', code: '123456' }] },
);

export const ScaLoginStartRequest = closed('ScaLoginStartRequest', { factor: ScaFactor('The factor to log in with.') }, { examples: [{ factor: 'SMS_OTP' }] });

export const ScaLoginCompleteRequest = Type.Object(
  {
    factor: ScaFactor('The factor of the started login.'),
    endUserIpAddress: EndUserIpAddress('The IP address of the end user’s device.'),
    challengeId: Type.Optional(ChallengeId('The challenge handle of the login start (SMS_OTP).')),
    ...proofFields,
  },
  {
    additionalProperties: false,
    anyOf: CODE_OR_PASSKEY,
    title: 'ScaLoginCompleteRequest',
    examples: [{ factor: 'SMS_OTP', endUserIpAddress: '203.0.113.42', challengeId: 'ScaChallenge:019542f5-b3e7-1d02-0000-000000000007', code: '123456' }],
  },
);

export const RecordSecurityEventRequest = closed(
  'RecordSecurityEventRequest',
  { eventType: StringEnum(SECURITY_EVENT_TYPES, { description: 'The security event.' }) },
  { examples: [{ eventType: 'FAILED_LOGIN_ATTEMPT' }] },
);

export const TwoFactorResetStartRequest = closed('TwoFactorResetStartRequest', { factor: ScaFactor('The enrolled factor to reset.') }, { examples: [{ factor: 'TOTP' }] });

export const TwoFactorResetCompleteRequest = closed('TwoFactorResetCompleteRequest', {
  mobile: Type.Optional(
    Type.Object(
      {
        countryCode: Type.String({ maxLength: 8, description: 'The dialing code with its leading +.', examples: ['+1'] }),
        number: Type.String({ maxLength: 32, description: 'The national subscriber number.', examples: ['4155550123'] }),
      },
      { additionalProperties: false, description: 'For an SMS_OTP reset: the new mobile number.' },
    ),
  ),
});

export const BeneficiaryTrustConfirmRequest = Type.Object(
  {
    challengeId: Type.Optional(ChallengeId('The challenge handle of the trust start’s scaChallenge, when one was issued.')),
    ...proofFields,
  },
  { additionalProperties: false, anyOf: CODE_OR_PASSKEY, title: 'BeneficiaryTrustConfirmRequest', examples: [{ code: '123456' }] },
);

export const ScaAuthorization = Type.Object(
  {
    ...proofFields,
    endUserIpAddress: Type.Optional(Nullable(EndUserIpAddress('The IP address of the end user’s device.'))),
  },
  { additionalProperties: false, title: 'ScaAuthorization', examples: [{ code: '123456' }] },
);
