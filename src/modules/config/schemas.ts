import Type, { type Static } from 'typebox';
import { CurrencyCode, DateTime, MinorAmount, Nullable, ResourceId, StringEnum } from '../../platform/http/schemas.js';

export const CUSTOMER_INFO_FIELDS = [
  'FULL_NAME', 'BIRTH_DATE', 'NATIONALITY', 'PHONE_NUMBER', 'EMAIL', 'POSTAL_ADDRESS', 'TAX_ID',
  'REGISTRATION_NUMBER', 'USER_TYPE', 'COUNTRY_OF_RESIDENCE', 'ACCOUNT_IDENTIFIER', 'FI_LEGAL_ENTITY_NAME',
  'FI_ADDRESS', 'PURPOSE_OF_PAYMENT', 'ULTIMATE_INSTITUTION_COUNTRY', 'IDENTIFIER', 'BUSINESS_TYPE',
  'COMPANY_LEGAL_NAME', 'ID_TYPE', 'ID_NUMBER',
] as const;

const Email = Type.String({ format: 'email', maxLength: 255 });

export const PlatformCurrencyConfig = Type.Object(
  {
    currencyCode: CurrencyCode(),
    minAmount: MinorAmount({ description: 'Smallest amount per transaction, in minor units.' }),
    maxAmount: MinorAmount({ description: 'Largest amount per transaction, in minor units.' }),
    requiredCounterpartyFields: Type.Array(
      Type.Object({ name: StringEnum(CUSTOMER_INFO_FIELDS), mandatory: Type.Boolean() }, { additionalProperties: false }),
      { maxItems: CUSTOMER_INFO_FIELDS.length },
    ),
    enabledTransactionTypes: Type.Array(StringEnum(['INCOMING', 'OUTGOING']), { uniqueItems: true, maxItems: 2 }),
  },
  { additionalProperties: false },
);

/** What the provider requires for a currency: read-only, decided by Corridor (ignored when sent). */
const providerRequired = Type.Array(StringEnum(CUSTOMER_INFO_FIELDS), { readOnly: true, maxItems: 100, description: 'Read-only; ignored in PATCH /config.' });
const providerRequiredFields = { providerRequiredCustomerFields: providerRequired, providerRequiredCounterpartyCustomerFields: providerRequired };

const CurrencyConfigResponse = Type.Object({ ...PlatformCurrencyConfig.properties, ...providerRequiredFields });

/**
 * A currency of PATCH /config. The read-only fields are taken and ignored: the upstream's SDKs
 * type the update with the response's currency object, so a config read, changed and sent back
 * carries them. As upstream, only the code and the limits are required.
 */
const CurrencyConfigUpdate = Type.Object(
  {
    ...PlatformCurrencyConfig.properties,
    requiredCounterpartyFields: Type.Optional({
      ...PlatformCurrencyConfig.properties.requiredCounterpartyFields,
      description: 'Omitted: what the currency had, or none for a currency new to the list.',
    }),
    enabledTransactionTypes: Type.Optional({
      ...PlatformCurrencyConfig.properties.enabledTransactionTypes,
      description: 'Omitted: what the currency had, or both for a currency new to the list.',
    }),
    providerRequiredCustomerFields: Type.Optional(providerRequired),
    providerRequiredCounterpartyCustomerFields: Type.Optional(providerRequired),
  },
  { additionalProperties: false },
);

