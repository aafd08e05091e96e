import Type, { type Static } from 'typebox';
import { DateTime, IdParam, ResourceId, StringEnum, TaggedUnion } from '../../platform/http/schemas.js';

export const CREDENTIAL_TYPES = ['EMAIL_OTP', 'SMS_OTP', 'PASSKEY', 'OAUTH'] as const;
const CredentialType = StringEnum(CREDENTIAL_TYPES, { title: 'AuthMethodType' });

/** SEC1 P-256 public key in hex: compressed (66) or uncompressed (130). */
export const ClientPublicKey = Type.String({
  pattern: '^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$',
  minLength: 66,
  maxLength: 130,
  description: 'P-256 public key, SEC1 hex: compressed (`02`/`03` + 64 hex) or uncompressed (`04` + 128 hex).',
});
export const UncompressedPublicKey = Type.String({
  pattern: '^04[0-9a-fA-F]{128}$',
  minLength: 130,
  maxLength: 130,
  description: 'Uncompressed P-256 public key, SEC1 hex (`04` + 128 hex). Use a fresh key pair per export.',
});

const authMethodFields = {
  accountId: ResourceId('InternalAccount'),
  type: CredentialType,
  credentialId: Type.Optional(Type.String({ description: 'PASSKEY only: the WebAuthn credential id, base64url.' })),
  nickname: Type.String({ description: 'EMAIL_OTP: the e-mail address; SMS_OTP: the phone number; OAUTH: the e-mail claim; PASSKEY: the name given at registration.' }),
  createdAt: DateTime(),
  updatedAt: DateTime(),
};

export const AuthMethod = Type.Object({ id: ResourceId('AuthMethod'), ...authMethodFields }, { title: 'AuthMethod' });
export type AuthMethod = Static<typeof AuthMethod>;

export const AuthMethodResponse = Type.Object(
  {
    ...AuthMethod.properties,
    otpEncryptionTargetBundle: Type.Optional(
      Type.String({ description: 'EMAIL_OTP and SMS_OTP: the enclave target the new OTP must be encrypted to (JSON string).' }),
    ),
  },
  { title: 'AuthMethodResponse' },
);
export type AuthMethodResponse = Static<typeof AuthMethodResponse>;

export const AuthSession = Type.Object(
  {
    id: ResourceId('Session'),
    ...authMethodFields,
    expiresAt: DateTime({ description: 'After this the session signs nothing.' }),
    encryptedSessionSigningKey: Type.Optional(
      Type.String({ description: 'OAUTH and PASSKEY: the session private key sealed to the client key (Base58Check HPKE bundle). Delivered once; never listed.' }),
    ),
  },
  { title: 'AuthSession' },
);
export type AuthSession = Static<typeof AuthSession>;

export const SignedRequestChallenge = Type.Object(
  {
    payloadToSign: Type.String({ description: 'Sign these exact bytes (UTF-8) with the session key; do not re-serialise.' }),
    requestId: Type.String({ pattern: '^Request:[0-9a-f-]{36}$', description: 'Send back as the `Request-Id` header. Single use.' }),
    expiresAt: DateTime({ description: 'The signed retry must arrive before this (5 minutes after issue).' }),
  },
  { title: 'SignedRequestChallenge' },
);
export type SignedRequestChallenge = Static<typeof SignedRequestChallenge>;

export const AuthSignedRequestChallenge = Type.Object(
  { ...SignedRequestChallenge.properties, type: CredentialType },
  { title: 'AuthSignedRequestChallenge', description: '`type`: the credential being added, revoked or verified, or that issued the session.' },
);

export const WalletOperationProcessing = Type.Object(
  { status: StringEnum(['PROCESSING']) },
  {
    title: 'WalletOperationProcessing',
    description: 'The wallet provider is still settling. Re-send the identical signed request (same body, signature and Request-Id) until the real outcome arrives.',
  },
);

