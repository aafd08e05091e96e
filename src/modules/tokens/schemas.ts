import Type, { type Static } from 'typebox';
import { PERMISSIONS } from '../../platform/http/auth.js';
import { DateTime, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum, TimeRangeQuery } from '../../platform/http/schemas.js';

const Permission = StringEnum(PERMISSIONS, {
  description: 'VIEW: read everything. TRANSACT: also send payments. MANAGE: also manage configuration, tokens and customers.',
});

export const ApiToken = Type.Object(
  {
    id: ResourceId('Token'),
    name: Type.String(),
    permissions: Type.Array(Permission),
    clientId: Type.String({ description: 'User name for HTTP Basic authentication.', examples: ['019542f5b3e71d020000000000000001'] }),
    clientSecret: Type.Optional(
      Type.String({ description: 'Password for HTTP Basic authentication. Returned once, at creation; Corridor keeps only a hash.' }),
    ),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: 'ApiToken' },
);

export const ApiTokenCreateRequest = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 255,
      // Free text's rule elsewhere (customers, external accounts): not blank, no control characters.
      pattern: '^(?!\\s*$)[^\\u0000-\\u001f\\u007f-\\u009f]*$',
      description: 'Label to recognise the token by: not blank, no control characters.',
    }),
    permissions: Type.Array(Permission, { minItems: 1, maxItems: 3, uniqueItems: true }),
  },
  { additionalProperties: false, title: 'ApiTokenCreateRequest', examples: [{ name: 'Reporting', permissions: ['VIEW'] }] },
);

export const TokenListQuery = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Exact token name.' })),
    ...TimeRangeQuery,
    ...PaginationQuery,
  },
  { additionalProperties: false },
);

export const TokenParams = Type.Object({ tokenId: IdParam('Token', 'TOKEN_NOT_FOUND') }, { additionalProperties: false });

export const TokenListResponse = ListResponse(ApiToken, 'TokenListResponse');

export type ApiToken = Static<typeof ApiToken>;
export type ApiTokenCreateRequest = Static<typeof ApiTokenCreateRequest>;
export type TokenListQuery = Static<typeof TokenListQuery>;