export const EmbeddedWalletConfig = Type.Object(
  {
    appName: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    otpLength: Type.Optional(Type.Integer({ minimum: 4, maximum: 12, description: 'OTP length; default 6.' })),
    alphanumeric: Type.Optional(Type.Boolean({ description: 'Letters as well as digits; default false.' })),
    expirationSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'OTP validity; default 300.' })),
    sendFromEmailAddress: Type.Optional(Email),
    sendFromEmailSenderName: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    replyToEmailAddress: Type.Optional(Email),
    logoUrl: Type.Optional(Type.String({ format: 'uri', pattern: '^https://', maxLength: 512 })),
    oidcIssuers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            issuer: Type.String({
              minLength: 1,
              maxLength: 255,
              description:
                'The `iss` claim. Known without setup: `https://accounts.google.com` (also the bare `accounts.google.com` form) and `https://appleid.apple.com`.',
              examples: ['https://accounts.google.com'],
            }),
            jwksUri: Type.Optional(
              Type.String({
                format: 'uri',
                maxLength: 2048,
                description:
                  'https URL of the issuer’s JWKS (sandbox: http also for localhost). Required for an issuer Corridor does not know; refused for Google and Apple, whose keys always come from their own published JWKS. Production: fetched only from a public address (a loopback, private, link-local or metadata address is 400 when set). An OAUTH credential keeps the JWKS in force when it was registered.',
              }),
            ),
            audiences: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
                minItems: 1,
                maxItems: 20,
                description:
                  'The platform’s client ids at this issuer: a token’s `aud` must be one of them. Required for Google and Apple (their tokens are issued to every app); optional otherwise.',
                examples: [['1234567890-abc.apps.googleusercontent.com']],
              }),
            ),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: 20,
          description:
            'Corridor extension: the OIDC issuers whose tokens OAUTH credentials accept. Replaces the whole list. For Google or Apple name the issuer and your client ids only: `[{"issuer": "https://accounts.google.com", "audiences": ["<client id>"]}]`.',
        },
      ),
    ),
    passkeyRpId: Type.Optional(
      Type.String({ format: 'hostname', maxLength: 253, description: 'Corridor extension: the WebAuthn relying-party id passkeys are bound to.', examples: ['wallet.example.com'] }),
    ),
    passkeyOrigins: Type.Optional(
      Type.Array(Type.String({ format: 'uri', maxLength: 255 }), {
        minItems: 1,
        maxItems: 20,
        description: 'Corridor extension: the origins passkey ceremonies may come from (https, or http for localhost).',
        examples: [['https://wallet.example.com']],
      }),
    ),
  },
  { additionalProperties: false },
);