const accountRef = { accountId: ResourceId('InternalAccount', { description: 'The EMBEDDED_WALLET internal account.' }) };
const Base64Url = (description: string, maxLength = 16_384) => Type.String({ pattern: '^[A-Za-z0-9_-]+$', minLength: 1, maxLength, description });
const OidcToken = Type.String({ minLength: 1, maxLength: 16_384, description: 'An OIDC ID token (compact JWT) from a trusted issuer.' });

export const PasskeyAttestation = Type.Object(
  {
    credentialId: Base64Url('The WebAuthn credential id (rawId), base64url.', 1024),
    clientDataJson: Base64Url('base64url of the browser’s clientDataJSON (`type: webauthn.create`).'),
    attestationObject: Base64Url('base64url of the CBOR attestation object.'),
    transports: Type.Optional(Type.Array(StringEnum(['usb', 'nfc', 'ble', 'internal', 'hybrid', 'smart-card']), { maxItems: 6, uniqueItems: true })),
  },
  { additionalProperties: false, title: 'PasskeyAttestation' },
);
export type PasskeyAttestation = Static<typeof PasskeyAttestation>;

export const PasskeyAssertion = Type.Object(
  {
    credentialId: Base64Url('The WebAuthn credential id, base64url.', 1024),
    clientDataJson: Base64Url('base64url of the browser’s clientDataJSON (`type: webauthn.get`).'),
    authenticatorData: Base64Url('base64url of the authenticator data.'),
    signature: Base64Url('base64url of the assertion signature.'),
    userHandle: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]*$', maxLength: 1024 })),
  },
  { additionalProperties: false, title: 'PasskeyAssertion' },
);
export type PasskeyAssertion = Static<typeof PasskeyAssertion>;

export const CredentialCreateRequest = TaggedUnion(
  'type',
  [
    Type.Object({ type: StringEnum(['EMAIL_OTP']), ...accountRef }, { additionalProperties: false, title: 'EmailOtpCredentialCreateRequest' }),
    Type.Object({ type: StringEnum(['SMS_OTP']), ...accountRef }, { additionalProperties: false, title: 'SmsOtpCredentialCreateRequest' }),
    Type.Object({ type: StringEnum(['OAUTH']), ...accountRef, oidcToken: OidcToken }, { additionalProperties: false, title: 'OauthCredentialCreateRequest' }),
    Type.Object(
      {
        type: StringEnum(['PASSKEY']),
        ...accountRef,
        nickname: Type.String({ minLength: 1, maxLength: 100, pattern: "^[\\p{L}\\p{N} ._'()-]+$" }),
        challenge: Base64Url('The WebAuthn registration challenge your backend issued; must equal the one in clientDataJson.', 1024),
        attestation: PasskeyAttestation,
      },
      { additionalProperties: false, title: 'PasskeyCredentialCreateRequest' },
    ),
  ],
  { title: 'AuthCredentialCreateRequest', description: 'EMAIL_OTP uses the customer e-mail, SMS_OTP the customer phone number, OAUTH the token’s identity.' },
);
export type CredentialCreateRequest = Static<typeof CredentialCreateRequest>;
export type PasskeyCredentialCreate = Extract<CredentialCreateRequest, { type: 'PASSKEY' }>;

const EncryptedOtpBundle = Type.String({
  minLength: 2,
  maxLength: 4096,
  description: 'JSON string `{"encappedPublic","ciphertext"}`: HPKE of `{"otp_code","public_key"}` to the target bundle.',
});

