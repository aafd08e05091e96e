import Type, { type Static } from 'typebox';
import { CurrencyCode, ListResponse, PaginationQuery, StringEnum } from '../../platform/http/schemas.js';

const Country = (options: Record<string, unknown> = {}) =>
  Type.String({ format: 'iso3166-1-alpha-2', maxLength: 2, examples: ['PH'], description: 'ISO 3166-1 alpha-2 country code.', ...options });
const Name = (max: number) => Type.String({ minLength: 1, maxLength: max });

/** The longest name of a VASP or UMA provider a directory file holds, in characters (code points). */
export const MAX_NAME_LENGTH = 200;

/**
 * Directory lists page by name: their cursor carries the lower-cased name (service.ts), and runs
 * longer than the 256 characters of other lists' cursors, which carry a uuid. Its JSON, `{"k":…}`,
 * takes at most 6 bytes a character (a control character's `\u` escape), base64url-encoded.
 */
const DirectoryPaginationQuery = {
  ...PaginationQuery,
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: Math.ceil((8 + 6 * MAX_NAME_LENGTH) / 3) * 4, description: 'Opaque cursor from a previous page.' }),
  ),
};
const HttpsUrl = Type.String({ format: 'uri', pattern: '^https://', maxLength: 512 });
const Domain = Type.String({ format: 'hostname', minLength: 1, maxLength: 253 });

// ---- API shapes (upstream's) -------------------------------------------------------------

export const Vasp = Type.Object(
  {
    vaspName: Type.String({ description: 'Pass this value as `vaspName` when declaring a VASP-hosted counterparty.', examples: ['Kraken'] }),
    url: Type.Optional(Type.String({ format: 'uri', description: "The VASP's website, when known.", examples: ['https://www.kraken.com'] })),
  },
  { title: 'Vasp', description: 'A Virtual Asset Service Provider (an exchange or other custodial platform) recognised for counterparty declarations.' },
);

export const VaspListQuery = Type.Object({ ...DirectoryPaginationQuery }, { additionalProperties: false });

export const VaspListResponse = Type.Object(
  {
    data: Type.Array(Vasp),
    hasMore: Type.Boolean({ description: 'Whether another page follows.' }),
    nextCursor: Type.Optional(Type.String({ description: 'Pass as `cursor` for the next page; present only when hasMore.' })),
  },
  { title: 'VaspListResponse' },
);

const CurrencyView = Type.Object(
  {
    code: Type.String({ examples: ['USD'] }),
    name: Type.String({ examples: ['US Dollar'] }),
    symbol: Type.String({ examples: ['$'] }),
    decimals: Type.Integer({ minimum: 0, examples: [2] }),
  },
  { title: 'Currency' },
);

export const UmaProvider = Type.Object(
  {
    name: Type.String({ examples: ['Lightspark Group'] }),
    supportedRegions: Type.Array(Type.String(), { description: 'Countries (ISO 3166-1 alpha-2) the provider operates in.', examples: [['US']] }),
    domain: Type.String({ description: 'The domain of its UMA addresses.', examples: ['uma.me'] }),
    logoUrl: Type.Optional(Type.String({ format: 'uri' })),
    supportedCurrencies: Type.Array(CurrencyView),
    lei: Type.Optional(Type.String({ description: 'Legal Entity Identifier, when known.' })),
    allowListStatus: Type.Boolean({
      description: 'Whether the provider is on your allow list. Corridor keeps no per-platform allow list yet, so every provider is allowed (true).',
    }),
  },
  { title: 'UmaProvider' },
);

export const UmaProviderListQuery = Type.Object(
  {
    countryCode: Type.Optional(Country({ description: 'Only providers operating in this country.' })),
    currencyCode: Type.Optional(CurrencyCode({ description: 'Only providers supporting this currency.' })),
    hasBlockedProviders: Type.Optional(
      Type.Boolean({ description: 'Whether to include providers not on your allow list (default true). No provider is blocked today.' }),
    ),
    sortOrder: Type.Optional(StringEnum(['asc', 'desc'] as const, { default: 'desc', description: 'Order by name; default desc, as upstream.' })),
    ...DirectoryPaginationQuery,
  },
  { additionalProperties: false },
);

export const UmaProviderListResponse = ListResponse(UmaProvider, 'UmaProviderListResponse');

export const Discovery = Type.Object(
  {
    bankName: Type.String({ description: 'Canonical name; pass it as `bankName` when creating an external account.', examples: ['BDO Unibank'] }),
    displayName: Type.String({ examples: ['BDO Unibank'] }),
    country: Type.String({ description: 'ISO 3166-1 alpha-2 country code.', examples: ['PH'] }),
    currency: Type.String({ description: 'Currency code.', examples: ['PHP'] }),
  },
  { title: 'Discovery' },
);

export const DiscoveryQuery = Type.Object(
  {
    country: Type.Optional(Country()),
    currency: Type.Optional(CurrencyCode()),
  },
  { additionalProperties: false },
);

export const DiscoveryListResponse = Type.Object({ data: Type.Array(Discovery) }, { title: 'DiscoveryListResponse' });

// ---- The directory file (reference-data/directories.json; docs/directories.md) -----------------------

/** Bounds of a directory file: what a load reads at most. */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
export const MAX_ENTRIES = 20_000;

export const DirectoryFile = Type.Object(
  {
    format: Type.Literal('corridor-directories/1'),
    version: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Raised by every edit; a load only ever raises it.' }),
    publishedOn: Type.String({ format: 'date', maxLength: 10 }),
    sources: Type.Object(
      {
        vasps: Type.Array(Name(500), { minItems: 1, maxItems: 100 }),
        umaProviders: Type.Array(Name(500), { minItems: 1, maxItems: 100 }),
        discoveries: Type.Array(Name(500), { minItems: 1, maxItems: 100 }),
      },
      { additionalProperties: false },
    ),
    vasps: Type.Array(Type.Object({ vaspName: Name(MAX_NAME_LENGTH), url: Type.Optional(HttpsUrl) }, { additionalProperties: false }), { maxItems: MAX_ENTRIES }),
    umaProviders: Type.Array(
      Type.Object(
        {
          name: Name(MAX_NAME_LENGTH),
          domain: Domain,
          supportedRegions: Type.Array(Country(), { minItems: 1, maxItems: 250, uniqueItems: true }),
          supportedCurrencies: Type.Array(CurrencyCode(), { minItems: 1, maxItems: 200, uniqueItems: true }),
          logoUrl: Type.Optional(HttpsUrl),
          lei: Type.Optional(Type.String({ pattern: '^[0-9A-Z]{18}[0-9]{2}$' })),
        },
        { additionalProperties: false },
      ),
      { maxItems: MAX_ENTRIES },
    ),
    discoveries: Type.Array(
      Type.Object({ bankName: Name(200), displayName: Name(200), country: Country(), currency: CurrencyCode() }, { additionalProperties: false }),
      { maxItems: MAX_ENTRIES },
    ),
  },
  { additionalProperties: false },
);

export type Vasp = Static<typeof Vasp>;
export type UmaProvider = Static<typeof UmaProvider>;
export type Discovery = Static<typeof Discovery>;
export type VaspListQuery = Static<typeof VaspListQuery>;
export type UmaProviderListQuery = Static<typeof UmaProviderListQuery>;
export type DiscoveryQuery = Static<typeof DiscoveryQuery>;
export type DirectoryFile = Static<typeof DirectoryFile>;