export const CardTokenization2faConfig = Type.Object(
  {
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    logoUrl: Type.Optional(Type.String({ format: 'uri', pattern: '^https://', maxLength: 512 })),
    email: Type.Optional(
      Type.Object(
        {
          fromAddress: Type.Optional(Email),
          fromName: Type.Optional(Type.String({ maxLength: 255 })),
          replyToAddress: Type.Optional(Email),
          subject: Type.Optional(Type.String({ maxLength: 255 })),
          bodyText: Type.Optional(Type.String({ maxLength: 2000 })),
        },
        { additionalProperties: false },
      ),
    ),
    sms: Type.Optional(
      Type.Object(
        { templateSid: Type.Optional(Type.String({ maxLength: 64 })), bodyText: Type.Optional(Type.String({ maxLength: 480 })) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const FixedFee = Type.Object(
  { amount: MinorAmount({ description: 'Fixed fee in minor units of `currency`; at most the currency\'s `maxAmount` in `supportedCurrencies`.' }), currency: CurrencyCode() },
  { additionalProperties: false },
);

/** A standing platform fee: a rate, a fixed amount, or both (spec §4.6 PATCH /config). */
export const FeeConfigInput = Type.Object(
  {
    feeType: StringEnum(['CROSS_CURRENCY_TRANSACTION']),
    sourceCurrency: CurrencyCode(),
    variableFeeBps: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, description: 'Rate in basis points.' })),
    fixedFee: Type.Optional(FixedFee),
  },
  { additionalProperties: false },
);

const FeeConfig = Type.Object({
  feeType: StringEnum(['CROSS_CURRENCY_TRANSACTION']),
  sourceCurrency: Type.String(),
  variableFeeBps: Type.Integer(),
  fixedFee: Type.Object({ amount: Type.Integer({ format: 'int64' }), currency: Type.String() }),
});

export const PlatformConfigUpdate = Type.Object(
  {
    umaDomain: Type.Optional(
      Nullable(
        Type.String({
          // A host name with an optional port: UMA addresses of a VASP on a non-default port
          // (`$bob@localhost:8080`, as UMA's own test VASPs run) carry it in their domain.
          pattern: '^(?=[^:]{1,253}(:|$))[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::[0-9]{1,5})?$',
          minLength: 1,
          maxLength: 259,
          examples: ['pay.example.com'],
        }),
        {
          description:
            'The domain of the platform\'s customers\' UMA addresses (`$user@<umaDomain>`), where Corridor answers UMA requests for them; a port may follow (`localhost:8080`). `null` clears it. ' +
            'A production platform\'s domain is its own: any other platform setting it (in any case) gets 409 CONFLICT. Sandbox platforms may share a domain no production platform holds. ' +
            'A production platform\'s domain must be public: localhost, a .local or .internal name or a private address is 400.',
        },
      ),
    ),
    webhookEndpoint: Type.Optional(
      Nullable(Type.String({ format: 'uri', maxLength: 2048 }), {
        description:
          'Where webhooks go: https (http is allowed for sandbox platforms). `null` clears it: no more webhooks are sent. ' +
          'A production endpoint may not be a loopback, private, link-local or metadata address (400); a host name resolving to one is refused at each delivery.',
      }),
    ),
    supportedCurrencies: Type.Optional(
      Type.Array(CurrencyConfigUpdate, {
        minItems: 1,
        maxItems: 50,
        description: 'Replaces the whole list. Approved customers get an account in each added currency: INTERNAL_FIAT, or INTERNAL_CRYPTO for a crypto currency. ' +
          'A currency removed (or its OUTGOING) keeps its accounts, balances and incoming deposits, but no new quote sends from it (400 INVALID_CURRENCY) until it is back: pay balances out first.',
      }),
    ),
    embeddedWalletConfig: Type.Optional(
      Nullable(EmbeddedWalletConfig, {
        description:
          'Merges field by field. Setting it enables embedded wallets: approved customers with an e-mail get one. `null` disables them for customers approved later; existing wallets stay.',
      }),
    ),
    cardTokenization2faConfig: Type.Optional(CardTokenization2faConfig),
    feeConfigs: Type.Optional(Type.Array(FeeConfigInput, { maxItems: 20 })),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    title: 'PlatformConfigUpdateRequest',
    examples: [{ webhookEndpoint: 'https://example.com/webhooks', feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 50 }] }],
  },
);

export const PlatformConfig = Type.Object(
  {
    id: ResourceId('PlatformConfig'),
    umaDomain: Type.Optional(Type.String()),
    proxyUmaSubdomain: Type.Optional(Type.String()),
    webhookEndpoint: Type.Optional(Type.String()),
    supportedCurrencies: Type.Array(CurrencyConfigResponse),
    isRegulatedFinancialInstitution: Type.Boolean({
      description: 'Whether the platform is a regulated financial institution, which may run its own KYC/KYB on production (customers settings `platformKyc`). Set by the operator when creating the platform (`corridor platforms create --regulated`); read-only here.',
    }),
    embeddedWalletConfig: Type.Optional(EmbeddedWalletConfig),
    cardTokenization2faConfig: Type.Optional(CardTokenization2faConfig),
    feeConfigs: Type.Array(FeeConfig),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: 'PlatformConfig' },
);

export type PlatformConfigUpdate = Static<typeof PlatformConfigUpdate>;
export type PlatformConfig = Static<typeof PlatformConfig>;
export type PlatformCurrencyConfig = Static<typeof PlatformCurrencyConfig>;
export type EmbeddedWalletConfig = Static<typeof EmbeddedWalletConfig>;
export type CardTokenization2faConfig = Static<typeof CardTokenization2faConfig>;
export type FeeConfig = Static<typeof FeeConfig>;