export const CredentialVerifyRequest = TaggedUnion(
  'type',
  [
    Type.Object({ type: StringEnum(['EMAIL_OTP']), encryptedOtpBundle: EncryptedOtpBundle }, { additionalProperties: false, title: 'EmailOtpVerifyRequest' }),
    Type.Object({ type: StringEnum(['SMS_OTP']), encryptedOtpBundle: EncryptedOtpBundle }, { additionalProperties: false, title: 'SmsOtpVerifyRequest' }),
    Type.Object({ type: StringEnum(['OAUTH']), oidcToken: OidcToken, clientPublicKey: ClientPublicKey }, { additionalProperties: false, title: 'OauthVerifyRequest' }),
    Type.Object({ type: StringEnum(['PASSKEY']), assertion: PasskeyAssertion }, { additionalProperties: false, title: 'PasskeyVerifyRequest' }),
  ],
  { title: 'AuthCredentialVerifyRequest' },
);
export type CredentialVerifyRequest = Static<typeof CredentialVerifyRequest>;
export type OtpVerifyRequest = Extract<CredentialVerifyRequest, { type: 'EMAIL_OTP' | 'SMS_OTP' }>;
export type OauthVerifyRequest = Extract<CredentialVerifyRequest, { type: 'OAUTH' }>;
export type PasskeyVerifyRequest = Extract<CredentialVerifyRequest, { type: 'PASSKEY' }>;

export const PasskeyAuthChallenge = Type.Object(
  {
    ...AuthMethod.properties,
    credentialId: Type.String({ description: 'Pass as `allowCredentials[].id` (base64url-decoded).' }),
    challenge: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Give the UTF-8 bytes of this string to navigator.credentials.get() as the challenge.' }),
    requestId: Type.String({ pattern: '^Request:[0-9a-f-]{36}$', description: 'Send as the `Request-Id` header of the verify call.' }),
    expiresAt: DateTime(),
  },
  { title: 'PasskeyAuthChallenge' },
);

export const CredentialChallengeRequest = Type.Object(
  { clientPublicKey: Type.Optional(ClientPublicKey) },
  {
    additionalProperties: false,
    title: 'AuthCredentialChallengeRequest',
    description: 'PASSKEY: `clientPublicKey` receives the session key. EMAIL_OTP and SMS_OTP: send `{}` or no body.',
  },
);

export const CredentialListQuery = Type.Object({ accountId: ResourceId('InternalAccount') }, { additionalProperties: false });
export const CredentialList = Type.Object({ data: Type.Array(AuthMethod) }, { title: 'AuthCredentialListResponse' });
export const SessionList = Type.Object({ data: Type.Array(AuthSession) }, { title: 'SessionListResponse' });

export const CredentialParams = Type.Object({ id: IdParam('AuthMethod', 'REFERENCE_NOT_FOUND', 'credential') });
export const SessionParams = Type.Object({ id: IdParam('Session', 'REFERENCE_NOT_FOUND') });

export const SessionRefreshRequest = Type.Object(
  { clientPublicKey: ClientPublicKey },
  {
    additionalProperties: false,
    title: 'SessionRefreshRequest',
    description: 'Compressed key: the client keeps the private key and signs with it. Uncompressed: a new key is sealed to it in `encryptedSessionSigningKey`.',
  },
);
export type SessionRefreshRequest = Static<typeof SessionRefreshRequest>;

export const WalletExportRequest = Type.Object({ clientPublicKey: UncompressedPublicKey }, { additionalProperties: false, title: 'WalletExportRequest' });
export type WalletExportRequest = Static<typeof WalletExportRequest>;
export const WalletExportResponse = Type.Object(
  {
    id: ResourceId('InternalAccount'),
    encryptedWalletCredentials: Type.String({
      description: 'JSON string `{version, data, dataSignature, enclaveQuorumPublic}`; `data` holds the wallet mnemonic sealed to `clientPublicKey` (organizationId = the account id).',
    }),
  },
  { title: 'WalletExportResponse' },
);

export const EnclaveInfo = Type.Object(
  {
    enclaveQuorumPublic: Type.String({ description: 'Uncompressed P-256 key (hex) that signs target bundles, export bundles and OTP verification tokens.' }),
  },
  { title: 'EnclaveInfo' },
);
